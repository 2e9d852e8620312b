"""The application's own client in an AZ: docs/api.md's example, run as written (the fenced block is this file's).

A producer bootstrapped through az1's proxy (FaultlineCluster.bootstrap) is cut off by isolate_az("az1") as any
client of az1 is: its sends fail while az1 is isolated, a producer bootstrapped through az2 keeps writing meanwhile
(so it is az1's cut, not an outage), and az1's sends succeed again after the heal.
"""

from __future__ import annotations

import pytest

# --- docs/api.md's example, from here ---
from confluent_kafka import Producer

from faultline.testing import FaultlineCluster


def send(producer: Producer, topic: str, label: str, count: int = 20) -> tuple[int, int]:
    """Produce `count` records and wait for each one's outcome: (acknowledged, failed)."""
    outcomes = {"acked": 0, "failed": 0}

    def delivered(err: object, msg: object) -> None:
        outcomes["failed" if err is not None else "acked"] += 1

    for i in range(count):
        producer.produce(topic, f"{label}-{i}".encode(), on_delivery=delivered)
    producer.flush(90)
    return outcomes["acked"], outcomes["failed"]


def test_my_producer_in_az1_fails_while_az1_is_isolated_and_recovers_after_the_heal() -> None:
    with FaultlineCluster(partitions=1, zookeeper_session_timeout_ms=6000, replica_lag_time_max_ms=10000) as c:
        settings = {"acks": "all", "message.timeout.ms": 15000}
        in_az1 = Producer({"bootstrap.servers": c.bootstrap("az1"), **settings})
        in_az2 = Producer({"bootstrap.servers": c.bootstrap("az2"), **settings, "message.timeout.ms": 60000})
        assert send(in_az1, c.topic, "before") == (20, 0)
        proxy_host = c.bootstrap("az1").split(":")[0]  # az1's client host: every broker is reached through it
        assert {b.host for b in in_az1.list_topics(timeout=10).brokers.values()} == {proxy_host}

        c.isolate_az("az1")
        assert send(in_az1, c.topic, "cut-off") == (0, 20)  # every send times out
        assert send(in_az2, c.topic, "majority") == (20, 0)  # the other side elects a leader and writes

        c.heal()
        c.wait_settled()
        assert send(in_az1, c.topic, "after") == (20, 0)
        for producer in (in_az1, in_az2):
            producer.close()  # before the cluster goes: an open producer keeps reconnecting to its addresses
# --- to here ---

pytestmark = pytest.mark.docker
