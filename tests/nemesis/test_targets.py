"""Selector resolution from a given cluster state (pure: the state is handed in)."""

from __future__ import annotations

import random

import pytest

from nemesis.targets import ClusterFacts, PartitionFacts, Resolver, facts_from_views, facts_from_zookeeper
from testbed.addressing import make_plan
from testbed.errors import FaultError
from testbed.kafka.wire import BrokerView, PartitionView

PLAN = make_plan("198.18.2.0/24", 3)
# Partition 0 led by broker 1, controller broker 0; partition 1 led by the controller.
FACTS = ClusterFacts(
    0, {0: PartitionFacts(1, (0, 1, 2)), 1: PartitionFacts(0, (0, 1, 2)), 2: PartitionFacts(2, (2,))}
)


def resolver(partition: int = 0, seed: int = 1, facts: ClusterFacts = FACTS) -> Resolver:
    return Resolver(PLAN, random.Random(seed), partition, lambda: facts)


def test_state_selectors() -> None:
    assert resolver().node("leader").name == "az2-node"
    assert resolver().node("controller").name == "az1-node"
    assert resolver().node("follower").name == "az3-node"  # in the ISR, neither leader nor controller
    assert resolver(1).node("leader-controller").name == "az1-node"
    assert {resolver(1, seed).node("follower").name for seed in range(20)} == {"az2-node", "az3-node"}
    assert resolver().az("leader") == "az2"


def test_named_and_random_selectors_need_no_state() -> None:
    blind = Resolver(PLAN, random.Random(1), 0, None)
    assert blind.node("az3").name == "az3-node"
    assert blind.node("az2-node").name == "az2-node"
    assert blind.node("broker-0").name == "az1-node"
    assert blind.az("broker-2") == "az3"
    assert blind.facts is None
    assert [n.name for n in blind.nodes(("az2", "all"))] == ["az2-node", "az1-node", "az3-node"]
    picks = [Resolver(PLAN, random.Random(5), 0).node("random").name for _ in range(3)]
    assert len(set(picks)) == 1  # same seed, same choice
    assert {Resolver(PLAN, random.Random(s), 0).az("random") for s in range(30)} == {"az1", "az2", "az3"}
    with pytest.raises(FaultError, match="needs the cluster's state"):
        blind.node("leader")


def test_unresolvable_selectors_explain_why() -> None:
    with pytest.raises(FaultError, match="no node is both"):
        resolver(0).node("leader-controller")
    with pytest.raises(FaultError, match="no in-sync follower"):
        resolver(2).node("follower")
    with pytest.raises(FaultError, match="partition 7 is unknown"):
        resolver(7).node("leader")
    with pytest.raises(FaultError, match="no such AZ"):
        resolver().node("az9")
    with pytest.raises(FaultError, match="broker 8 is not in the plan"):
        resolver().node("broker-8")
    no_leader = ClusterFacts(None, {0: PartitionFacts(None, ())})
    with pytest.raises(FaultError, match="has no leader"):
        resolver(facts=no_leader).node("leader")
    with pytest.raises(FaultError, match="no controller"):
        resolver(facts=no_leader).node("controller")


def test_resolver_reads_the_state_once() -> None:
    calls = []

    def observe() -> ClusterFacts:
        calls.append(1)
        return FACTS

    r = Resolver(PLAN, random.Random(1), 0, observe)
    assert [r.node(s).name for s in ("leader", "controller", "follower")] == [
        "az2-node",
        "az1-node",
        "az3-node",
    ]
    assert len(calls) == 1
    assert r.nodes(("leader", "broker-1", "az1")) == [PLAN.host("az2-node"), PLAN.host("az1-node")]


def view(broker: int, controller: int, leader: int, isr: list[int]) -> BrokerView:
    return BrokerView(broker, controller, {}, {"t": [PartitionView(0, leader, 3, [0, 1, 2], isr, 0)]})


def test_facts_from_views_need_agreement() -> None:
    same = {"a": view(0, 0, 1, [1, 0, 2]), "b": view(1, 0, 1, [0, 1, 2]), "c": None}
    facts = facts_from_views(same, "t")
    assert facts == ClusterFacts(0, {0: PartitionFacts(1, (0, 1, 2))}, "views")
    split = {"a": view(0, 0, 1, [0, 1, 2]), "b": view(1, 1, 1, [0, 1, 2])}
    assert facts_from_views(split, "t") is None
    assert facts_from_views({"a": None}, "t") is None


def test_facts_from_zookeeper() -> None:
    snap = {
        "brokers": [0, 1, 2],
        "controller": 2,
        "partitions": {0: {"leader": 1, "isr": [2, 1], "leader_epoch": 4}, 1: {"leader": -1, "isr": []}},
    }
    facts = facts_from_zookeeper(snap)
    assert facts.controller == 2 and facts.source == "zookeeper"
    assert facts.partitions == {0: PartitionFacts(1, (1, 2)), 1: PartitionFacts(None, ())}


def test_txn_coordinator_names_the_coordinators_broker_found_once() -> None:
    asked: list[str] = []

    def find(process: str) -> int | None:
        asked.append(process)
        return {"producer-az1-0": 2}.get(process)

    r = Resolver(PLAN, random.Random(1), 0, None, find)
    assert r.node("txn-coordinator:producer-az1-0").name == "az3-node"
    assert r.az("txn-coordinator:producer-az1-0") == "az3"
    assert asked == ["producer-az1-0"] and r.coordinators == {"producer-az1-0": 2}
    assert r.facts is None  # the partitions' state is not needed for it
    with pytest.raises(FaultError, match="no broker names a transaction coordinator"):
        r.node("txn-coordinator:producer-az2-0")
    with pytest.raises(FaultError, match="no way to find it"):
        Resolver(PLAN, random.Random(1), 0, None).node("txn-coordinator:producer-az1-0")
