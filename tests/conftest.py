"""Shared test fixtures: how tests find the machine's project resources and run the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _cluster_tests_need_root(request: pytest.FixtureRequest) -> None:
    # CI runs every test as root; a cluster test that cannot get root fails rather than skips.
    if request.node.get_closest_marker("cluster") and os.geteuid() != 0:
        pytest.fail("cluster tests need root (network namespaces, iptables)")


@pytest.fixture(autouse=True)
def _fuse_tests_need_fuse(request: pytest.FixtureRequest) -> None:
    # Like root for the cluster tests: a FUSE test on a machine without FUSE fails, naming what is missing.
    if request.node.get_closest_marker("fuse"):
        from testbed.runtime import unsynced

        if not unsynced.available():
            pytest.fail(f"fuse tests need root, /dev/fuse and {unsynced.BINARY} (make setup-unsyncfs): "
                        f"{missing_for_fuse()}")


def missing_for_fuse() -> str:
    """What of root, /dev/fuse and the unsyncfs binary this machine lacks."""
    from testbed.runtime import unsynced

    missing = [what for what, ok in (("root", os.geteuid() == 0), ("/dev/fuse", Path("/dev/fuse").exists()),
                                     (str(unsynced.BINARY), unsynced.BINARY.exists())) if not ok]
    return "missing " + ", ".join(missing) if missing else "nothing missing"


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


def run_passing(spec: str | Path, results: Path, *flags: str, configuration: str | None = None,
                timeout: float = 900) -> tuple[Path, dict[str, Any]]:
    """Run `spec` (its one `configuration`, or all of them) into `results`, a folder that holds nothing else, as a
    user would; assert it exited 0 (every expectation held) and return its one run folder and verdict."""
    chosen = ("--configuration", configuration) if configuration else ()
    proc = faultline("run", str(spec), *chosen, *flags, "--results", str(results), timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (verdict_file,) = list(results.rglob("verdict.json"))
    return verdict_file.parent, json.loads(verdict_file.read_text())


def run_dir_of(results: Path, name: str, configuration: str | None = None) -> Path:
    """The run folder of scenario `name` (and its `configuration`) under a results root holding one run of it."""
    (top,) = [p for p in (results / name).iterdir() if p.name != "latest"]
    return top / configuration if configuration else top


def assert_isolate_az_leader_on_kraft(proc: subprocess.CompletedProcess[str], results: Path, runtime: str) -> Path:
    """The catalogue's isolate-az-leader (acks1 and acksall) on KRaft gave the netns verdicts: both PASS, acks1
    lost and diverged, acksall neither, on `runtime` with metadata kraft. Returns acks1's run folder."""
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert [line.split()[0] for line in proc.stdout.splitlines() if "isolate-az-leader [" in line] == ["PASS"] * 2
    counts = {c: json.loads((run_dir_of(results, "isolate-az-leader", c) / "verdict.json").read_text())["counts"]
              for c in ("acks1", "acksall")}
    assert counts["acks1"]["lost"] > 0 and counts["acks1"]["divergence"] > 0, counts
    assert counts["acksall"]["lost"] == 0 and counts["acksall"]["divergence"] == 0, counts
    run_dir = run_dir_of(results, "isolate-az-leader", "acks1")
    state = json.loads((run_dir / "state.json").read_text())
    assert state["runtime"] == runtime and state["settings"]["metadata"] == "kraft"
    return run_dir
