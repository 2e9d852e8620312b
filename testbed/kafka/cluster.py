"""A Kafka cluster (ZooKeeper or KRaft) on a runtime: its layout, configs, per-process control, power, live views.

One node per AZ runs one ZooKeeper server (KRaft: one controller) and one broker
(KRaft combined: one JVM that is both; `ClusterSettings.roles`). Every process is a
plain `java` started through the runtime inside its node's host, with config,
data and logs in the node's folder of the run (`RunFolder.node`): configs are
rendered here and put on the host, Kafka is installed on it by the runtime.
The nemesis uses `process`, `kill`, `stop`, `pause`, `resume`, `start`,
`power_off` and `power_on`. Bring-up is `testbed.kafka.bringup` (topic creation included), its readiness
polls `readiness` (`testbed.kafka.readiness`); the live views (`views`, `settled`, `registered`, the
transaction coordinator) stay here, where the nemesis and the run ask them.
Must never: signal a process that is not this cluster's, or start a second
copy of a process that is still alive.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any, Literal

from testbed.addressing import AddressPlan, Host
from testbed.errors import ClusterError, RuntimeFailure
from testbed.journal_names import POWER_CUT, POWER_OFF
from testbed.kafka import bringup, kraft, migration
from testbed.kafka import config as kcfg
from testbed.kafka.node_files import java_argv, render_node_configs
from testbed.kafka.readiness import Readiness
from testbed.kafka.settle import unsettled
from testbed.kafka.waiting import wait_for
from testbed.kafka.wire import GROUP_KEY, BrokerView, broker_view, first_coordinator, first_txn_coordinator
from testbed.kafka.zk import zk_snapshot
from testbed.processes import ProcessGroup
from testbed.runfolder import NodeFolder, RunFolder
from testbed.runtime.base import (
    PROCESSES_ONLY,
    LosesUnsyncedWrites,
    PowerCycled,
    PowerKinds,
    Process,
    Runtime,
    ShiftsClocks,
    Software,
)

NodeRole = Literal["zookeeper", "controller", "broker"]  # which of a node's JVMs
ROLES: tuple[NodeRole, ...] = ("zookeeper", "broker")  # ZooKeeper mode's; a cluster's own are `cluster.roles`
log = logging.getLogger("faultline.cluster")


class KafkaCluster:
    def __init__(self, runtime: Runtime, settings: kcfg.ClusterSettings, folder: RunFolder) -> None:
        self.runtime = runtime
        self.plan: AddressPlan = runtime.plan
        self.settings = settings
        self.roles: tuple[NodeRole, ...] = settings.roles  # type: ignore[assignment]  # the node's JVMs, quorum first
        self.folder = folder
        self.topic = settings.topic
        self.processes = ProcessGroup(runtime, self._log_of)
        self._software: dict[tuple[str, str], Software] = {}  # (node, Kafka version) -> what runs it there
        # The version each node's broker (KRaft controller) runs where it is not the cluster's (a rolling upgrade's
        # `set_broker`, `set_controller`); the ZooKeeper servers stay on `settings.kafka_version`.
        self.broker_versions: dict[str, str] = {}
        self.controller_versions: dict[str, str] = {}
        self.bring_up_steps: dict[str, float] = {}  # seconds each step of `bring_up` took
        self.readiness = Readiness(self)  # the starting cluster's polls (bring-up's and KRaft's)
        # Called with a node that lost power, once it is back and before any of its processes starts (the
        # nemesis gives it the fault rules and link shaping it believes are in place: a power cycle may lose them).
        self.on_power_on: list[Callable[[Host], None]] = []
        self._powered_off: set[str] = set()
        self.unsettled = ""  # what `settled` found missing at its last look ('' once settled)
        # A ZooKeeper cluster's migration to KRaft (nemesis.migrate): the phase it has reached (None: none); once
        # the quorum leads (`migration.kraft_leads`) the views take the active controller from it, as KRaft's do.
        self.migration_phase: str | None = None

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

    def process_name(self, node: Host, role: NodeRole) -> str:
        return f"{node.name}/{role}"

    def _log_of(self, name: str) -> Path:
        node, role = name.split("/", 1)
        return self.folder.node(node).stdout(role)

    # -- configs and software ------------------------------------------------
    def software(self, node: Host, version: str | None = None) -> Software:
        """What runs Kafka `version` (default: the cluster's) on `node`, installed there on first use."""
        version = version or self.settings.kafka_version
        if (node.name, version) not in self._software:
            self._software[node.name, version] = self.runtime.install(node, version)
        return self._software[node.name, version]

    def broker_version(self, node: Host) -> str:
        """The Kafka version `node`'s broker runs (or runs at its next start)."""
        return self.broker_versions.get(node.name, self.settings.kafka_version)

    def set_controller(self, node: Host, version: str) -> None:
        """From its next start, `node`'s KRaft controller runs Kafka `version` (its keys are the same in every KRaft
        release faultline runs): a rolling upgrade's step, the controller stopped."""
        if self.process(node, "controller") is not None:
            raise ClusterError(f"{self.process_name(node, 'controller')} is running: its version changes only while down")
        self.software(node, version)
        self.controller_versions[node.name] = version

    def set_broker(self, node: Host, version: str, overrides: dict[str, str], kraft: bool = False) -> None:
        """From its next start, `node`'s broker runs Kafka `version` with `overrides` on top of the spec's keys (its
        server.properties rendered again and put on the host): a rolling upgrade's step, the broker stopped.
        `kraft`: as a KRaft broker of separate controllers (a migration's last roll, testbed.kafka.migration)."""
        if self.process(node, "broker") is not None:
            raise ClusterError(f"{self.process_name(node, 'broker')} is running: its version changes only while down")
        self.software(node, version)  # first: a version the host cannot run fails here, its files untouched
        settings = replace(self.settings, kafka_version=version,
                           broker_overrides={**self.settings.broker_overrides, **overrides})
        if kraft:
            settings = replace(settings, metadata="kraft", kraft_controllers="separate")
        f = self.node_folder(node)
        on_host = partial(self.runtime.host_path, node)
        f.config("broker").write_text(kcfg.server_properties(self.plan, node, settings, on_host(f.data("broker"))))
        self.runtime.put(node, f.config_dir)
        self.broker_versions[node.name] = version

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

    def _argv(self, node: Host, role: NodeRole) -> list[str]:
        version = self.broker_version(node) if role == "broker" else \
            self.controller_versions.get(node.name, self.settings.kafka_version)
        return java_argv(self.settings, node, role, self.node_folder(node), self.software(node, version),
                         partial(self.runtime.host_path, node))

    def clock_shifted(self, role: NodeRole) -> bool:
        """Whether the role's processes start on a shifted clock (`shifted_clocks`: a ZooKeeper server or KRaft
        controller is the spec's `zookeeper`)."""
        return ("broker" if role == "broker" else "zookeeper") in self.settings.shifted_clocks

    def _clock_env(self, node: Host, role: NodeRole) -> dict[str, str] | None:
        """With clock faults on its role in the spec, the environment that puts the process's wall clock on its
        offset file."""
        if not self.clock_shifted(role):
            return None
        if not isinstance(self.runtime, ShiftsClocks):
            raise RuntimeFailure(f"the {self.runtime.kind} runtime cannot shift a process's clock")
        return self.runtime.clock_env(node, self.clock_offset_file(node, role))

    def clock_offset_file(self, node: Host, role: NodeRole) -> Path:
        """Where the process's clock offset is kept (a run-folder path: the runtime keeps it on the host)."""
        return self.node_folder(node).clock_offset(role)

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

    def remove_own(self) -> None:
        """What the run made on a cluster that outlives it (testbed.kafka.existing); nothing here: the hosts go."""

    # -- process control ---------------------------------------------------
    def process(self, node: Host, role: NodeRole) -> Process | None:
        """The node's running process of `role`, or None."""
        return self.processes.running(self.process_name(node, role))

    def pids(self, node: Host) -> dict[NodeRole, int | None]:
        """The pid (on its host) of each of the node's running processes; None where it is not running."""
        return {role: (p.pid if (p := self.process(node, role)) is not None else None) for role in self.roles}

    def start(self, node: Host, role: NodeRole) -> int:
        try:
            if isinstance(self.runtime, PowerCycled):
                self.runtime.power_on(node)  # a host that lost power comes back first (a no-op when it is up)
            if node.name in self._powered_off:
                for hook in self.on_power_on:
                    hook(node)
                self._powered_off.discard(node.name)
            return self.processes.start(node, self.process_name(node, role), self._argv(node, role),
                                        self._clock_env(node, role)).pid
        except RuntimeFailure as exc:
            raise ClusterError(str(exc)) from exc

    def signal(self, node: Host, role: NodeRole, signum: int) -> int | None:
        process = self.processes.signal(self.process_name(node, role), signum)
        return None if process is None else process.pid

    def kill(self, node: Host, role: NodeRole) -> None:
        if self.processes.kill([self.process_name(node, role)]):
            raise ClusterError(f"{self.process_name(node, role)} survived SIGKILL")

    def stop(self, node: Host, role: NodeRole, timeout: float = 60.0) -> None:
        """Graceful stop (SIGTERM: a broker does a controlled shutdown); SIGKILL past `timeout`."""
        if self.processes.stop([self.process_name(node, role)], timeout):
            log.warning("%s did not stop within %.0f s; killed it", self.process_name(node, role), timeout)

    def pause(self, node: Host, role: NodeRole) -> None:
        process = self._pausable(node, role)
        if process is not None:
            process.pause()

    def resume(self, node: Host, role: NodeRole) -> None:
        process = self._pausable(node, role)
        if process is not None:
            process.resume()

    def paused(self, node: Host, role: NodeRole) -> bool:
        process = self._pausable(node, role)
        return process is not None and process.paused()

    def _pausable(self, node: Host, role: NodeRole) -> Any:
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
            return POWER_OFF  # a host whose power-off kept its page cache (ssh: neither unsyncfs nor a command)
        return POWER_CUT if self.loses_unsynced_writes else POWER_OFF

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

    # -- bring-up and live views --------------------------------------------
    def bring_up(self, timeout: float = 90.0) -> None:
        """Start every process, create the topic, wait until it is all ready (`testbed.kafka.bringup`);
        the seconds of each step in `bring_up_steps`."""
        self.bring_up_steps = bringup.bring_up(self, timeout)

    def expected_replicas(self) -> int:
        if self.settings.replica_assignment is not None:
            return len(self.settings.replica_assignment[0])
        return self.settings.replication_factor

    def views(self) -> dict[str, BrokerView | None]:
        """Each broker's own view, asked from the control plane (never cut off); KRaft, or once a migration has
        handed the cluster to the quorum: `kraft.with_active_controller`."""
        def ask(node: Host) -> BrokerView | None:
            try:
                return broker_view(node.address, kcfg.BROKER_PORT, list(self.settings.topics), timeout=2.0)
            except (OSError, ConnectionError, ValueError):
                return None
        with ThreadPoolExecutor(len(self.nodes)) as pool:
            views = dict(zip([n.name for n in self.nodes], pool.map(ask, self.nodes), strict=True))
        kraft_led = self.settings.kraft or migration.kraft_leads(self)
        return kraft.with_active_controller(self, views) if kraft_led else views

    def transactional_id(self, process: str) -> str:
        """The transactional.id of a transactional workload process: the same for its every instance, no other run's."""
        return f"{self.runtime.prefix}-{process}"

    def txn_coordinator(self, transactional_id: str) -> int | None:
        """The broker the first answering broker names as `transactional_id`'s transaction coordinator, or None."""
        return first_txn_coordinator([n.address for n in self.nodes], kcfg.BROKER_PORT, transactional_id)

    def group_coordinator(self, group: str) -> int | None:
        """The broker the first answering broker names as consumer group `group`'s coordinator, or None."""
        return first_coordinator([n.address for n in self.nodes], kcfg.BROKER_PORT, group, GROUP_KEY)

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
