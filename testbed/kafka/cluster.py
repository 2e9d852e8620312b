"""A Kafka cluster (ZooKeeper or KRaft) on a runtime: configs, start, readiness, and per-process control.

One node per AZ runs one ZooKeeper server (KRaft: one controller) and one broker
(KRaft combined: one JVM that is both; `ClusterSettings.roles`). Every process is a
plain `java` started through the runtime inside its node's host, with config,
data and logs in the node's folder of the run (`RunFolder.node`): configs are
rendered here and put on the host, Kafka is installed on it by the runtime.
The nemesis uses `process`, `kill`, `stop`, `pause`, `resume`, `start`,
`power_off` and `power_on`.
Must never: signal a process that is not this cluster's, or start a second
copy of a process that is still alive.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, Literal, TypeVar

from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from testbed.addressing import AddressPlan, Host
from testbed.errors import ClusterError, RuntimeFailure
from testbed.kafka import bringup, kraft
from testbed.kafka import config as kcfg
from testbed.kafka.node_files import java_argv, render_node_configs
from testbed.kafka.settle import unsettled
from testbed.kafka.wire import BrokerView, broker_view, first_txn_coordinator, zookeeper_mode
from testbed.kafka.zk import read_snapshot, zk_snapshot
from testbed.processes import ProcessGroup
from testbed.runfolder import NodeFolder, RunFolder
from testbed.runtime.base import (
    PROCESSES_ONLY,
    LosesUnsyncedWrites,
    PowerCycled,
    PowerKinds,
    Process,
    Runtime,
    Software,
)

Role = Literal["zookeeper", "controller", "broker"]
ROLES: tuple[Role, ...] = ("zookeeper", "broker")  # ZooKeeper mode's; a cluster's own are `cluster.roles`
log = logging.getLogger("faultline.cluster")
PROCESS_CHECK_S = 0.2  # how often the readiness polls look whether a process exited
T = TypeVar("T")


def wait_for(what: str, check: Callable[[], T | None], timeout: float, interval: float = 0.2,
             why: Callable[[], str] | None = None) -> T:
    """Poll `check` until it returns something other than None; ClusterError naming `what` at the deadline, and
    what `why` says was still missing at the last look (or the last error)."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while True:
        try:
            result = check()
            if result is not None:
                return result
        except (OSError, ClusterError, ValueError) as exc:
            last_error = exc
        if time.monotonic() >= deadline:
            missing = why() if why else ""
            detail = f": {missing}" if missing else f" (last error: {last_error})" if last_error else ""
            raise ClusterError(f"timed out after {timeout:.0f} s waiting for {what}{detail}")
        time.sleep(interval)


class KafkaCluster:
    def __init__(self, runtime: Runtime, settings: kcfg.ClusterSettings, folder: RunFolder) -> None:
        self.runtime = runtime
        self.plan: AddressPlan = runtime.plan
        self.settings = settings
        self.roles: tuple[Role, ...] = settings.roles  # type: ignore[assignment]  # the node's JVMs, quorum first
        self.folder = folder
        self.topic = settings.topic
        self.processes = ProcessGroup(runtime, self._log_of)
        self._software: dict[str, Software] = {}
        self.bring_up_steps: dict[str, float] = {}  # seconds each step of `bring_up` took
        # During bring-up only: start again a broker found exited, if that is safe (True when it did).
        self.restart_exited_broker: Callable[[Host], bool] | None = None
        self._processes_checked = -PROCESS_CHECK_S  # when `check_processes` last looked
        # Called with a node that lost power, once it is back and before any of its processes starts (the
        # nemesis gives it the fault rules and link shaping it believes are in place: a power cycle may lose them).
        self.on_power_on: list[Callable[[Host], None]] = []
        self._powered_off: set[str] = set()
        self.unsettled = ""  # what `settled` found missing at its last look ('' once settled)

    # -- layout ------------------------------------------------------------
    @property
    def run_dir(self) -> Path:
        return self.folder.root

    @property
    def nodes(self) -> tuple[Host, ...]:
        return self.plan.nodes

    def node(self, broker_id: int) -> Host:
        return next(n for n in self.nodes if n.broker_id == broker_id)

    def node_folder(self, node: Host) -> NodeFolder:
        return self.folder.node(node.name)

    @property
    def bootstrap(self) -> str:
        return kcfg.bootstrap_servers(self.plan)

    @property
    def zk_connect(self) -> str:
        return kcfg.zookeeper_connect(self.plan)

    def process_name(self, node: Host, role: Role) -> str:
        return f"{node.name}/{role}"

    def _log_of(self, name: str) -> Path:
        node, role = name.split("/", 1)
        return self.folder.node(node).stdout(role)

    # -- configs and software ------------------------------------------------
    def software(self, node: Host) -> Software:
        if node.name not in self._software:
            self._software[node.name] = self.runtime.install(node, self.settings.kafka_version)
        return self._software[node.name]

    def write_configs(self) -> None:
        """Render every node's configs into its folder, with the host's own paths, and put them on the host;
        where the runtime can, put the nodes' data directories on the lose-unsynced-writes filesystem."""
        if self.settings.lose_unsynced_writes and not self.loses_unsynced_writes:
            log.warning("the %s runtime cannot drop unsynced writes: a power-off kills the nodes' processes and "
                        "their page cache survives (journaled as power-off, not power-cut)", self.runtime.kind)
        for node in self.nodes:
            f = self.node_folder(node)
            render_node_configs(self.plan, self.settings, node, f, partial(self.runtime.host_path, node))
            self.runtime.put(node, f.root)
            if self.loses_unsynced_writes:  # the metadata quorum's data too: ZooKeeper's, or KRaft's metadata log
                assert isinstance(self.runtime, LosesUnsyncedWrites)
                self.runtime.keep_unsynced(node, [f.data(r) for r in self.roles], f.logs_dir)
        if self.settings.kraft:
            kraft.format_storage(self, kraft.new_cluster_id())

    @property
    def loses_unsynced_writes(self) -> bool:
        """Whether a power-off of a node drops what it had not fsynced (the runtime can, and the spec wants it)."""
        return self.settings.lose_unsynced_writes and isinstance(self.runtime, LosesUnsyncedWrites)

    def _argv(self, node: Host, role: Role) -> list[str]:
        return java_argv(self.settings, node, role, self.node_folder(node), self.software(node),
                         partial(self.runtime.host_path, node))

    def collect(self) -> None:
        """Bring every node's logs, data and before-heal copies from its host into the run folder.

        Forensics: a node that cannot be read is logged, and the others are still fetched."""
        for node in self.nodes:
            f = self.node_folder(node)
            for path in (f.logs_dir, *(f.data(r) for r in self.roles if r != "zookeeper"), f.before_heal_dir):
                try:
                    self.runtime.fetch(node, path)
                except RuntimeFailure as exc:
                    log.warning("could not fetch %s from %s: %s", path, node.name, exc)

    # -- process control ---------------------------------------------------
    def process(self, node: Host, role: Role) -> Process | None:
        """The node's running process of `role`, or None."""
        return self.processes.running(self.process_name(node, role))

    def pids(self, node: Host) -> dict[Role, int | None]:
        """The pid (on its host) of each of the node's running processes; None where it is not running."""
        return {role: (p.pid if (p := self.process(node, role)) is not None else None) for role in self.roles}

    def start(self, node: Host, role: Role) -> int:
        try:
            if isinstance(self.runtime, PowerCycled):
                self.runtime.power_on(node)  # a host that lost power comes back first (a no-op when it is up)
            if node.name in self._powered_off:
                for hook in self.on_power_on:
                    hook(node)
                self._powered_off.discard(node.name)
            return self.processes.start(node, self.process_name(node, role), self._argv(node, role)).pid
        except RuntimeFailure as exc:
            raise ClusterError(str(exc)) from exc

    def signal(self, node: Host, role: Role, signum: int) -> int | None:
        process = self.processes.signal(self.process_name(node, role), signum)
        return None if process is None else process.pid

    def kill(self, node: Host, role: Role) -> None:
        if self.processes.kill([self.process_name(node, role)]):
            raise ClusterError(f"{self.process_name(node, role)} survived SIGKILL")

    def stop(self, node: Host, role: Role, timeout: float = 60.0) -> None:
        """Graceful stop (SIGTERM: a broker does a controlled shutdown); SIGKILL past `timeout`."""
        if self.processes.stop([self.process_name(node, role)], timeout):
            log.warning("%s did not stop within %.0f s; killed it", self.process_name(node, role), timeout)

    def pause(self, node: Host, role: Role) -> None:
        process = self._pausable(node, role)
        if process is not None:
            process.pause()

    def resume(self, node: Host, role: Role) -> None:
        process = self._pausable(node, role)
        if process is not None:
            process.resume()

    def paused(self, node: Host, role: Role) -> bool:
        process = self._pausable(node, role)
        return process is not None and process.paused()

    def _pausable(self, node: Host, role: Role) -> Any:
        try:
            return self.processes.pausable(self.process_name(node, role))
        except RuntimeFailure as exc:
            raise ClusterError(str(exc)) from exc

    def power_off(self, nodes: list[Host]) -> str:
        """Every process of the nodes dies at the same instant: the whole host where the runtime can cut its
        power, else SIGKILL to each process. Returns what it was: `power-cut` where the nodes' unsynced writes
        were dropped with them (`loses_unsynced_writes`), else `power-off` (the page cache survives)."""
        runtime = self.runtime
        self._powered_off.update(node.name for node in nodes)
        if isinstance(runtime, PowerCycled):
            with ThreadPoolExecutor(len(nodes)) as pool:  # every host at once, not one after the other
                list(pool.map(runtime.power_off, nodes))
        names = [self.process_name(node, role) for node in nodes for role in self.roles]
        if self.processes.kill(names):
            raise ClusterError(f"{', '.join(n.name for n in nodes)} survived power-off")
        if isinstance(runtime, PowerKinds) and any(runtime.power_kind(n) == PROCESSES_ONLY for n in nodes):
            return "power-off"  # a host whose power-off kept its page cache (ssh: neither unsyncfs nor a command)
        return "power-cut" if self.loses_unsynced_writes else "power-off"

    def power_on(self, node: Host) -> None:
        for role in self.roles:
            if self.process(node, role) is None:
                self.start(node, role)

    def power_on_all(self) -> None:
        """Start every process that is not running: ZooKeeper servers (KRaft controllers) first, then brokers."""
        for role in self.roles:
            for node in self.nodes:
                if self.process(node, role) is None:
                    self.start(node, role)

    # -- bring-up and readiness --------------------------------------------
    def bring_up(self, timeout: float = 90.0) -> None:
        """Start every process, create the topic, wait until it is all ready (`testbed.kafka.bringup`);
        the seconds of each step in `bring_up_steps`."""
        self.bring_up_steps = bringup.bring_up(self, timeout)

    def check_processes(self) -> None:
        """ClusterError naming a process of this cluster that exited (during bring-up, a broker that exited
        for want of a ZooKeeper quorum is started again instead: `restart_exited_broker`). At most once per
        PROCESS_CHECK_S: the readiness polls run faster, and on docker or ssh each look is a round trip."""
        if time.monotonic() - self._processes_checked < PROCESS_CHECK_S:
            return
        self._processes_checked = time.monotonic()
        for node in self.nodes:
            for role in self.roles:
                name = self.process_name(node, role)
                process = self.processes.get(name)
                if process is None or process.alive():
                    continue
                if role == "broker" and self.restart_exited_broker is not None and self.restart_exited_broker(node):
                    continue
                raise ClusterError(f"{name} exited during start-up: {self.processes.log_tail(name)}")

    def wait_quorum(self, timeout: float, interval: float = 0.2) -> dict[str, str]:
        if self.settings.kraft:
            return {"active controller": str(wait_for("a KRaft quorum", lambda: kraft.quorum_ready(self), timeout))}

        def quorum() -> dict[str, str] | None:
            self.check_processes()
            modes = {n.name: zookeeper_mode(n.address, kcfg.ZK_CLIENT_PORT, 1.0) for n in self.nodes}
            leaders = [m for m in modes.values() if m == "leader"]
            ok = len(leaders) == 1 and all(m in ("leader", "follower") for m in modes.values())
            return modes if ok else None
        return wait_for("a ZooKeeper quorum (one leader, every server serving)", quorum, timeout, interval)

    def wait_brokers(self, timeout: float, zk: KazooClient | None = None, interval: float = 0.2) -> dict[str, Any]:
        """Every broker registered, a controller elected and known to every broker; `zk`: a session to read
        ZooKeeper through (else one per poll)."""
        want = sorted(n.broker_id for n in self.nodes)
        if self.settings.kraft:
            return kraft.wait_brokers(self, want, timeout, interval)

        def registered() -> dict[str, Any] | None:
            self.check_processes()
            snap = read_snapshot(zk, self.zk_connect) if zk is not None else zk_snapshot(self.zk_connect, None, 2.0)
            if snap["brokers"] != want or snap["controller"] is None:
                return None
            # Registered is not yet known: each broker learns its peers from the controller.
            views = self.views()
            known = all(v is not None and sorted(v.brokers) == want and v.controller == snap["controller"]
                        for v in views.values())
            return snap if known else None
        return wait_for(f"brokers {want} registered in ZooKeeper, a controller elected and known to every broker",
                        registered, timeout, interval)

    def create_topic(self) -> None:
        """Create the run's topics (`topic` and any `extra_topics`), each with the same layout and settings."""
        s = self.settings
        # librdkafka's own lines (e.g. a BGQUEUE notice on close) through logging: harness.log, not the terminal.
        admin = AdminClient({"bootstrap.servers": self.bootstrap, "socket.timeout.ms": 5000},
                            logger=logging.getLogger("rdkafka.admin"))
        new = []
        for topic in s.topics:
            if s.replica_assignment is not None:
                new.append(NewTopic(topic, num_partitions=len(s.replica_assignment),
                                    replica_assignment=[list(r) for r in s.replica_assignment],
                                    config=kcfg.flush_configs(s)))
            else:
                new.append(NewTopic(topic, num_partitions=s.partitions, replication_factor=s.replication_factor,
                                    config=kcfg.flush_configs(s)))
        futures = admin.create_topics(new, operation_timeout=20, request_timeout=25)
        for topic in s.topics:
            try:
                futures[topic].result(timeout=30)
            except Exception as exc:  # KafkaException carries the broker's error
                raise ClusterError(f"creating topic {topic}: {exc}") from exc

    def expected_replicas(self) -> int:
        if self.settings.replica_assignment is not None:
            return len(self.settings.replica_assignment[0])
        return self.settings.replication_factor

    def views(self) -> dict[str, BrokerView | None]:
        """Each broker's own view, asked from the control plane (never cut off); KRaft: `kraft.with_active_controller`."""
        def ask(node: Host) -> BrokerView | None:
            try:
                return broker_view(node.address, kcfg.BROKER_PORT, list(self.settings.topics), timeout=2.0)
            except (OSError, ConnectionError, ValueError):
                return None
        with ThreadPoolExecutor(len(self.nodes)) as pool:
            views = dict(zip([n.name for n in self.nodes], pool.map(ask, self.nodes), strict=True))
        return kraft.with_active_controller(self, views) if self.settings.kraft else views

    def transactional_id(self, process: str) -> str:
        """The transactional.id of a transactional workload process: the same for its every instance, no other run's."""
        return f"{self.runtime.prefix}-{process}"

    def txn_coordinator(self, transactional_id: str) -> int | None:
        """The broker the first answering broker names as `transactional_id`'s transaction coordinator, or None."""
        return first_txn_coordinator([n.address for n in self.nodes], kcfg.BROKER_PORT, transactional_id)

    def registered(self, node: Host) -> bool:
        """Whether `node`'s broker is registered in ZooKeeper now; ClusterError if no server answers. KRaft: never
        in the way (a broker started again re-registers once the controller has fenced its old self)."""
        return False if self.settings.kraft else node.broker_id in zk_snapshot(self.zk_connect, None, 2.0)["brokers"]

    def settled(self) -> dict[str, BrokerView] | None:
        """The views when every broker agrees on one leader per partition with a full ISR, else None; what was
        missing at the last look stays in `self.unsettled` (settle.unsettled's words)."""
        views = self.views()
        want = self.settings.partitions if self.settings.replica_assignment is None \
            else len(self.settings.replica_assignment)
        self.unsettled = unsettled(views, self.settings.topics, want, self.expected_replicas())
        return None if self.unsettled else {k: v for k, v in views.items() if v is not None}

    def wait_settled(self, what: str, timeout: float, interval: float = 0.2,
                     check: Callable[[], dict[str, BrokerView] | None] | None = None) -> dict[str, BrokerView]:
        """Poll `check` (default: `settled`) until the cluster has settled; at the deadline a ClusterError naming
        `what` and what was still missing at the last look (`self.unsettled`)."""
        return wait_for(what, check or self.settled, timeout, interval, why=lambda: self.unsettled)

    def wait_topic_ready(self, timeout: float, interval: float = 0.2) -> dict[str, BrokerView]:
        def ready() -> dict[str, BrokerView] | None:
            self.check_processes()
            return self.settled()
        return self.wait_settled(f"topic {', '.join(self.settings.topics)} led everywhere with a full ISR, agreed by "
                                 "every broker", timeout, interval, check=ready)

