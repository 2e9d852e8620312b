"""A Kafka + ZooKeeper cluster on a runtime: configs, start, readiness, and per-process control.

One node per AZ runs one ZooKeeper server and one broker. Every process is a
plain `java` started through the runtime inside its node's host, with config,
data and logs under `RUN_DIR/nodes/<node>/`. The nemesis uses `pids`, `kill`,
`stop`, `pause`, `resume`, `start`, `power_off` and `power_on`.
Must never: signal a process that is not this cluster's, or start a second
copy of a process that is still alive.
"""

from __future__ import annotations

import logging
import signal
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal, TypeVar

from confluent_kafka.admin import AdminClient, NewTopic

from testbed.addressing import AddressPlan, Host
from testbed.errors import ClusterError
from testbed.kafka import config as kcfg
from testbed.kafka.dist import classpath
from testbed.kafka.wire import BrokerView, broker_view, zookeeper_mode
from testbed.kafka.zk import zk_snapshot
from testbed.runtime.base import Runtime
from testbed.runtime.procs import is_alive, run_of, wait_dead

Role = Literal["zookeeper", "broker"]
ROLES: tuple[Role, ...] = ("zookeeper", "broker")
MAIN_CLASS = {"zookeeper": "org.apache.zookeeper.server.quorum.QuorumPeerMain", "broker": "kafka.Kafka"}
log = logging.getLogger("faultline.cluster")
T = TypeVar("T")


def wait_for(what: str, check: Callable[[], T | None], timeout: float, interval: float = 0.2) -> T:
    """Poll `check` until it returns something other than None; ClusterError naming `what` at the deadline."""
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
            detail = f" (last error: {last_error})" if last_error else ""
            raise ClusterError(f"timed out after {timeout:.0f} s waiting for {what}{detail}")
        time.sleep(interval)


class KafkaCluster:
    def __init__(self, runtime: Runtime, settings: kcfg.ClusterSettings, run_dir: Path) -> None:
        self.runtime = runtime
        self.plan: AddressPlan = runtime.plan
        self.settings = settings
        self.run_dir = run_dir
        self.topic = settings.topic

    # -- layout ------------------------------------------------------------
    @property
    def nodes(self) -> tuple[Host, ...]:
        return self.plan.nodes

    def node(self, broker_id: int) -> Host:
        return next(n for n in self.nodes if n.broker_id == broker_id)

    def node_dir(self, node: Host) -> Path:
        return self.run_dir / "nodes" / node.name

    @property
    def bootstrap(self) -> str:
        return kcfg.bootstrap_servers(self.plan)

    @property
    def zk_connect(self) -> str:
        return kcfg.zookeeper_connect(self.plan)

    def process_name(self, node: Host, role: Role) -> str:
        return f"{node.name}/{role}"

    # -- configs -----------------------------------------------------------
    def write_configs(self) -> None:
        for node in self.nodes:
            base = self.node_dir(node)
            for sub in ("config", "zookeeper-data", "kafka-data", "logs/zookeeper", "logs/broker"):
                (base / sub).mkdir(parents=True, exist_ok=True)
            (base / "zookeeper-data" / "myid").write_text(f"{node.index}\n")
            (base / "config" / "zoo.cfg").write_text(kcfg.zoo_cfg(self.plan, node, base / "zookeeper-data"))
            (base / "config" / "server.properties").write_text(
                kcfg.server_properties(self.plan, node, self.settings, base / "kafka-data"))
            for role in ROLES:
                (base / "config" / f"log4j-{role}.properties").write_text(
                    kcfg.log4j_properties(base / "logs" / role))

    def _argv(self, node: Host, role: Role) -> list[str]:
        base = self.node_dir(node)
        heap = self.settings.broker_heap_mb if role == "broker" else self.settings.zookeeper_heap_mb
        conf = base / "config" / ("server.properties" if role == "broker" else "zoo.cfg")
        return ["java", f"-Xms{heap}m", f"-Xmx{heap}m", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                "-XX:+ExitOnOutOfMemoryError", "-Djava.awt.headless=true", "-Xss512k",
                f"-Dlog4j.configuration=file:{base / 'config' / f'log4j-{role}.properties'}",
                f"-Dkafka.logs.dir={base / 'logs' / role}", f"-Dfaultline.node={node.name}",
                "-cp", classpath(self.settings.kafka_version), MAIN_CLASS[role], str(conf)]

    # -- process control ---------------------------------------------------
    def pids(self, node: Host) -> dict[Role, int | None]:
        """The live pid of each of the node's processes (None where it is not running)."""
        procs = self.runtime_state_processes()
        out: dict[Role, int | None] = {}
        for role in ROLES:
            info = procs.get(self.process_name(node, role))
            pid = int(info["pid"]) if info else None
            # Threads share the pid space, so a dead process's pid is soon reused: check it is still ours.
            ours = pid is not None and is_alive(pid) and run_of(pid) == self.runtime.prefix
            out[role] = pid if ours else None
        return out

    def runtime_state_processes(self) -> dict[str, Any]:
        state = getattr(self.runtime, "state", None)
        return dict(state.data.get("processes", {})) if state is not None else {}

    def start(self, node: Host, role: Role) -> int:
        if self.pids(node)[role] is not None:
            raise ClusterError(f"{self.process_name(node, role)} is already running")
        child = self.runtime.spawn(node, self.process_name(node, role), self._argv(node, role),
                                   self.node_dir(node) / "logs" / role / "stdout.log")
        return child.pid

    def signal(self, node: Host, role: Role, signum: int) -> int | None:
        pid = self.pids(node)[role]
        if pid is not None:
            self.runtime.signal(pid, signum)
        return pid

    def kill(self, node: Host, role: Role) -> None:
        pid = self.signal(node, role, signal.SIGKILL)
        if pid is not None and wait_dead([pid], 10.0):
            raise ClusterError(f"{self.process_name(node, role)} (pid {pid}) survived SIGKILL")

    def stop(self, node: Host, role: Role, timeout: float = 60.0) -> None:
        """Graceful stop (SIGTERM: a broker does a controlled shutdown); SIGKILL past `timeout`."""
        pid = self.signal(node, role, signal.SIGTERM)
        if pid is not None and wait_dead([pid], timeout):
            log.warning("%s did not stop within %.0f s; killing it", self.process_name(node, role), timeout)
            self.kill(node, role)

    def pause(self, node: Host, role: Role) -> None:
        self.signal(node, role, signal.SIGSTOP)

    def resume(self, node: Host, role: Role) -> None:
        self.signal(node, role, signal.SIGCONT)

    def power_off(self, node: Host) -> None:
        """Both processes of the node die at the same instant (SIGKILL; the page cache survives)."""
        pids = [p for p in self.pids(node).values() if p is not None]
        for pid in pids:
            self.runtime.signal(pid, signal.SIGKILL)
        if wait_dead(pids, 10.0):
            raise ClusterError(f"{node.name} survived power-off")

    def power_on(self, node: Host) -> None:
        for role in ROLES:
            if self.pids(node)[role] is None:
                self.start(node, role)

    def power_on_all(self) -> None:
        """Start every process that is not running: ZooKeeper servers first, then brokers."""
        for role in ROLES:
            for node in self.nodes:
                if self.pids(node)[role] is None:
                    self.start(node, role)

    # -- bring-up and readiness --------------------------------------------
    def bring_up(self, timeout: float = 90.0) -> None:
        """Start every ZooKeeper server, then every broker; create the topic; wait until it is all ready."""
        self.write_configs()
        deadline = time.monotonic() + timeout
        for node in self.nodes:
            self.start(node, "zookeeper")
        self.wait_quorum(deadline - time.monotonic())
        wanted = self.settings.controller
        if wanted is not None:
            # The first broker to register wins the /controller znode: start it alone first.
            self.start(self.node(wanted), "broker")
            wait_for(f"broker {wanted} to become controller", lambda: self._controller_is(wanted),
                     deadline - time.monotonic())
        for node in self.nodes:
            if self.pids(node)["broker"] is None:
                self.start(node, "broker")
        self.wait_brokers(deadline - time.monotonic())
        self.create_topic()
        self.wait_topic_ready(deadline - time.monotonic())

    def _controller_is(self, broker_id: int) -> bool | None:
        self._check_processes()
        return True if zk_snapshot(self.zk_connect, None, timeout=2.0)["controller"] == broker_id else None

    def _check_processes(self) -> None:
        for node in self.nodes:
            for role, pid in self.pids(node).items():
                if pid is None and self.process_name(node, role) in self.runtime_state_processes():
                    tail = log_tail(self.node_dir(node) / "logs" / role / "stdout.log")
                    raise ClusterError(f"{self.process_name(node, role)} exited during start-up: {tail}")

    def wait_quorum(self, timeout: float) -> dict[str, str]:
        def quorum() -> dict[str, str] | None:
            self._check_processes()
            modes = {n.name: zookeeper_mode(n.address, kcfg.ZK_CLIENT_PORT, 1.0) for n in self.nodes}
            leaders = [m for m in modes.values() if m == "leader"]
            ok = len(leaders) == 1 and all(m in ("leader", "follower") for m in modes.values())
            return modes if ok else None
        return wait_for("a ZooKeeper quorum (one leader, every server serving)", quorum, timeout)

    def wait_brokers(self, timeout: float) -> dict[str, Any]:
        want = sorted(n.broker_id for n in self.nodes)

        def registered() -> dict[str, Any] | None:
            self._check_processes()
            snap = zk_snapshot(self.zk_connect, None, timeout=2.0)
            if snap["brokers"] != want or snap["controller"] is None:
                return None
            # Registered is not yet known: each broker learns its peers from the controller.
            views = self.views()
            known = all(v is not None and sorted(v.brokers) == want and v.controller == snap["controller"]
                        for v in views.values())
            return snap if known else None
        return wait_for(f"brokers {want} registered in ZooKeeper, a controller elected and known to every broker",
                        registered, timeout)

    def create_topic(self) -> None:
        s = self.settings
        admin = AdminClient({"bootstrap.servers": self.bootstrap, "socket.timeout.ms": 5000})
        if s.replica_assignment is not None:
            new = NewTopic(s.topic, num_partitions=len(s.replica_assignment),
                           replica_assignment=[list(r) for r in s.replica_assignment])
        else:
            new = NewTopic(s.topic, num_partitions=s.partitions, replication_factor=s.replication_factor)
        future = admin.create_topics([new], operation_timeout=20, request_timeout=25)[s.topic]
        try:
            future.result(timeout=30)
        except Exception as exc:  # KafkaException carries the broker's error
            raise ClusterError(f"creating topic {s.topic}: {exc}") from exc

    def expected_replicas(self) -> int:
        if self.settings.replica_assignment is not None:
            return len(self.settings.replica_assignment[0])
        return self.settings.replication_factor

    def views(self) -> dict[str, BrokerView | None]:
        """Each broker's own view, asked from the control plane (never cut off)."""
        def ask(node: Host) -> BrokerView | None:
            try:
                return broker_view(node.address, kcfg.BROKER_PORT, [self.topic], timeout=2.0)
            except (OSError, ConnectionError, ValueError):
                return None
        with ThreadPoolExecutor(len(self.nodes)) as pool:
            return dict(zip([n.name for n in self.nodes], pool.map(ask, self.nodes), strict=True))

    def settled(self) -> dict[str, BrokerView] | None:
        """The views when every broker agrees on one leader per partition with a full ISR, else None."""
        views = self.views()
        if any(v is None for v in views.values()):
            return None
        agreed = {str(_leadership(v)) for v in views.values() if v is not None}
        first = next(iter(views.values()))
        assert first is not None
        parts = first.partitions.get(self.topic, [])
        want = self.settings.partitions if self.settings.replica_assignment is None \
            else len(self.settings.replica_assignment)
        full = len(parts) == want and all(
            p.leader is not None and len(p.isr) == self.expected_replicas() for p in parts)
        controllers = {v.controller for v in views.values() if v is not None}
        ok = len(agreed) == 1 and full and len(controllers) == 1 and None not in controllers
        return {k: v for k, v in views.items() if v is not None} if ok else None

    def wait_topic_ready(self, timeout: float) -> dict[str, BrokerView]:
        def ready() -> dict[str, BrokerView] | None:
            self._check_processes()
            return self.settled()
        return wait_for(f"topic {self.topic} led everywhere with a full ISR, agreed by every broker",
                        ready, timeout)


def _leadership(view: BrokerView) -> list[tuple[int, int | None, tuple[int, ...]]]:
    return [(p.partition, p.leader, tuple(sorted(p.isr))) for parts in view.partitions.values() for p in parts]


def log_tail(path: Path, lines: int = 3) -> str:
    """The last lines of a process's log, joined on one line, for an error message."""
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except FileNotFoundError:
        return "(no output)"
    return " | ".join(text[-lines:]) or "(no output)"
