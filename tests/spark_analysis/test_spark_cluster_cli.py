"""`python -m spark_analysis spark-cluster` (`make spark-cluster`): a real master and worker until SIGINT, then none."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.spark_analysis.conftest import spark_processes

pytestmark = pytest.mark.spark


def test_the_cluster_runs_until_interrupted_and_leaves_no_process(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "spark_analysis", "spark-cluster", "--dir", str(tmp_path)],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline()]
        while not lines[-1].startswith("spark master") and lines[-1] and len(lines) < 20:  # a warning may come first
            lines.append(proc.stdout.readline())
        match = re.match(r"spark master (spark://127\.0\.0\.1:\d+) .*processes \[(\d+), (\d+)\]", lines[-1])
        assert match, lines
        logs = sorted(p.name for p in tmp_path.glob("*-spark-*.log"))
        prefix = logs[0].split("-spark-")[0]
        assert logs == [f"{prefix}-spark-master.log", f"{prefix}-spark-worker.log"]
        assert len(spark_processes(prefix)) >= 2
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 0
        assert "stopped" in proc.stdout.read()
        deadline = time.monotonic() + 10
        while spark_processes(prefix) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert spark_processes(prefix) == []
    finally:
        if proc.poll() is None:  # the command stops its master and worker on SIGINT, whatever failed above
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
