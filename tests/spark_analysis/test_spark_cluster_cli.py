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


def test_clean_stops_the_daemons_of_a_killed_spark_cluster_and_leaves_a_live_ones(tmp_path: Path) -> None:
    from spark_analysis.standalone import StandaloneCluster, orphaned_daemons

    live = StandaloneCluster(tmp_path / "live", cores=1, memory="512m").start()
    try:
        proc = subprocess.Popen([sys.executable, "-m", "spark_analysis", "spark-cluster", "--dir", str(tmp_path / "killed")],
                                cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert proc.stdout is not None
        line = ""
        for _ in range(20):  # a warning may come first
            line = proc.stdout.readline()
            if line.startswith("spark master") or not line:
                break
        assert line.startswith("spark master"), line
        killed = next((tmp_path / "killed").glob("*-spark-master.log")).name.split("-spark-")[0]
        assert orphaned_daemons() == [], "a running starter's daemons are not orphans"
        proc.kill()  # SIGKILL: the command cannot stop its master and worker
        proc.wait()
        daemons = spark_processes(killed)
        assert len(daemons) >= 2
        assert sorted(name for _, name in orphaned_daemons()) == [f"{killed}-spark-master", f"{killed}-spark-worker"]
        clean = subprocess.run([sys.executable, "-m", "harness", "clean"], cwd=REPO, capture_output=True,
                               text=True, timeout=120)
        assert clean.returncode == 0, clean.stderr
        assert f"{killed}-spark-master" in clean.stdout and f"{killed}-spark-worker" in clean.stdout, clean.stdout
        assert spark_processes(killed) == []
        assert len(spark_processes(live.prefix)) >= 2 and live.alive_workers() == 1, "the live cluster is untouched"
    finally:
        live.stop()
