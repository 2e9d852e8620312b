"""Operations as faults: an operator's action that runs in its own thread from its start, its steps journaled.

`rolling-restart` restarts every broker in turn, as an operator rolling a cluster does: a graceful
stop (SIGTERM: a controlled shutdown, which moves the broker's leaderships away first), a start once
ZooKeeper has dropped its registration (`nemesis.faults.start_again`), then, before the next broker,
either a wait until every partition of the run's topics has a leader and a full ISR again (bounded by
`wait_s`: past it the roll stops there, as an operator's script would, and says so) or a fixed pause.
The controller's broker comes last (or first, or at a chosen position), taken when the roll starts.
Each broker's step is one `info` row of the nemesis journal, written when the step ends: the broker,
when its stop was asked and done, when it started, when its ISR was full again (or that it never was),
and each partition's leader before the stop, once it was down, and after the wait.

An operation's start returns at once, so the schedule goes on and other faults may start and stop
during it (an AZ isolated mid-roll); its stop waits for it to end, and cancels it past a bound (the
broker of the current step is started again either way). The registry (`nemesis.registry`) names the
instances; `nemesis.upgrade` (a roll onto another Kafka version) and `nemesis.reassign` are the others.

Must never: leave a broker it stopped down, or signal a process that is not the cluster's broker.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nemesis.fault_base import FaultEnv, Injected
from nemesis.faults import GRACEFUL_STOP_S, STALE_GRACE_S, start_again
from testbed.errors import FaultError, HarnessError
from testbed.kafka.kraft import controller_caught_up

if TYPE_CHECKING:
    from nemesis.fault_spec import FaultSpec
    from nemesis.targets import Resolver
    from testbed.addressing import Host
    from testbed.kafka.cluster import KafkaCluster, NodeRole

POLL_S = 0.5
CANCEL_WAIT_S = 180.0  # once cancelled, how long the current step may take to end (a stop, a start)
log = logging.getLogger("faultline.nemesis")


@dataclass
class Running:
    """One operation's thread, how to cancel it, and what went wrong in it."""

    bound_s: float  # how long its stop waits before cancelling it
    cancel: threading.Event = field(default_factory=threading.Event)
    error: str | None = None
    thread: threading.Thread | None = None

    def sleep(self, seconds: float) -> bool:
        """Wait `seconds`; False if cancelled meanwhile."""
        return not self.cancel.wait(seconds)


class Operation:
    """What every operation shares: a thread per start, by the fault's name; the stop waits for it."""

    def __init__(self) -> None:
        self._running: dict[str, Running] = {}
        self._lock = threading.Lock()

    def launch(self, key: str, bound_s: float, body: Callable[[Running], object]) -> None:
        running = Running(bound_s)

        def main() -> None:
            try:
                body(running)
            except (HarnessError, OSError) as exc:
                log.error("nemesis: %s failed: %s", key, exc)
                running.error = str(exc)

        running.thread = threading.Thread(target=main, name=f"operation-{key}", daemon=True)
        with self._lock:
            self._running[key] = running
        running.thread.start()

    def undo(self, injected: Injected, env: FaultEnv) -> None:
        """Wait for the operation to end (at most its bound, then cancel it); FaultError if it failed."""
        with self._lock:
            running = self._running.get(injected.key)
        if running is None or running.thread is None:
            return  # undone already, or a dead harness's: nothing of it runs here
        running.thread.join(running.bound_s)
        if running.thread.is_alive():
            log.warning("nemesis: %s still running after %.0f s; cancelling it", injected.key, running.bound_s)
            running.cancel.set()
            running.thread.join(CANCEL_WAIT_S)
            if running.thread.is_alive():
                raise FaultError(f"{injected.key} did not end within {CANCEL_WAIT_S:.0f} s of its cancel")
        with self._lock:
            self._running.pop(injected.key, None)
        if running.error is not None:
            raise FaultError(f"{injected.key}: {running.error}")


def leaders(cluster: KafkaCluster) -> dict[str, int | None]:
    """Each partition of the topic under test and its leader, as the first broker that answers sees it."""
    for view in cluster.views().values():
        if view is not None and cluster.topic in view.partitions:
            return {str(p.partition): p.leader for p in sorted(view.partitions[cluster.topic],
                                                               key=lambda p: p.partition)}
    return {}


def roll_order(nodes: tuple[Host, ...] | list[Host], controller: int | None, at: str | int) -> list[Host]:
    """The brokers in id order with the controller's moved `last`, `first`, or to position `at` (capped)."""
    rest = [n for n in sorted(nodes, key=lambda n: n.broker_id) if n.broker_id != controller]
    mine = [n for n in nodes if n.broker_id == controller]
    if not mine:
        return rest
    position = len(rest) if at == "last" else 0 if at == "first" else min(int(at), len(rest))
    return rest[:position] + mine + rest[position:]


class RollingRestart(Operation):
    def inject(self, spec: FaultSpec, resolver: Resolver, env: FaultEnv, key: str) -> Injected:
        cluster, opts = env.cluster, spec.options
        controller, order = self.order(spec, resolver, cluster)
        self.launch(key, self.per_roll_s(cluster, opts, order),
                    lambda running: self._roll(running, env, spec.fault, key, order, opts))
        targets = {"brokers": [n.broker_id for n in order], "controller": controller}
        detail = {"order": [n.name for n in order], "wait": opts["wait"], "wait_s": opts["wait_s"]}
        return Injected(key, spec.fault, targets, detail, tuple((n.name, "broker") for n in order))

    @staticmethod
    def order(spec: FaultSpec, resolver: Resolver, cluster: KafkaCluster) -> tuple[int, list[Host]]:
        """The controller's broker and the roll's order; FaultError if a broker is down (a roll starts whole)."""
        controller = resolver.node("controller").broker_id
        order = roll_order(cluster.nodes, controller, spec.options["controller_at"])
        down = [cluster.process_name(n, "broker") for n in order if cluster.pids(n)["broker"] is None]
        if down:
            raise FaultError(f"{spec.fault}: {', '.join(down)} not running; a roll starts from a whole cluster")
        return controller, order

    @staticmethod
    def per_roll_s(cluster: KafkaCluster, opts: Mapping[str, Any], order: list[Host]) -> float:
        """The longest one roll of `order` may take: per broker a clean stop, ZooKeeper's expiry, the wait."""
        per_broker = GRACEFUL_STOP_S + cluster.settings.zookeeper_session_timeout_ms / 1000 + STALE_GRACE_S
        return (per_broker + (opts["wait_s"] if opts["wait"] == "isr" else opts["wait"])) * len(order)

    def _roll(self, running: Running, env: FaultEnv, fault: str, key: str, order: list[Host],
              opts: Mapping[str, Any], while_down: Callable[[Host], dict[str, Any]] | None = None,
              role: NodeRole = "broker") -> bool:
        """Roll `order`'s `role` processes (brokers; a rolling upgrade's KRaft controllers); True once every one was
        restarted and waited for. `while_down(node)`, called once the node's process has exited and before its start
        (a rolling upgrade's change of version), returns what the step's row adds to its targets."""
        cluster = env.cluster
        for index, node in enumerate(order):
            if running.cancel.is_set():
                self._note(env, fault, key, node, {"step": index, "cancelled": True})
                return False
            step: dict[str, Any] = {"step": index, "leaders_before": leaders(cluster), "stop_ns": time.time_ns()}
            changed: dict[str, Any] = {}
            try:
                cluster.stop(node, role, GRACEFUL_STOP_S)
                step["stopped_ns"] = time.time_ns()
                step["leaders_down"] = leaders(cluster)
                if while_down is not None:
                    changed = while_down(node)
            finally:
                start_again(cluster, [(node, role)])  # never leave it down, whatever happened
            step["started_ns"] = time.time_ns()
            full = self._wait(running, cluster, opts, step, node, role)
            step["leaders_after"] = leaders(cluster)
            self._note(env, fault, key, node, step, changed)
            if not full:
                what = (f"the ISR was not full {opts['wait_s']:g} s after broker {node.broker_id} started: "
                        f"{cluster.unsettled}" if role == "broker" else f"{cluster.process_name(node, role)} had not caught up "
                        f"with the KRaft quorum's leader {opts['wait_s']:g} s after it started")
                self._note(env, fault, key, node, {"step": index, "aborted": what}, changed)
                return False
        return True

    @staticmethod
    def _wait(running: Running, cluster: KafkaCluster, opts: Mapping[str, Any], step: dict[str, Any], node: Host,
              role: NodeRole = "broker") -> bool:
        """The wait before the next process: a fixed pause, or until the ISR is full (a KRaft controller's: until it
        answers again and the quorum's leader has it caught up, `kraft.controller_caught_up`), False if not within
        wait_s."""
        if opts["wait"] != "isr":
            running.sleep(float(opts["wait"]))
            step["paused_s"] = opts["wait"]
            return True
        mark = "isr_full_ns" if role == "broker" else "quorum_ready_ns"
        deadline = time.monotonic() + opts["wait_s"]
        while time.monotonic() < deadline and not running.cancel.is_set():
            if (cluster.settled() if role == "broker" else controller_caught_up(cluster, node)) is not None:
                step[mark] = time.time_ns()
                return True
            running.sleep(POLL_S)
        step[mark] = None
        step["unsettled"] = cluster.unsettled
        return running.cancel.is_set()  # a cancelled wait is not a failed one: the loop stops on the cancel

    @staticmethod
    def _note(env: FaultEnv, fault: str, key: str, node: Host, detail: dict[str, Any],
              targets: Mapping[str, Any] | None = None) -> None:
        if env.journal is not None:
            env.journal.write("info", fault, {"brokers": [node.broker_id], "nodes": [node.name], **(targets or {})},
                              {"name": key, "broker": node.broker_id, **detail})


ROLLING_RESTART = RollingRestart()
