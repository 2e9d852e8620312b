"""The network and process faults: how each category's kinds act on the cluster, and how they are undone.

Partition kinds compute a grudge (`nemesis.shapes`) from their resolved
targets, each by its own shape function below, and hand it to the shared
`Firewall`; degraded-link kinds compute a degraded-link map (`nemesis.links`)
and hand it to the same `Firewall`; process kinds signal the cluster's
processes through `KafkaCluster` and wait until the signal has taken effect
(dead, stopped, continued), so a journaled start or stop is a fact, not an
intention. Each implementation is a `Fault` (`nemesis.fault_base`); the
registry (`nemesis.registry`) gives every kind its instance.

Must never: name a fault kind (the registry does), or import the registry.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nemesis import links, shapes
from nemesis.fault_base import FaultEnv, Injected
from nemesis.fault_spec import FaultSpec
from testbed.addressing import AddressPlan, Host
from testbed.errors import ClusterError, FaultError

if TYPE_CHECKING:
    from nemesis.targets import Resolver
    from testbed.kafka.cluster import KafkaCluster, NodeRole

KILL_WAIT_S = 10.0
GRACEFUL_STOP_S = 60.0
STALE_GRACE_S = 30.0  # beyond the session timeout: a quorum coming back renews every session once
log = logging.getLogger("faultline.nemesis")


def _brokers(plan: AddressPlan, azs_or_hosts: list[str]) -> list[int]:
    """The broker ids on the given AZs or node hosts."""
    return sorted(n.broker_id for n in plan.nodes if n.az in azs_or_hosts or n.name in azs_or_hosts)


# -- partitions ----------------------------------------------------------------
# The grudge a partition spec means now, and its targets as the journal names them; ValueError when it cannot be.
PartitionShape = Callable[[FaultSpec, "Resolver", AddressPlan], tuple[shapes.Grudge, dict[str, Any]]]


def isolate_az(spec: FaultSpec, resolver: Resolver, plan: AddressPlan) -> tuple[shapes.Grudge, dict[str, Any]]:
    az = resolver.az(spec.targets[0])
    return shapes.isolate_az(plan, az), {"az": az, "brokers": _brokers(plan, [az])}


def cut_link(spec: FaultSpec, resolver: Resolver, plan: AddressPlan) -> tuple[shapes.Grudge, dict[str, Any]]:
    if spec.ends == "node":
        a, b = (resolver.node(s).name for s in spec.targets)
        _distinct(spec, a, b)
        grudge = shapes.cut_hosts([a], [b], spec.one_way)
    else:
        a, b = (resolver.az(s) for s in spec.targets)
        _distinct(spec, a, b)
        grudge = shapes.cut_link(plan, a, b, spec.one_way)
    return grudge, {"link": [a, b], "one_way": spec.one_way, "brokers": _brokers(plan, [a, b])}


def split(spec: FaultSpec, resolver: Resolver, plan: AddressPlan) -> tuple[shapes.Grudge, dict[str, Any]]:
    minority = sorted({resolver.az(s) for s in spec.targets})
    majority = [az for az in shapes.azs(plan) if az not in minority]
    return shapes.split_minority(plan, minority), {"minority": minority, "majority": majority,
                                                   "brokers": _brokers(plan, minority)}


def bridge(spec: FaultSpec, resolver: Resolver, plan: AddressPlan) -> tuple[shapes.Grudge, dict[str, Any]]:
    middle = resolver.az(spec.targets[0]) if spec.targets else shapes.azs(plan)[len(plan.nodes) // 2]
    grudge = shapes.bridge(plan, middle)
    others = [az for az in shapes.azs(plan) if az != middle]
    half = len(others) // 2
    return grudge, {"bridge": middle, "sides": [others[:half], others[half:]]}


def majorities_ring(spec: FaultSpec, resolver: Resolver, plan: AddressPlan) -> tuple[shapes.Grudge, dict[str, Any]]:
    return shapes.majorities_ring(plan), {"ring": list(shapes.azs(plan))}


def _distinct(spec: FaultSpec, a: str, b: str) -> None:
    if a == b:
        raise FaultError(f"{spec.fault} between {spec.targets[0]} and {spec.targets[1]}: both are {a}")


@dataclass(frozen=True)
class PartitionFault:
    """A partition kind, by its shape: its cut joins the firewall's active cuts until undone."""

    shape: PartitionShape

    def cut(self, spec: FaultSpec, resolver: Resolver, plan: AddressPlan) -> tuple[shapes.Grudge, dict[str, Any]]:
        """The grudge the spec means now, and its targets as the journal names them; FaultError if none."""
        try:
            return self.shape(spec, resolver, plan)
        except ValueError as exc:
            raise FaultError(f"{spec.fault}: {exc}") from exc

    def inject(self, spec: FaultSpec, resolver: Resolver, env: FaultEnv, key: str) -> Injected:
        grudge, targets = self.cut(spec, resolver, env.plan)
        changed = env.firewall.add(key, grudge, spec.scope)
        return Injected(key, spec.fault, {**targets, "scope": spec.scope},
                        {"cut": [list(p) for p in shapes.cut_pairs(grudge)], "hosts_changed": changed})

    def undo(self, injected: Injected, env: FaultEnv) -> None:
        env.firewall.remove(injected.key)


# -- degraded links ----------------------------------------------------------------
def link_shape(spec: FaultSpec, resolver: Resolver, plan: AddressPlan) -> tuple[links.Degraded, dict[str, Any]]:
    """The degraded-link map a link spec means now, and its targets as the journal names them."""
    assert spec.degrade is not None
    forward, backward = spec.degrade
    try:
        if len(spec.targets) == 2:
            if spec.ends == "node":
                a, b = (resolver.node(s).name for s in spec.targets)
                _distinct(spec, a, b)
                pairs = links.degrade_hosts([a], [b], forward, backward)
            else:
                a, b = (resolver.az(s) for s in spec.targets)
                _distinct(spec, a, b)
                pairs = links.degrade_link(plan, a, b, forward, backward)
            ends: dict[str, Any] = {"link": [a, b]}
        else:
            one = resolver.node(spec.targets[0]).name if spec.ends == "node" else resolver.az(spec.targets[0])
            hosts = [one] if spec.ends == "node" else sorted(shapes.hosts_of_az(plan, one))
            pairs = links.degrade_rest(plan, hosts, forward, backward)
            ends = {"link": [one, "rest"]}
    except ValueError as exc:
        raise FaultError(f"{spec.fault}: {exc}") from exc
    shown = {key: _per_direction(getattr(forward, key), getattr(backward, key))
             for key in ("loss", "delay_ms", "jitter_ms", "rate_kbit")
             if getattr(forward, key) or getattr(backward, key)}
    return pairs, {**ends, **shown, "brokers": _brokers(plan, ends["link"])}


def _per_direction(forward: Any, backward: Any) -> Any:
    return forward if forward == backward else [forward, backward]


class LinkFault:
    """lossy-link, slow-link, throttle-link: its degradation joins the firewall's active ones until undone."""

    def inject(self, spec: FaultSpec, resolver: Resolver, env: FaultEnv, key: str) -> Injected:
        pairs, targets = link_shape(spec, resolver, env.plan)
        changed = env.firewall.add_links(key, pairs)
        return Injected(key, spec.fault, targets,
                        {"pairs": [list(p) for p in sorted(pairs)], "hosts_changed": changed})

    def undo(self, injected: Injected, env: FaultEnv) -> None:
        env.firewall.remove(injected.key)


# -- processes -------------------------------------------------------------------
Hit = tuple[Host, "NodeRole", int]  # a node, one of its processes, its pid
# What a process kind does to the processes it hits, all at once; the journal's name for it when that differs
# from the kind's (a power-off that dropped unsynced writes is a power cut).
ProcessAction = Callable[["KafkaCluster", list[Host], list[Hit]], "str | None"]


def roles_hit(spec: FaultSpec, cluster: KafkaCluster, every_process: bool = False) -> tuple[NodeRole, ...]:
    """The processes a fault hits on each node; `role: zookeeper` is the node's metadata-quorum process: its
    ZooKeeper server, or in KRaft its controller (a combined KRaft node has none apart: refused by the spec)."""
    if every_process or spec.role == "both":
        return cluster.roles
    if spec.role != "zookeeper":
        return ("broker",)
    if cluster.settings.quorum_role is None:
        raise FaultError(f"{spec.fault} role zookeeper: combined KRaft nodes have no controller process apart")
    return (cluster.settings.quorum_role,)  # type: ignore[return-value]


def power_off(cluster: KafkaCluster, nodes: list[Host], hits: list[Hit]) -> str:
    """Every process of the nodes dies at one instant; "power-cut" where unsynced writes went with the power."""
    try:
        return cluster.power_off(nodes)
    except ClusterError as exc:
        raise FaultError(str(exc)) from exc


def kill(cluster: KafkaCluster, nodes: list[Host], hits: list[Hit]) -> None:
    """SIGKILL every hit process before waiting for any: they die at the same instant."""
    stuck = cluster.processes.kill([cluster.process_name(node, role) for node, role, _ in hits], KILL_WAIT_S)
    if stuck:
        raise FaultError(f"processes {stuck} survived SIGKILL for {KILL_WAIT_S:.0f} s")


def pause(cluster: KafkaCluster, nodes: list[Host], hits: list[Hit]) -> None:
    """SIGSTOP every hit process, and wait until each is stopped."""
    for node, role, _ in hits:
        cluster.pause(node, role)
    _wait_state(cluster, [(node, role) for node, role, _ in hits], paused=True)


def graceful_stop(cluster: KafkaCluster, nodes: list[Host], hits: list[Hit]) -> None:
    """SIGTERM every hit process at once, and wait until each exited (GRACEFUL_STOP_S)."""
    _in_parallel([lambda n=node, r=role: cluster.stop(n, r, GRACEFUL_STOP_S) for node, role, _ in hits])


@dataclass(frozen=True)
class ProcessFault:
    """A process kind, by its action on one or several nodes' processes, all at once; undone by starting them
    again, or by SIGCONT where `undo_resumes` (a pause)."""

    act: ProcessAction
    every_process: bool = False  # every process of the node, whatever the spec's role (a power-off)
    undo_resumes: bool = False

    def inject(self, spec: FaultSpec, resolver: Resolver, env: FaultEnv, key: str) -> Injected:
        cluster = env.cluster
        nodes = resolver.nodes(spec.targets)
        hits: list[Hit] = []
        for node in nodes:
            pids = cluster.pids(node)
            for role in roles_hit(spec, cluster, self.every_process):
                pid = pids[role]
                if pid is None:
                    raise FaultError(f"{spec.fault} {cluster.process_name(node, role)}: it is not running")
                hits.append((node, role, pid))
        fault = self.act(cluster, nodes, hits) or spec.fault
        targets = {"nodes": [n.name for n in nodes], "brokers": sorted(n.broker_id for n in nodes),
                   "processes": [cluster.process_name(n, r) for n, r, _ in hits]}
        detail = {"pids": {cluster.process_name(n, r): p for n, r, p in hits}}
        return Injected(key, fault, targets, detail, tuple((n.name, r) for n, r, _ in hits))

    def undo(self, injected: Injected, env: FaultEnv) -> None:
        cluster = env.cluster
        procs = [(cluster.plan.host(name), role) for name, role in injected.processes]
        if self.undo_resumes:
            for node, role in procs:
                cluster.resume(node, role)
            _wait_state(cluster, procs, paused=False)
            return
        start_again(cluster, procs)


def start_again(cluster: KafkaCluster, procs: list[tuple[Host, NodeRole]]) -> list[tuple[Host, NodeRole]]:
    """Start those of `procs` that are not running, ZooKeeper servers (KRaft controllers) first; return the ones
    started.

    A broker killed moments ago is still registered in ZooKeeper until its
    session expires, and a broker started before then exits at once ("node
    already exists"). So each broker starts only once its old registration is
    gone, as a supervisor that retries would manage; if ZooKeeper cannot say
    within the session timeout plus STALE_GRACE_S, it starts anyway. A KRaft
    broker needs no wait: the controller refuses a new incarnation's
    registration while the old one's session lasts, and the broker retries.
    """
    started = []
    for want in cluster.roles:
        for node, role in procs:
            if role != want or cluster.pids(node)[role] is not None:
                continue
            if role == "broker":
                _wait_unregistered(cluster, node)
            cluster.start(node, role)
            started.append((node, role))
    return started


def _wait_unregistered(cluster: KafkaCluster, node: Host) -> None:
    deadline = time.monotonic() + cluster.settings.zookeeper_session_timeout_ms / 1000 + STALE_GRACE_S
    while time.monotonic() < deadline:
        with contextlib.suppress(ClusterError):
            if not cluster.registered(node):
                return
        time.sleep(0.25)
    log.warning("broker %d is still registered in ZooKeeper (or ZooKeeper is unreachable); starting it anyway",
                node.broker_id)


def _wait_state(cluster: KafkaCluster, procs: list[tuple[Host, NodeRole]], paused: bool) -> None:
    """Wait until every process is (or is no longer) paused: a signal reaches a JVM's threads a moment later.

    A process that has ended meanwhile counts as done."""
    deadline = time.monotonic() + KILL_WAIT_S
    pending = list(procs)
    while pending and time.monotonic() < deadline:
        pending = [(n, r) for n, r in pending if cluster.process(n, r) is not None and cluster.paused(n, r) != paused]
        if pending:
            time.sleep(0.005)
    if pending:
        names = [cluster.process_name(n, r) for n, r in pending]
        raise FaultError(f"processes {names} did not {'stop' if paused else 'continue'} within {KILL_WAIT_S:.0f} s")


def _in_parallel(calls: list[Any]) -> None:
    with ThreadPoolExecutor(max_workers=max(1, len(calls))) as pool:
        futures = [pool.submit(c) for c in calls]
    for f in futures:
        exc = f.exception()
        if isinstance(exc, ClusterError):
            raise FaultError(str(exc)) from exc
        if exc is not None:
            raise exc


LINK = LinkFault()  # every link kind: its values are in its spec (`FaultSpec.degrade`)
