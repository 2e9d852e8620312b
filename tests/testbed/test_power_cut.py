"""On a real cluster: a power cut of a broker loses what it had not fsynced; a kill loses nothing.

Two topics with one replica each on broker-0: one with Kafka's default flush
policy (never fsync; durability is replication's job, and here there is none),
one with flush.messages=1 (fsync every append). Records acknowledged with
acks=all to both, then broker-0's node loses power: every process of the node
dies at one instant and the writes its disk had not synced are dropped. When
it comes back, the first topic's records are gone and the second's are there.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from nemesis.faults import start_again
from nemesis.journal import read_journal
from nemesis.nemesis import Nemesis
from testbed.kafka.cluster import KafkaCluster
from testbed.kafka.config import BROKER_PORT, ClusterSettings
from testbed.kafka.waiting import wait_for
from testbed.kafka.wire import broker_view
from testbed.lifecycle import provision
from testbed.runtime import unsynced
from testbed.runtime.base import LosesUnsyncedWrites, Runtime
from tests.nemesis.conftest import TEST_NETWORK

pytestmark = [pytest.mark.cluster, pytest.mark.fuse]  # broker-0's data on unsyncfs
RECORDS = 200
TOPICS = {"no-fsync": {}, "fsync-each": {"flush.messages": "1"}}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KafkaCluster, Runtime]]:
    if os.geteuid() != 0:
        pytest.fail("the power-cut test needs root (network namespaces, FUSE)")
    settings = ClusterSettings(network=TEST_NETWORK, partitions=1, replica_assignment=((0, 1, 2),),
                               min_insync_replicas=1, zookeeper_session_timeout_ms=6000)
    with provision(settings, tmp_path_factory.mktemp("power-cut")) as (c, runtime):
        yield c, runtime


def produce(bootstrap: str, topic: str, n: int) -> list[str]:
    acked: list[str] = []
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for i in range(n):
        p.produce(topic, f"{topic}-{i}".encode(),
                  on_delivery=lambda err, msg: acked.append(msg.value().decode()) if err is None else None)
    assert p.flush(30) == 0
    return acked


def read_all(bootstrap: str, topic: str) -> list[str]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{time.time_ns()}", "enable.auto.commit": False})
    try:
        _, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        c.assign([TopicPartition(topic, 0, 0)])
        got: list[str] = []
        deadline = time.monotonic() + 30
        while len(got) < high and time.monotonic() < deadline:
            msg = c.poll(1.0)
            if msg is not None and msg.error() is None:
                got.append(msg.value().decode())
        return got
    finally:
        c.close()


def led_by_broker_0(cluster: KafkaCluster, topics: list[str]) -> bool | None:
    """Broker-0's own view: it leads every partition of `topics` (its connection refused while down: None)."""
    view = broker_view(cluster.node(0).address, BROKER_PORT, topics, timeout=2.0)
    parts = [p for t in topics for p in view.partitions.get(t, [])]
    return True if len(parts) == len(topics) and all(p.leader == 0 for p in parts) else None


def test_a_power_cut_drops_what_the_broker_had_not_fsynced(cluster: tuple[KafkaCluster, Runtime],
                                                           tmp_path: Path) -> None:
    c, runtime = cluster
    assert isinstance(runtime, LosesUnsyncedWrites) and c.loses_unsynced_writes
    node = c.node(0)
    data = c.node_folder(node).data("broker")
    assert unsynced.mounted()[str(data)].startswith(runtime.prefix)
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    futures = admin.create_topics([NewTopic(t, num_partitions=1, replica_assignment=[[0]], config=cfg)
                                   for t, cfg in TOPICS.items()])
    for f in futures.values():
        f.result(30)
    wait_for("broker-0 to lead both topics", lambda: led_by_broker_0(c, list(TOPICS)), 60)
    acked = {t: produce(c.bootstrap, t, RECORDS) for t in TOPICS}
    assert all(len(v) == RECORDS for v in acked.values())
    time.sleep(6)  # past a replication-offset checkpoint (every 5 s): the partitions' names are durable

    nemesis = Nemesis(c, runtime, tmp_path / "nemesis.jsonl", seed=1)
    cut = nemesis.start({"fault": "power-off", "target": "broker-0"})
    assert c.pids(node) == {"zookeeper": None, "broker": None}
    assert str(data) not in unsynced.mounted()
    nemesis.stop(cut)
    nemesis.close()
    assert [(r["type"], r["fault"]) for r in read_journal(tmp_path / "nemesis.jsonl")] == \
        [("start", "power-cut"), ("stop", "power-cut")]
    assert unsynced.mounted()[str(data)].startswith(runtime.prefix)
    wait_for("broker-0 to lead both topics again", lambda: led_by_broker_0(c, list(TOPICS)), 90)

    assert read_all(c.bootstrap, "no-fsync") == []
    assert read_all(c.bootstrap, "fsync-each") == acked["fsync-each"]


def test_a_kill_keeps_what_the_broker_had_not_fsynced(cluster: tuple[KafkaCluster, Runtime]) -> None:
    c, _ = cluster
    acked = produce(c.bootstrap, "no-fsync", RECORDS)
    node = c.node(0)
    c.kill(node, "broker")
    start_again(c, [(node, "broker")])
    wait_for("broker-0 to lead again", lambda: led_by_broker_0(c, ["no-fsync"]), 90)
    assert read_all(c.bootstrap, "no-fsync") == acked
