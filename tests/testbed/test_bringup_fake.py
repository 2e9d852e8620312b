"""Bring-up's restart of a broker that gave up waiting for a ZooKeeper quorum, on the fake runtime.

The brokers start once every ZooKeeper server serves; one whose ZooKeeper client still timed out waiting for
a quorum exits 1 having done nothing, and bring-up (only bring-up) starts it again. Any other exit fails.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import testbed.kafka.readiness
from testbed.errors import ClusterError
from testbed.kafka.bringup import MAX_RESTARTS, ZK_CONNECT_TIMEOUT, BrokerRestarts
from testbed.kafka.cluster import KafkaCluster
from testbed.kafka.config import ClusterSettings
from testbed.runfolder import RunFolder
from tests.fakes import DIES_AT_ONCE, FakeRuntime, Script, exits_by_itself

TIMED_OUT = (f"[2026-11-23 19:30:00,000] ERROR Fatal error during KafkaServer startup. Prepare to shutdown "
             f"(kafka.server.KafkaServer)\nkafka.zookeeper.{ZK_CONNECT_TIMEOUT}: Timed out waiting for "
             f"connection while in state: CONNECTING\n")


@pytest.fixture(autouse=True)
def _look_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(testbed.kafka.readiness, "PROCESS_CHECK_S", 0.0)  # each call looks (else once per 0.2 s)


def cluster_with(tmp_path: Path, broker: Script, server_log: str) -> tuple[KafkaCluster, FakeRuntime]:
    runtime = FakeRuntime(scripts={"az1-node/broker": broker})
    runtime.create()
    cluster = KafkaCluster(runtime, ClusterSettings(), RunFolder(tmp_path / "run").make())
    node = cluster.nodes[0]
    logs = cluster.node_folder(node).logs("broker")
    logs.mkdir(parents=True, exist_ok=True)
    (logs / "server.log").write_text(server_log)
    cluster.start(node, "zookeeper")
    cluster.start(node, "broker")
    return cluster, runtime


def brokers_started(runtime: FakeRuntime) -> int:
    return sum(p.name == "az1-node/broker" for p in runtime.spawned)


def test_a_broker_that_timed_out_on_zookeeper_is_started_again_at_bring_up(tmp_path: Path) -> None:
    cluster, runtime = cluster_with(tmp_path, DIES_AT_ONCE, "INFO starting\n" + TIMED_OUT)
    cluster.readiness.restart_exited_broker = BrokerRestarts(cluster)
    cluster.readiness.check_processes()
    assert brokers_started(runtime) == 2
    assert ("az1-node", cluster.node_folder(cluster.nodes[0]).logs("broker")) in runtime.fetches


def test_restarts_end_after_the_limit(tmp_path: Path) -> None:
    cluster, runtime = cluster_with(tmp_path, DIES_AT_ONCE, TIMED_OUT)
    cluster.readiness.restart_exited_broker = BrokerRestarts(cluster)
    for _ in range(MAX_RESTARTS):
        cluster.readiness.check_processes()
    with pytest.raises(ClusterError, match="az1-node/broker exited during start-up"):
        cluster.readiness.check_processes()
    assert brokers_started(runtime) == 1 + MAX_RESTARTS


@pytest.mark.parametrize("broker, server_log", [
    (DIES_AT_ONCE, "ERROR Fatal error during KafkaServer startup\njava.io.IOException: No space left on device\n"),
    (exits_by_itself(-9), TIMED_OUT),  # killed, not its own fatal error
])
def test_a_broker_that_exited_for_another_reason_fails_the_bring_up(tmp_path: Path, broker: Script,
                                                                    server_log: str) -> None:
    cluster, runtime = cluster_with(tmp_path, broker, server_log)
    cluster.readiness.restart_exited_broker = BrokerRestarts(cluster)
    with pytest.raises(ClusterError, match="az1-node/broker exited during start-up"):
        cluster.readiness.check_processes()
    assert brokers_started(runtime) == 1


def test_outside_bring_up_no_broker_is_restarted(tmp_path: Path) -> None:
    cluster, runtime = cluster_with(tmp_path, DIES_AT_ONCE, TIMED_OUT)
    with pytest.raises(ClusterError):
        cluster.readiness.check_processes()
    assert brokers_started(runtime) == 1


class QuorumReached(Exception):
    pass


def test_no_broker_starts_before_every_zookeeper_server_serves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A broker's first writes must reach every server's transaction log (bringup.py says why)."""
    from testbed.kafka.bringup import bring_up

    runtime = FakeRuntime()
    runtime.create()
    cluster = KafkaCluster(runtime, ClusterSettings(), RunFolder(tmp_path / "run").make())
    seen: list[list[str]] = []

    def quorum(timeout: float, interval: float = 0.2) -> dict[str, str]:
        seen.append(sorted(p.name for p in runtime.spawned))
        raise QuorumReached

    monkeypatch.setattr(cluster.readiness, "wait_quorum", quorum)
    with pytest.raises(QuorumReached):
        bring_up(cluster, 30.0)
    assert seen == [sorted(f"{n.name}/zookeeper" for n in cluster.nodes)]
