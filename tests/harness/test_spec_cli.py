"""A bad spec given to `faultline run` is one line naming the key, exit status 3, before anything starts.

Run as an unprivileged user: the spec is checked before the harness asks for root, so these
need no cluster and no root, and prove that nothing (not even the root check) came first.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO

NOBODY = 65534


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A folder an unprivileged user can read (pytest's tmp_path is root's alone)."""
    path = Path(tempfile.mkdtemp(prefix="faultline-spec-"))
    path.chmod(0o755)
    yield path
    for child in path.iterdir():
        child.unlink()
    path.rmdir()


def run_as_nobody(*args: str) -> subprocess.CompletedProcess[str]:
    prefix = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"] if os.geteuid() == 0 else []
    return subprocess.run([*prefix, sys.executable, "-m", "harness", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})


def mutant(shared_dir: Path, change: dict[str, Any]) -> Path:
    raw = yaml.safe_load((REPO / "scenarios" / "inflight-reorder.yaml").read_text())
    for dotted, value in change.items():
        node = raw
        *parents, last = dotted.split("/")
        for part in parents:
            node = node[part]
        node[last] = value
    path = shared_dir / "mutant.yaml"
    path.write_text(yaml.safe_dump(raw))
    path.chmod(0o644)
    return path


@pytest.mark.parametrize(
    "change, says",
    [
        ({"cluster/partitions": "lots"}, "cluster.partitions: must be an integer in 1..64, got 'lots'"),
        ({"cluster/partitions": -5}, "cluster.partitions: must be >= 1, got -5"),
        ({"description": ["a", "list"]}, "description: must be a string, got ['a', 'list']"),
        ({"notes": ["a", "list"]}, "notes: must be a string, got ['a', 'list']"),
        (
            {"configurations/idempotent/expect/absent": ["lost", "lots"]},
            "configurations.idempotent.expect.absent[1]: unknown anomaly 'lots'",
        ),
    ],
)
def test_a_mutant_spec_is_refused_before_anything_starts(shared_dir: Path, change: dict[str, Any], says: str) -> None:
    spec = mutant(shared_dir, change)
    proc = run_as_nobody("run", str(spec), "--results", str(shared_dir / "results"))
    assert proc.returncode == 3, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"faultline: {spec}: {says}"), proc.stderr
    assert not (shared_dir / "results").exists()


def test_a_made_up_producer_property_is_refused_naming_it(shared_dir: Path) -> None:
    settings = yaml.safe_load((REPO / "scenarios" / "inflight-reorder.yaml").read_text())
    settings = {**settings["workloads"]["producers"][0]["settings"], "max.inflight.requests": 5}
    spec = mutant(shared_dir, {"workloads/producers": [{"azs": ["az1"], "settings": settings}]})
    proc = run_as_nobody("run", str(spec), "--configuration", "idempotent")
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"faultline: {spec}: configurations.idempotent: workloads.producers[0].settings.max.inflight.requests: "
        "librdkafka refuses it: "
        'No such configuration property: "max.inflight.requests"'
    ], proc.stderr
