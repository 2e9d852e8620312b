"""reassign: move partitions to other brokers through the admin API, while the schedule goes on; progress journaled.

At its start the nemesis, as an operator's admin client, asks the controller (ZooKeeper mode; on KRaft
any broker, which forwards it) to move each chosen partition of the topic (the topic under test,
`__consumer_offsets` or `__transaction_state`) to the spec's `replicas`
(AlterPartitionReassignments, KIP-455, Kafka 2.4 on; `testbed.kafka.reassign_wire`), once the cluster's
metadata lists every target broker (a broker started a moment before may not have registered yet), with a
replication throttle first where the spec asks one. Then, in its own thread, it asks for the
reassignments in progress (ListPartitionReassignments) every second and journals an `info` row each
time the adding or removing replicas change, and one when none is in progress and every broker's
metadata shows the new replicas (`done_ns`); the throttle is lifted then. The start row holds each
partition's replicas before and the target.

Its stop waits for the move to complete (`wait_s`); past it the reassignment is cancelled (an
AlterPartitionReassignments with no replicas) and the cancel journaled (`cancelled_ns`, with what was still moving):
an outcome the run is judged with, not a failure of the harness. The stop fails only when the nemesis cannot act
(the cancel refused, say).

Must never: move a partition the spec did not name, or leave its throttle behind.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from nemesis.fault_base import FaultEnv, Injected
from nemesis.operations import Operation, Running
from testbed.errors import FaultError
from testbed.kafka import reassign_wire as wire
from testbed.kafka.config import BROKER_PORT
from testbed.kafka.wire import broker_view

if TYPE_CHECKING:
    from nemesis.fault_spec import FaultSpec
    from nemesis.targets import Resolver
    from testbed.kafka.cluster import KafkaCluster

ASK_S = 15.0  # how long the start keeps asking while the controller moves or cannot be reached
# How long one broker may take to answer a throttle's config change: it writes it to ZooKeeper, and a broker whose
# ZooKeeper client was connected to a server an isolation cut off waits for it to time out (2/3 of the session
# timeout, 12 s by default) and reconnect first.
THROTTLE_ASK_S = 15.0
POLL_S = 1.0
REGISTERED_POLL_S = 0.25
THROTTLE_RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
THROTTLE_REPLICAS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")


def admin_node(cluster: KafkaCluster) -> str:
    """The address to send an admin request to: the controller's broker (ZooKeeper mode), or any broker that
    answers (KRaft: it forwards to the active controller); FaultError when none can be named."""
    for node in cluster.nodes:
        try:
            view = broker_view(node.address, BROKER_PORT, [], timeout=2.0)
        except (OSError, ConnectionError, ValueError):
            continue
        if cluster.settings.kraft:
            return node.address
        if view.controller is not None and view.controller in {n.broker_id for n in cluster.nodes}:
            return cluster.node(view.controller).address
    raise FaultError("no broker answers with a controller to send the reassignment to")


def replicas_now(cluster: KafkaCluster, topic: str, partitions: list[int]) -> dict[int, list[int]]:
    """Each partition's replicas as the first broker that answers sees them."""
    for node in cluster.nodes:
        try:
            view = broker_view(node.address, BROKER_PORT, [topic], timeout=2.0)
        except (OSError, ConnectionError, ValueError):
            continue
        found = {p.partition: list(p.replicas) for p in view.partitions.get(topic, []) if p.partition in partitions}
        if len(found) == len(partitions):
            return found
    return {}


class Reassign(Operation):
    def inject(self, spec: FaultSpec, resolver: Resolver, env: FaultEnv, key: str) -> Injected:
        cluster, opts = env.cluster, spec.options
        topic = cluster.topic if opts["topic"] == "test" else opts["topic"]
        partitions = list(opts["partitions"] or range(cluster.settings.partitions))
        target = list(opts["replicas"])
        unknown = sorted(set(target) - {n.broker_id for n in cluster.nodes})
        if unknown:
            raise FaultError(f"{spec.fault}: no broker {unknown} in this cluster")
        before = replicas_now(cluster, topic, partitions)
        if not before:
            raise FaultError(f"{spec.fault}: no broker knows partitions {partitions} of {topic}")
        registered_s = self._registered(cluster, target, spec.fault)
        throttled, unthrottled = self._throttle(cluster, topic, opts["throttle_kbit"]) \
            if opts["throttle_kbit"] else ([], {})
        self._ask(cluster, topic, {p: target for p in partitions}, spec.fault)
        asked_ns = time.time_ns()
        self.launch(key, opts["wait_s"], lambda running: self._follow(running, env, spec.fault, key, topic,
                                                                      partitions, target, throttled))
        targets = {"topic": topic, "partitions": partitions, "replicas": target}
        detail = {"before": {str(p): r for p, r in sorted(before.items())}, "asked_ns": asked_ns,
                  "registered_wait_s": registered_s,
                  "throttle_kbit": opts["throttle_kbit"], "throttled_brokers": throttled,
                  **({"not_throttled": unthrottled} if unthrottled else {})}
        return Injected(key, spec.fault, targets, detail)

    @staticmethod
    def _registered(cluster: KafkaCluster, target: list[int], fault: str) -> float:
        """Wait until the cluster's metadata lists every target broker (an operator moves partitions onto a broker
        once it has registered: one started a moment ago may not be yet, and the controller refuses a move onto
        it, INVALID_REPLICA_ASSIGNMENT "not alive"); the seconds waited. FaultError naming those still missing
        after ASK_S."""
        started = time.monotonic()
        listed: list[int] = []
        while True:
            for node in cluster.nodes:
                try:
                    listed = sorted(broker_view(node.address, BROKER_PORT, [], timeout=2.0).brokers)
                except (OSError, ConnectionError, ValueError):
                    continue
                break
            if set(target) <= set(listed):
                return round(time.monotonic() - started, 3)
            if time.monotonic() - started >= ASK_S:
                raise FaultError(f"{fault}: brokers {sorted(set(target) - set(listed))} not registered within "
                                 f"{ASK_S:.0f} s (the cluster's metadata lists {listed})")
            time.sleep(REGISTERED_POLL_S)

    @staticmethod
    def _ask(cluster: KafkaCluster, topic: str, targets: dict[int, list[int] | None], fault: str) -> None:
        """Send the reassignment (or its cancel) to the controller, again while it moves; FaultError if refused."""
        deadline, last = time.monotonic() + ASK_S, ""
        while time.monotonic() < deadline:
            try:
                error, answers = wire.alter_reassignments(admin_node(cluster), BROKER_PORT, topic, targets)
            except (OSError, ConnectionError, ValueError, FaultError) as exc:
                last = str(exc)
            else:
                refused = {p: f"{wire.error_name(c)}{f' ({m})' if m else ''}" for p, (c, m) in answers.items() if c}
                if error == 0 and not refused:
                    return
                last = wire.error_name(error) if error else ", ".join(f"{topic}-{p}: {e}" for p, e in refused.items())
                if error != 41 and not any("NOT_CONTROLLER" in e for e in refused.values()):
                    break  # refused for good: only a moving controller is worth asking again
            time.sleep(0.5)
        raise FaultError(f"{fault}: AlterPartitionReassignments of {topic}: {last}")

    @staticmethod
    def _throttle(cluster: KafkaCluster, topic: str, kbit: int | None,
                  brokers: list[int] | None = None) -> tuple[list[int], dict[str, str]]:
        """Set (kbit) or lift (None) the replication throttle on `brokers` (default every one) and on the topic:
        the brokers done, and why each other one was not (a broker's own config goes to that broker, which writes
        it to ZooKeeper: one cut off from ZooKeeper's majority cannot take it). FaultError when setting it, no
        broker or not the topic took it."""
        rate = None if kbit is None else str(kbit * 1000 // 8)  # bytes per second

        def ask(broker: int, address: str) -> str | None:
            try:
                code, message = wire.alter_configs(address, BROKER_PORT, wire.BROKER_RESOURCE, str(broker),
                                                   dict.fromkeys(THROTTLE_RATES, rate), THROTTLE_ASK_S)
                return None if code == 0 else f"{wire.error_name(code)} {message or ''}".strip()
            except (OSError, ConnectionError, ValueError) as exc:
                return str(exc) or type(exc).__name__
        chosen = [n for n in cluster.nodes if brokers is None or n.broker_id in brokers]
        with ThreadPoolExecutor(max(1, len(chosen))) as pool:  # every broker at once: each may wait for ZooKeeper
            answers = list(pool.map(lambda n: ask(n.broker_id, n.address), chosen))
        done = [n.broker_id for n, why in zip(chosen, answers, strict=True) if why is None]
        refused = {str(n.broker_id): why for n, why in zip(chosen, answers, strict=True) if why is not None}
        try:
            code, message = wire.alter_configs(admin_node(cluster), BROKER_PORT, wire.TOPIC_RESOURCE, topic,
                                               dict.fromkeys(THROTTLE_REPLICAS, None if kbit is None else "*"),
                                               THROTTLE_ASK_S)
            if code:
                refused[topic] = f"{wire.error_name(code)} {message or ''}".strip()
        except (OSError, ConnectionError, ValueError, FaultError) as exc:
            refused[topic] = str(exc) or type(exc).__name__
        if kbit is not None and (not done or topic in refused):
            raise FaultError(f"replication throttle not set: {refused}")
        return done, refused

    def _follow(self, running: Running, env: FaultEnv, fault: str, key: str, topic: str, partitions: list[int],
                target: list[int], throttled: list[int]) -> None:
        """Journal the progress until the move is done, or cancel it when told to."""
        cluster, last = env.cluster, None

        def note(detail: dict[str, Any]) -> None:
            if env.journal is not None:
                env.journal.write("info", fault, {"topic": topic, "partitions": partitions, "replicas": target},
                                  {"name": key, **detail})
        try:
            while True:
                if running.cancel.is_set():
                    self._ask(cluster, topic, dict.fromkeys(partitions), fault)
                    note({"cancelled_ns": time.time_ns(), "moving": last})  # an outcome, journaled: not a failure
                    return
                moving = self._moving(cluster, topic, partitions)
                if moving is not None:
                    state = {str(m.partition): {"replicas": list(m.replicas), "adding": list(m.adding),
                                                "removing": list(m.removing)} for m in moving}
                    if state != last:
                        note({"moving": state})
                        last = state
                    now = replicas_now(cluster, topic, partitions)
                    if not moving and now and all(sorted(r) == sorted(target) for r in now.values()):
                        note({"done_ns": time.time_ns(), "replicas_now": {str(p): r for p, r in now.items()}})
                        return
                running.sleep(POLL_S)
        finally:
            if throttled:
                self._lift(cluster, topic, note)

    def _lift(self, cluster: KafkaCluster, topic: str, note: Callable[[dict[str, Any]], None]) -> None:
        """Lift the throttle from every broker and the topic, again until each took it (ASK_S); journal what is
        left behind, if anything."""
        deadline, left = time.monotonic() + ASK_S, None
        while time.monotonic() < deadline:
            _, refused = self._throttle(cluster, topic, None, None if left is None else [int(b) for b in left
                                                                                          if b.isdigit()])
            left = refused
            if not left:
                note({"throttle_lifted_ns": time.time_ns()})
                return
            time.sleep(POLL_S)
        note({"throttle_left": left})

    @staticmethod
    def _moving(cluster: KafkaCluster, topic: str, partitions: list[int]) -> list[wire.Moving] | None:
        """The partitions still moving, or None when the controller cannot say now."""
        try:
            error, moving = wire.list_reassignments(admin_node(cluster), BROKER_PORT, topic, partitions)
        except (OSError, ConnectionError, ValueError, FaultError):
            return None
        return None if error else sorted(moving.values(), key=lambda m: m.partition)


REASSIGN = Reassign()
