"""Shared test fixtures: how tests find the machine's project resources and run the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _cluster_tests_need_root(request: pytest.FixtureRequest) -> None:
    # CI runs every test as root; a cluster test that cannot get root fails rather than skips.
    if request.node.get_closest_marker("cluster") and os.geteuid() != 0:
        pytest.fail("cluster tests need root (network namespaces, iptables)")


def faultline(
    *args: str, env: dict[str, str] | None = None, timeout: float = 180, check: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run `python -m harness ARGS` as a user would."""
    proc = subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"faultline {' '.join(args)} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return proc
