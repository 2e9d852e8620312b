"""faultline.testing.FaultlineCluster as an application team uses it: a plain client against real partitions."""

from __future__ import annotations

import time

import docker
import pytest
from confluent_kafka import Consumer, KafkaError, Producer

from faultline.testing import FaultlineCluster

pytestmark = [pytest.mark.docker, pytest.mark.extended]  # `make test` runs docs/api.md's example (test_app_client_az.py) instead


def test_a_producer_sees_the_leader_move_and_keeps_every_acks_all_write() -> None:
    acked: list[bytes] = []

    def delivered(err: KafkaError | None, msg: object) -> None:
        if err is None:
            acked.append(msg.value())  # type: ignore[attr-defined]

    with FaultlineCluster(partitions=1, zookeeper_session_timeout_ms=6000) as c:
        prefix = c.runtime.prefix
        assert docker.from_env().containers.list(filters={"label": f"faultline.run={prefix}"})
        before = c.leader(c.topic, 0)
        assert before is not None
        producer = Producer({"bootstrap.servers": c.bootstrap_servers, "acks": "all", "enable.idempotence": True,
                             "message.timeout.ms": 60000})
        for i in range(200):
            producer.produce(c.topic, f"before-{i}".encode(), on_delivery=delivered)
        assert producer.flush(30) == 0

        fault = c.isolate_az(f"az{before + 1}")
        deadline, after = time.monotonic() + 90, before
        while after == before and time.monotonic() < deadline:
            time.sleep(0.5)
            after = c.leader(c.topic, 0)
        assert after not in (None, before), "the other brokers elected a new leader"
        for i in range(200):
            producer.produce(c.topic, f"during-{i}".encode(), on_delivery=delivered)
        producer.flush(60)
        assert c.status()["brokers"][before]["alive"] is True, "the isolated broker runs; it is only cut off"

        c.heal()
        assert c.nemesis is not None and fault not in c.nemesis.active_names()
        c.wait_settled()
        consumer = Consumer({"bootstrap.servers": c.bootstrap_servers, "group.id": "check", "auto.offset.reset":
                             "earliest", "enable.auto.commit": False})
        consumer.subscribe([c.topic])
        read: set[bytes] = set()
        deadline = time.monotonic() + 60
        while not set(acked) <= read and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is not None and msg.error() is None:
                read.add(msg.value())
        consumer.close()
        producer.close()  # before the cluster goes: an open producer keeps reconnecting to its gone addresses
        assert len(acked) >= 200 and set(acked) <= read, f"{len(set(acked) - read)} acknowledged writes missing"
    assert not docker.from_env().containers.list(all=True, filters={"label": f"faultline.run={prefix}"})
