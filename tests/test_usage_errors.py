"""Every command line of the project exits 3 on a usage error (2 means "unknown verdict" here), naming what is wrong."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

COMMANDS = [
    (["-m", "checkers", "history", "--out", "out", "--engine", "bogus"], "invalid choice: 'bogus'"),
    (["-m", "checkers", "history"], "the following arguments are required: --out"),
    (["-m", "harness", "show"], "the following arguments are required: run_dir"),
    (["-m", "harness", "run", "scenarios/smoke.yaml", "--engine", "bogus"], "invalid choice: 'bogus'"),
    (["-m", "faultline", "show"], "the following arguments are required: run_dir"),
    (["-m", "workloads"], "usage: python -m workloads CONFIG.json"),
    (["-m", "testbed.kafka.probe", "host"], "usage: python -m testbed.kafka.probe"),
    (["-m", "testbed.runtime.dockerd_cli", "frob"], "usage: python -m testbed.runtime.dockerd_cli"),
    (["compose/build_images.py", "--frob"], "unrecognized arguments: --frob"),
    (["bench/bench_checker.py", "--repeats", "three"], "invalid int value: 'three'"),
    (["bench/bench_cluster.py", "--frob"], "unrecognized arguments: --frob"),
    (["bench/bench_nemesis.py", "--frob"], "unrecognized arguments: --frob"),
    (["bench/bench_workload.py", "--frob"], "unrecognized arguments: --frob"),
    (["bench/bench_merge.py", "--shards", "eight"], "invalid int value: 'eight'"),
]


@pytest.mark.parametrize(("argv", "says"), COMMANDS, ids=[" ".join(a[:2]) for a, _ in COMMANDS])
def test_a_usage_error_exits_3(argv: list[str], says: str) -> None:
    proc = subprocess.run([sys.executable, *argv], cwd=REPO, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})  # this checkout's packages
    assert proc.returncode == 3, proc.stderr
    assert says in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
