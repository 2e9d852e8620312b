"""Turning selectors (`leader`, `controller`, `az2`, `random`, ...) into nodes and AZs when a fault fires.

`observe` reads the cluster's live state; everything else is a pure function
of that state, the address plan and a seeded random generator, so a given
state and seed always pick the same targets. Never changes the cluster.

Where the state comes from: each broker's own view (`KafkaCluster.views`,
asked from the control plane, which no fault cuts off). When every broker that
answers agrees on the controller and on every partition's leader and ISR,
that agreement is the state. When they disagree (a partition in progress, a
stale broker) ZooKeeper decides, since the controller's decisions are what
ZooKeeper holds; if ZooKeeper cannot be reached either, the most common
answer among the brokers is used. `ClusterFacts.source` records which.
KRaft: the controller is the active KRaft controller found now through
DescribeQuorum (`KafkaCluster.views` puts it in every view), and without a
ZooKeeper to decide, brokers that disagree are settled by the majority.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from nemesis.fault_spec import GROUP_COORDINATOR, TXN_COORDINATOR
from testbed.addressing import AddressPlan, Host
from testbed.errors import ClusterError, FaultError
from testbed.kafka.cluster import KafkaCluster
from testbed.kafka.wire import BrokerView
from testbed.kafka.zk import zk_snapshot

ZK_TIMEOUT_S = 3.0
COORDINATOR_TRIES = 8


@dataclass(frozen=True)
class PartitionFacts:
    leader: int | None
    isr: tuple[int, ...]


@dataclass(frozen=True)
class ClusterFacts:
    """The state targets are chosen from: the controller and each partition's leader and ISR."""

    controller: int | None
    partitions: dict[int, PartitionFacts] = field(default_factory=dict)
    source: str = "views"  # views | zookeeper | views-majority

    def to_json(self) -> dict[str, Any]:
        return {"controller": self.controller, "source": self.source,
                "partitions": {str(p): {"leader": f.leader, "isr": list(f.isr)}
                               for p, f in sorted(self.partitions.items())}}


def facts_from_views(views: dict[str, BrokerView | None], topic: str) -> ClusterFacts | None:
    """The brokers' common view, or None if no broker answered or two answers differ."""
    answers = [_facts_of_view(v, topic) for v in views.values() if v is not None]
    if not answers or any(a != answers[0] for a in answers):
        return None
    return answers[0]


def majority_of_views(views: dict[str, BrokerView | None], topic: str) -> ClusterFacts | None:
    answers = [_facts_of_view(v, topic) for v in views.values() if v is not None]
    if not answers:
        return None
    counted = Counter(repr(a) for a in answers)
    best = counted.most_common(1)[0][0]
    chosen = next(a for a in answers if repr(a) == best)
    return ClusterFacts(chosen.controller, chosen.partitions, "views-majority")


def _facts_of_view(view: BrokerView, topic: str) -> ClusterFacts:
    parts = {p.partition: PartitionFacts(p.leader if p.leader is not None and p.leader >= 0 else None,
                                         tuple(sorted(p.isr)))
             for p in view.partitions.get(topic, [])}
    return ClusterFacts(view.controller, parts, "views")


def facts_from_zookeeper(snapshot: dict[str, Any]) -> ClusterFacts:
    parts = {int(p): PartitionFacts(s.get("leader") if (s.get("leader") or 0) >= 0 else None,
                                    tuple(sorted(s.get("isr") or [])))
             for p, s in snapshot.get("partitions", {}).items()}
    return ClusterFacts(snapshot.get("controller"), parts, "zookeeper")


def observe(cluster: KafkaCluster) -> ClusterFacts:
    """The cluster's state now (see the module docstring); FaultError if nobody can say."""
    views = cluster.views()
    agreed = facts_from_views(views, cluster.topic)
    if agreed is not None:
        return agreed
    try:
        if not cluster.settings.kraft:
            return facts_from_zookeeper(zk_snapshot(cluster.zk_connect, cluster.topic, timeout=ZK_TIMEOUT_S))
    except ClusterError:
        pass
    majority = majority_of_views(views, cluster.topic)
    if majority is None:
        raise FaultError("cannot resolve targets: no broker and no ZooKeeper server (KRaft: no broker) answered")
    return majority


def coordinator_finder(cluster: KafkaCluster) -> Callable[[str], int | None]:
    """process -> the broker the cluster names as the transaction coordinator of its transactional.id now.

    Asked a few times over a second or two: the coordinator's partition may be between leaders."""
    def find(process: str) -> int | None:
        for _ in range(COORDINATOR_TRIES):
            broker = cluster.txn_coordinator(cluster.transactional_id(process))
            if broker is not None:
                return broker
            time.sleep(0.25)
        return None
    return find


def group_coordinator_finder(cluster: KafkaCluster) -> Callable[[str], int | None]:
    """group -> the broker the cluster names as that consumer group's coordinator now (asked as
    `coordinator_finder` asks: the __consumer_offsets partition may be between leaders)."""
    def find(group: str) -> int | None:
        for _ in range(COORDINATOR_TRIES):
            broker = cluster.group_coordinator(group)
            if broker is not None:
                return broker
            time.sleep(0.25)
        return None
    return find


class Resolver:
    """Resolves selectors for one firing of one fault; reads the cluster at most once."""

    def __init__(self, plan: AddressPlan, rng: random.Random, partition: int,
                 observe_facts: Callable[[], ClusterFacts] | None = None,
                 find_coordinator: Callable[[str], int | None] | None = None,
                 find_group_coordinator: Callable[[str], int | None] | None = None) -> None:
        self.plan = plan
        self._find_coordinator = find_coordinator  # process -> its transaction coordinator's broker id, now
        self.coordinators: dict[str, int] = {}  # what `txn-coordinator:<process>` resolved to (for the journal)
        self._find_group_coordinator = find_group_coordinator  # group -> its group coordinator's broker id, now
        self.group_coordinators: dict[str, int] = {}  # what `group-coordinator:<group>` resolved to (the journal's)
        self.rng = rng
        self.partition = partition
        self._observe = observe_facts
        self.facts: ClusterFacts | None = None
        self.observe_ms: float | None = None  # how long reading the state took, if it was read

    def _facts(self) -> ClusterFacts:
        if self.facts is None:
            if self._observe is None:
                raise FaultError("this target needs the cluster's state, and no observer was given")
            started = time.perf_counter()
            self.facts = self._observe()
            self.observe_ms = round((time.perf_counter() - started) * 1000, 2)
        return self.facts

    def _partition(self) -> PartitionFacts:
        facts = self._facts()
        part = facts.partitions.get(self.partition)
        if part is None:
            raise FaultError(f"partition {self.partition} is unknown to the cluster ({facts.source})")
        return part

    def _leader(self) -> int:
        leader = self._partition().leader
        if leader is None:
            raise FaultError(f"partition {self.partition} has no leader ({self._facts().source})")
        return leader

    def _controller(self) -> int:
        controller = self._facts().controller
        if controller is None:
            raise FaultError(f"there is no controller ({self._facts().source})")
        return controller

    def _coordinator(self, process: str) -> int:
        if self._find_coordinator is None:
            raise FaultError("this target needs the transaction coordinator, and no way to find it was given")
        if process not in self.coordinators:
            broker = self._find_coordinator(process)
            if broker is None:
                raise FaultError(f"target {TXN_COORDINATOR}{process}: no broker names a transaction coordinator "
                                 f"for its transactional.id")
            self.coordinators[process] = broker
        return self.coordinators[process]

    def _group_coordinator(self, group: str) -> int:
        if self._find_group_coordinator is None:
            raise FaultError("this target needs a group coordinator, and no way to find it was given")
        if group not in self.group_coordinators:
            broker = self._find_group_coordinator(group)
            if broker is None:
                raise FaultError(f"target {GROUP_COORDINATOR}{group}: no broker names a coordinator for the group")
            self.group_coordinators[group] = broker
        return self.group_coordinators[group]

    def _broker_node(self, broker_id: int, selector: str) -> Host:
        for node in self.plan.nodes:
            if node.broker_id == broker_id:
                return node
        raise FaultError(f"target {selector}: broker {broker_id} is not in the plan")

    def node(self, selector: str) -> Host:
        """The node host a selector names now."""
        if selector == "leader":
            return self._broker_node(self._leader(), selector)
        if selector == "controller":
            return self._broker_node(self._controller(), selector)
        if selector == "leader-controller":
            leader, controller = self._leader(), self._controller()
            if leader != controller:
                raise FaultError(f"target leader-controller: no node is both; partition {self.partition} "
                                 f"is led by broker {leader} and broker {controller} is the controller")
            return self._broker_node(leader, selector)
        if selector == "follower":
            leader, controller = self._leader(), self._controller()
            candidates = [b for b in self._partition().isr if b not in (leader, controller)]
            if not candidates:
                raise FaultError(f"target follower: partition {self.partition} has no in-sync follower "
                                 f"that is not the controller (leader {leader}, controller {controller}, "
                                 f"isr {list(self._partition().isr)})")
            return self._broker_node(self.rng.choice(sorted(candidates)), selector)
        if selector == "random":
            return self.rng.choice(list(self.plan.nodes))
        if selector.startswith(TXN_COORDINATOR):
            return self._broker_node(self._coordinator(selector.removeprefix(TXN_COORDINATOR)), selector)
        if selector.startswith(GROUP_COORDINATOR):
            return self._broker_node(self._group_coordinator(selector.removeprefix(GROUP_COORDINATOR)), selector)
        if selector.startswith("broker-"):
            return self._broker_node(int(selector.removeprefix("broker-")), selector)
        az = selector.removesuffix("-node")
        for node in self.plan.nodes:
            if node.az == az:
                return node
        raise FaultError(f"target {selector}: no such AZ or node in the plan")

    def az(self, selector: str) -> str:
        """The AZ a selector names now (a node selector means its node's AZ)."""
        if selector == "random":
            return self.rng.choice([n.az for n in self.plan.nodes])
        return self.node(selector).az

    def nodes(self, selectors: tuple[str, ...]) -> list[Host]:
        """Distinct nodes for several selectors, in the order given (`all`: every node of the plan)."""
        found: list[Host] = []
        for s in selectors:
            for node in self.plan.nodes if s == "all" else (self.node(s),):
                if node not in found:
                    found.append(node)
        return found
