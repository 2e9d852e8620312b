"""A Kafka cluster faultline did not make (inventory `provision: false`): learned, used through its own topic, left.

`ExistingCluster` is a `KafkaCluster` whose processes are the user's: bring-up
writes no config and starts nothing; it learns the cluster
(`testbed.kafka.existing_learn`: brokers, controller, racks, log directories,
the settings a story depends on, kept in the run folder's
`existing-cluster.json`), creates the run's topic and waits until it is led with
a full ISR. Its process faults act as the inventory says (`ForeignHosts.act`: an ssh
node host's command lines, a container's docker calls or command lines) and
find the processes again (`ForeignHosts.role_pid`); only what a fault stopped is
started again at the end. `collect`
copies the run's topic's partition directories from the brokers' log
directories (for the replica dumps) and nothing else; `remove_own` deletes the
topic, on every exit path.
Must never: write a config, start or signal a process but as the inventory says, or touch a topic,
group or setting other than the run's own topic.
"""

from __future__ import annotations

import json
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from testbed.addressing import Host
from testbed.errors import ClusterError, RuntimeFailure
from testbed.files import write_json_atomic
from testbed.kafka import config as kcfg
from testbed.kafka.bringup import StepClock
from testbed.kafka.cluster import KafkaCluster, NodeRole
from testbed.kafka.existing_learn import create_topic, delete_topic, learn
from testbed.runfolder import RunFolder
from testbed.runtime.base import ForeignHosts, Runtime

log = logging.getLogger("faultline.cluster")
# The port each role of a node listens on: how its process is found (the pid listening there).
PORTS: dict[str, int] = {"broker": kcfg.BROKER_PORT, "zookeeper": kcfg.ZK_CLIENT_PORT,
                         "controller": kcfg.CONTROLLER_PORT}
COMMAND_ROLE = {"broker": "broker", "zookeeper": "zookeeper", "controller": "zookeeper"}  # the inventory's words
WAIT_S = 90.0  # for a process to go after its stop or kill command, or to listen after its start command


@dataclass(frozen=True)
class ForeignProcess:
    """A process of the user's cluster, as found listening on its port (it was not started by this run)."""

    name: str
    host: Host
    pid: int


class CommandProcesses:
    """The nemesis's view of the node processes (`KafkaCluster.processes`), acting through the inventory's commands."""

    def __init__(self, cluster: ExistingCluster) -> None:
        self.cluster = cluster

    def _split(self, name: str) -> tuple[Host, NodeRole]:
        node, role = name.split("/", 1)
        return self.cluster.plan.host(node), role  # type: ignore[return-value]

    def kill(self, names: list[str], timeout: float = 10.0) -> list[str]:
        """Each one's kill command, all at once; the names still listening after `timeout`."""
        procs = [self._split(n) for n in names]
        with ThreadPoolExecutor(max(1, len(procs))) as pool:
            list(pool.map(lambda p: self.cluster.command(p[0], p[1], "kill"), procs))
        self.cluster.stopped.update((n.name, r) for n, r in procs)
        return [self.cluster.process_name(n, r) for n, r in procs if not self.cluster.wait_gone(n, r, timeout)]

    def get(self, name: str) -> ForeignProcess | None:
        return None  # not this run's: nothing to watch during start-up

    def exit_status(self, name: str) -> int | None:
        return None

    def log_tail(self, name: str, lines: int = 3) -> str:
        return ""


class ExistingCluster(KafkaCluster):
    def __init__(self, runtime: Runtime, settings: kcfg.ClusterSettings, folder: RunFolder) -> None:
        super().__init__(runtime, settings, folder)
        if not isinstance(runtime, ForeignHosts):
            raise RuntimeFailure(f"the {runtime.kind} runtime cannot act on a cluster it did not make")
        self.foreign: ForeignHosts = runtime
        self.processes = CommandProcesses(self)  # type: ignore[assignment]
        self.learned: dict[str, Any] = {}
        self.stopped: set[tuple[str, str]] = set()  # (node, role) a fault stopped or killed, until started again
        self._topic_made = False
        if folder.existing_cluster.exists():  # a run's folder found again (recover, cluster down): its topic may exist
            self.learned = json.loads(folder.existing_cluster.read_text())
            self._topic_made = True

    # -- bring-up: learn, make the topic -------------------------------------
    def write_configs(self) -> None:
        """Nothing: the cluster's configuration is the user's."""

    def bring_up(self, timeout: float = 90.0) -> None:
        clock = StepClock()
        self.learned = learn(self)
        write_json_atomic(self.folder.existing_cluster, self.learned)
        brokers = self.learned["brokers"]
        log.info("existing cluster: brokers %s, controller %s, %d topics; log dirs %s; racks %s",
                 ", ".join(f"{b} ({i['node']})" for b, i in sorted(brokers.items())), self.learned["controller"],
                 len(self.learned["topics"]), {b: i["log_dirs"] for b, i in sorted(brokers.items())},
                 {b: i["rack"] for b, i in sorted(brokers.items())})
        wanted = self.settings.controller
        if wanted is not None and self.learned["controller"] != wanted:
            log.warning("the spec wants broker %d as controller, the cluster's is %s: faultline does not move it",
                        wanted, self.learned["controller"])
        clock.step("learned")
        self._topic_made = True  # from here on, remove_own deletes it (a create that failed deletes nothing)
        create_topic(self)
        clock.step("topic created")
        self.readiness.wait_topic_ready(timeout)
        clock.step("topic ready")
        self.bring_up_steps = clock.steps

    def collect(self) -> None:
        """The run's topic's partition directories from every broker's log directories (the replica dumps')."""
        for node in self.nodes:
            info = (self.learned.get("brokers") or {}).get(str(node.broker_id)) or {}
            for directory in info.get("log_dirs", []):
                try:
                    self.foreign.fetch_from(node, directory, f"{self.topic}-*", self.node_folder(node).data("broker"))
                except RuntimeFailure as exc:
                    log.warning("could not fetch %s's partitions from %s: %s", self.topic, node.name, exc)

    def remove_own(self) -> None:
        """Delete the run's topic (every exit path, once it may exist); processes a fault left stopped start."""
        try:
            self.power_on_all()
        finally:
            if self._topic_made:
                delete_topic(self)
                self._topic_made = False

    # -- processes, through the inventory's commands ----------------------------
    def command(self, node: Host, role: str, action: str) -> None:
        """`action` of the node's `role` as the inventory says (ForeignHosts.act); ClusterError when it cannot."""
        try:
            self.foreign.act(node, COMMAND_ROLE[role], action, WAIT_S)
        except RuntimeFailure as exc:
            raise ClusterError(str(exc)) from exc

    def pid(self, node: Host, role: str) -> int | None:
        return self.foreign.role_pid(node, COMMAND_ROLE[role], PORTS[role])

    def pids(self, node: Host) -> dict[NodeRole, int | None]:
        return {role: self.pid(node, role) for role in self.roles}

    def process(self, node: Host, role: NodeRole) -> ForeignProcess | None:  # type: ignore[override]
        pid = self.pid(node, role)
        return None if pid is None else ForeignProcess(self.process_name(node, role), node, pid)

    def wait_gone(self, node: Host, role: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while self.pid(node, role) is not None:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.2)
        return True

    def start(self, node: Host, role: NodeRole) -> int:
        self.command(node, role, "start")
        deadline = time.monotonic() + WAIT_S
        while (pid := self.pid(node, role)) is None:
            if time.monotonic() > deadline:
                raise ClusterError(f"{self.process_name(node, role)} listens on no port {PORTS[role]} "
                                   f"{WAIT_S:.0f} s after its start command")
            time.sleep(0.2)
        self.stopped.discard((node.name, role))
        return pid

    def kill(self, node: Host, role: NodeRole) -> None:
        if self.processes.kill([self.process_name(node, role)], WAIT_S):
            raise ClusterError(f"{self.process_name(node, role)} still listens after its kill command")

    def stop(self, node: Host, role: NodeRole, timeout: float = 60.0) -> None:
        self.command(node, role, "stop")
        self.stopped.add((node.name, role))
        if not self.wait_gone(node, role, timeout):
            raise ClusterError(f"{self.process_name(node, role)} still listens {timeout:.0f} s after its stop command")

    def pause(self, node: Host, role: NodeRole) -> None:
        self.command(node, role, "pause")

    def resume(self, node: Host, role: NodeRole) -> None:
        self.command(node, role, "resume")

    def paused(self, node: Host, role: NodeRole) -> bool:
        return self.foreign.role_paused(node, COMMAND_ROLE[role], PORTS[role])

    def power_off(self, nodes: list[Host]) -> str:
        raise ClusterError("a power-off needs faultline's own processes (refused at validation with provision: false)")

    def power_on_all(self) -> None:
        """Start again what a fault stopped and nothing else (the cluster's other processes are the user's)."""
        for role in self.roles:
            for node in self.nodes:
                if (node.name, role) in self.stopped and self.pid(node, role) is None:
                    self.start(node, role)
        self.stopped.clear()


def new_cluster(runtime: Runtime, settings: kcfg.ClusterSettings, folder: RunFolder) -> KafkaCluster:
    """The cluster object of a run: the user's (`settings.provision` false) or one faultline makes."""
    if settings.provision:
        return KafkaCluster(runtime, settings, folder)
    return ExistingCluster(runtime, settings, folder)
