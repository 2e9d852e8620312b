"""On a real cluster: a rolling restart moves each broker's leaderships away before it stops and waits for a full
ISR; a reassignment moves a partition through the admin API, journals its progress and completes.

Kept out of `make test` (marker `operations`, `make test-operations`): a roll of three brokers takes about a minute.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nemesis.journal import read_journal
from nemesis.nemesis import Nemesis
from nemesis.reassign import replicas_now
from testbed.kafka.cluster import KafkaCluster
from testbed.runtime.base import Runtime

pytestmark = [pytest.mark.cluster, pytest.mark.operations]
SETTLE_S = 120.0


@pytest.fixture
def nemesis(live_cluster: tuple[KafkaCluster, Runtime], tmp_path: Path) -> Iterator[Nemesis]:
    cluster, runtime = live_cluster
    cluster.wait_settled("the cluster before the test", SETTLE_S)
    nem = Nemesis(cluster, runtime, tmp_path / "nemesis.jsonl", seed=39)
    try:
        yield nem
    finally:
        nem.heal_all()
        nem.close()


def info_rows(nem: Nemesis, fault: str) -> list[dict[str, Any]]:
    return [r["detail"] for r in read_journal(nem.journal.path) if r["type"] == "info" and r["fault"] == fault]


def test_a_rolling_restart_moves_each_brokers_leaderships_before_it_stops(
        live_cluster: tuple[KafkaCluster, Runtime], nemesis: Nemesis) -> None:
    cluster, _ = live_cluster
    pids = {n.broker_id: cluster.pids(n)["broker"] for n in cluster.nodes}
    active = nemesis.start({"fault": "rolling-restart", "wait_s": 90}, "roll")
    controller = active.targets["controller"]
    assert active.targets["brokers"][-1] == controller  # the controller's broker last
    nemesis.stop("roll")
    steps = info_rows(nemesis, "rolling-restart")
    assert [s["broker"] for s in steps] == active.targets["brokers"]
    for step in steps:
        broker = step["broker"]
        led = [p for p, leader in step["leaders_before"].items() if leader == broker]
        # A controlled shutdown: what the broker led has another leader once it is down, and never none.
        assert all(step["leaders_down"][p] not in (broker, None) for p in led), step
        assert step["stop_ns"] < step["stopped_ns"] < step["started_ns"] < step["isr_full_ns"], step
    assert any(s["leaders_before"] != s["leaders_down"] for s in steps)  # some broker led something
    assert all(cluster.pids(n)["broker"] not in (None, pids[n.broker_id]) for n in cluster.nodes)
    assert cluster.settled() is not None


def test_a_reassignment_moves_a_partition_and_journals_it_until_done(
        live_cluster: tuple[KafkaCluster, Runtime], nemesis: Nemesis) -> None:
    cluster, _ = live_cluster
    before = replicas_now(cluster, cluster.topic, [0])[0]
    target = [before[-1], before[0]]  # two of the three, the last first: a new preferred leader, one dropped
    nemesis.start({"fault": "reassign", "partitions": [0], "replicas": target, "throttle_kbit": 8000}, "shrink")
    nemesis.stop("shrink")
    rows = info_rows(nemesis, "reassign")
    done = [r for r in rows if "done_ns" in r]
    assert done and sorted(done[-1]["replicas_now"]["0"]) == sorted(target), rows
    lifted = [r for r in rows if "throttle_lifted_ns" in r]  # the throttle is lifted once the move is done
    assert lifted and lifted[-1]["throttle_lifted_ns"] > done[-1]["done_ns"], rows
    assert sorted(replicas_now(cluster, cluster.topic, [0])[0]) == sorted(target)
    nemesis.start({"fault": "reassign", "partitions": [0], "replicas": before}, "back")
    nemesis.stop("back")
    assert sorted(replicas_now(cluster, cluster.topic, [0])[0]) == sorted(before)
    assert [r for r in info_rows(nemesis, "reassign") if r.get("name") == "back" and "done_ns" in r]
