"""A real standalone Spark master and worker on loopback for the tests that need one; none left after."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from spark_analysis.standalone import StandaloneCluster


def spark_processes(prefix: str) -> list[int]:
    """Pids of processes whose command line carries the cluster's names (`<prefix>-spark-...`)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if f"{prefix}-spark-".encode() in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
        except OSError:
            continue
    return found


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    from checkers.spark_session import stop_session

    cluster = StandaloneCluster(tmp_path_factory.mktemp("spark-cluster"), cores=1, memory="1g")
    cluster.start()
    try:
        assert len(spark_processes(cluster.prefix)) >= 2, "a master and a worker, named with the prefix"
        yield cluster
    finally:
        stop_session()  # the driver's session on this master goes first
        cluster.stop()
    assert spark_processes(cluster.prefix) == [], "no Spark process of the cluster is left"
