"""The run's client processes: which ones, where, with what config; start, watch, stop.

`plan_workloads` turns a spec into typed `workloads.config` objects, one per
process, each on its AZ's client host (observers on their broker's node
host; on a cluster faultline did not make, on the AZ's client host: nothing of
faultline runs on the user's brokers). `WorkloadSet` starts them through the runtime (the config file put on
the host, the journal written there and fetched back) and holds them to
account: a workload process that dies while it should be running fails the
run loudly (WorkloadError with the tail of its log); it never just shrinks
the history.
"""

from __future__ import annotations

import dataclasses
import json
import signal
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from harness.spec import Spec
from testbed.addressing import Host
from testbed.dist.clients import ClientEnv
from testbed.errors import FaultError, HarnessError, WorkloadError
from testbed.files import write_json_atomic
from testbed.journal_names import client_process
from testbed.kafka import config as kcfg
from testbed.kafka.cluster import KafkaCluster
from testbed.processes import ProcessGroup
from testbed.runfolder import RunFolder
from testbed.runtime.base import Pausable, PowerCycled, Runtime, client_python, client_report
from workloads.config import (
    AnyConfig,
    ConsumerConfig,
    DrainConfig,
    ObserverConfig,
    ProducerConfig,
    TransformerConfig,
    config_to_json,
)
from workloads.exits import DRAIN_INCOMPLETE, FENCED

PROCESS_PREFIX = "workload/"  # the runtime's process names of workloads: workload/<process>
HOLD_WAIT_S = 30.0  # a hold-request starts once the proxy caught its request: the producer sends one within this
PAUSE_WAIT_S = 10.0  # a SIGSTOP or SIGCONT reaches every thread of a process within this
UPGRADE_STOP_S = 30.0  # upgrade-client: a producer flushes, a group member leaves its group, within this of SIGTERM
# The roles that run the client under test (`clients.confluent_kafka`); the drain and the observers never do.
UNDER_TEST = ("producer", "consumer")


@dataclass
class Workload:
    name: str
    host: Host
    role: str
    config: AnyConfig | None = None  # None for a dead harness's process, taken over by `recover`


def plan_workloads(spec: Spec, cluster: KafkaCluster) -> list[Workload]:
    """Every producer, consumer and observer of the run, with its config (drains come later)."""
    plan, folder, topic = cluster.plan, cluster.folder, cluster.topic
    partitions = cluster.settings.partitions
    out: list[Workload] = []
    counters: dict[tuple[str, str], int] = defaultdict(int)

    def name_for(role: str, az: str) -> str:
        n = counters[(role, az)]
        counters[(role, az)] += 1
        return client_process(role, az, n)

    for group in spec.producers:
        for az in group.azs:
            for _ in range(group.per_az):
                name = name_for("producer", az)
                config = ProducerConfig(
                    process=name, role="producer", az=az, journal=folder.journal(name), topic=group.topic or topic,
                    bootstrap=cluster.bootstrap, partitions=partitions, rate=group.rate, value_prefix=f"{name}-",
                    value_size=group.value_bytes or None, kafka=dict(group.settings),
                    # The run's prefix and the process: the same id for every instance of the process (a new one
                    # fences the old), and no other run's.
                    transactional_id=cluster.transactional_id(name) if group.transactional else None,
                    txn_size=group.txn_size, txn_abort_share=group.txn_abort_share, fenced=group.fenced)
                if group.proxy:
                    config = dataclasses.replace(config, **_proxied(cluster, name))
                out.append(Workload(name, plan.client_of_az(az), "producer", config))
    for cgroup in spec.consumers:
        members = [az for az in cgroup.azs for _ in range(cgroup.per_az)]
        for index, az in enumerate(members):
            name = name_for("consumer", az)
            grouped = cgroup.mode == "group"
            out.append(Workload(name, plan.client_of_az(az), "consumer", ConsumerConfig(
                process=name, role="consumer", az=az, journal=folder.journal(name), topic=topic,
                bootstrap=cluster.bootstrap, mode="group" if grouped else "assign",
                group=cgroup.group if grouped else None, commit=cast(Any, cgroup.commit) if grouped else None,
                processing_ms=cgroup.processing_ms if grouped else 0,
                partitions=partitions, kafka={**cgroup.settings, "isolation.level": cgroup.isolation_level},
                **_kill_schedule(cgroup.kill_every_s, cgroup.kill_first_s, cgroup.restart_delay_s, index,
                                 len(members)))))
    for tgroup in spec.transformers:
        members = [az for az in tgroup.azs for _ in range(tgroup.per_az)]
        for index, az in enumerate(members):
            name = name_for("transformer", az)
            out.append(Workload(name, plan.client_of_az(az), "transformer", TransformerConfig(
                process=name, role="transformer", az=az, journal=folder.journal(name), topic=tgroup.output_topic,
                bootstrap=cluster.bootstrap, input_topic=tgroup.input_topic, group=tgroup.group,
                mode="exactly-once" if tgroup.transactional else "at-least-once", partitions=partitions,
                batch=tgroup.batch, transactional_id=f"{cluster.runtime.prefix}-{name}" if tgroup.transactional else None,
                kafka={"transaction.timeout.ms": tgroup.transaction_timeout_ms} if tgroup.transactional else {},
                **_kill_schedule(tgroup.kill_every_s, tgroup.kill_first_s, tgroup.restart_delay_s, index,
                                 len(members)))))
    for node in cluster.nodes:
        name = f"observer-broker-{node.broker_id}"
        where = node if cluster.settings.provision else plan.client_of_az(node.az)
        out.append(Workload(name, where, "observer", ObserverConfig(
            process=name, role="observer", az=node.az, journal=folder.journal(name), topic=topic, bootstrap="",
            broker_id=node.broker_id, broker_host=node.address, broker_port=kcfg.BROKER_PORT, interval_s=1.0,
            controller_port=kcfg.CONTROLLER_PORT if cluster.settings.kraft else None,
            controller_id_base=kcfg.controller_id(cluster.settings, 0) if cluster.settings.kraft else 0,
            extra_topics=cluster.settings.extra_topics)))
    return out


def _kill_schedule(every_s: float, first_s: float | None, restart_delay_s: float, index: int,
                   members: int) -> dict[str, Any]:
    """One of a group's `members` killed every `every_s` from `first_s`, in turn: each every `members` times that
    (workloads/supervisor.py's keys for member `index`)."""
    return {"kill_every_s": every_s * members, "restart_delay_s": restart_delay_s,
            "kill_first_s": (every_s if first_s is None else first_s) + every_s * index}


def _proxied(cluster: KafkaCluster, name: str) -> dict[str, Any]:
    """A producer behind its own request-holding proxy: bootstrapped from the loopback ports the brokers advertise
    on PROXIED, each forwarded to that broker's PROXIED listener (workloads/holdproxy.py)."""
    ports = {kcfg.proxy_port(n.broker_id): f"{n.address}:{kcfg.PROXIED_PORT}" for n in cluster.nodes}
    return {"bootstrap": ",".join(f"127.0.0.1:{p}" for p in ports),
            "proxy": {"listen": {str(p): u for p, u in ports.items()}, "control": str(proxy_file(cluster.folder, name)),
                      "events": str(proxy_file(cluster.folder, name, "events.jsonl"))}}


def proxy_file(folder: RunFolder, process: str, what: str = "control") -> Path:
    """Where `process`'s proxy reads its orders (`control`) and writes what it did (`events.jsonl`)."""
    return folder.root / "proxy" / f"{process}.{what}"


# The final drain's views: `drain-<az>` reads read_committed (librdkafka's default); with transactional writers a
# second reader per AZ, `drain-<az>-ru`, reads read_uncommitted (contract v2: every partition read in both views).
DRAIN_VIEWS = {"": "read_committed", "-ru": "read_uncommitted"}


def drain_workloads(cluster: KafkaCluster, timeout_s: float, suffix: str = "",
                    both_views: bool = False, groups: tuple[str, ...] = ()) -> list[Workload]:
    """One fresh fixed-assignment reader per AZ (two with `both_views`), from the earliest offset to the end; for
    each extra topic of the cluster as many more, `drain-<az>-<topic>[-ru]`. The first of them also reads the
    committed offsets of `groups` (contract v3: one `final` row per group and partition, so one drain only)."""
    views = DRAIN_VIEWS if both_views else {"": DRAIN_VIEWS[""]}
    topics = {"": cluster.topic, **{f"-{t}": t for t in cluster.settings.extra_topics}}
    drains = [Workload(name, host, "drain", DrainConfig(
        process=name, role="drain", az=host.az, journal=cluster.folder.journal(name), topic=topic,
        bootstrap=cluster.bootstrap, partitions=cluster.settings.partitions, timeout_s=timeout_s,
        kafka={"isolation.level": level}))
        for tag, topic in topics.items() for host in cluster.plan.clients for view, level in views.items()
        for name in [f"drain-{host.az}{tag}{view}{suffix}"]]
    if groups:
        first = drains[0]
        assert isinstance(first.config, DrainConfig)
        first.config = dataclasses.replace(first.config, groups=groups)
    return drains


def member_groups(spec: Spec) -> tuple[str, ...]:
    """The consumer groups of the run's group consumers (contract v3: each has members whose commits the final
    drain's committed offsets judge), each once."""
    return tuple(dict.fromkeys(g.group for g in spec.consumers if g.mode == "group" and g.group is not None))


class WorkloadSet:
    """Starts workload processes through the runtime and holds them to account."""

    def __init__(self, runtime: Runtime, folder: RunFolder, cluster: KafkaCluster,
                 client: ClientEnv | None = None, upgrades: dict[str, ClientEnv] | None = None) -> None:
        self.runtime = runtime
        self.client = client  # the client under test's venv (None: every role on the harness's own client)
        self.upgrades = upgrades or {}  # upgrade-client: each `to_version`'s venv, made before the run started
        self.folder = folder
        self.cluster = cluster
        self.processes = ProcessGroup(runtime, lambda name: folder.client_log(name.removeprefix(PROCESS_PREFIX)))
        self.running: dict[str, Workload] = {}
        self.stopping: set[str] = set()  # being stopped on purpose by the nemesis's thread: its exit is no death
        self._restarts: dict[str, int] = {}
        self._orders = 0  # the last order given to a producer's proxy (hold-request)

    def start(self, workloads: list[Workload], client: ClientEnv | None = None) -> None:
        """Start each workload on its host: the roles under test on `client`'s venv (default: the run's client
        under test), the others on the harness's own client."""
        client = client or self.client
        for w in workloads:
            assert w.config is not None, w.name
            path = self.folder.workload_config(w.name)
            path.parent.mkdir(parents=True, exist_ok=True)
            on_host = dataclasses.replace(w.config, journal=Path(self.runtime.host_path(w.host, w.config.journal)))
            path.write_text(json.dumps(config_to_json(on_host), indent=2, sort_keys=True) + "\n")
            host_config = self.runtime.put(w.host, path)
            software = self.cluster.software(w.host)  # first use on a host installs this project's code there
            python = client_python(self.runtime, w.host, client) if client is not None and w.role in UNDER_TEST \
                else software.python
            self.processes.start(w.host, PROCESS_PREFIX + w.name, [*python, "-m", "workloads", host_config])
            self.running[w.name] = w

    def adopt(self) -> None:
        """Take over the client processes a dead harness started that still run (`recover`)."""
        for name in self.runtime.process_names():
            process = self.processes.running(name) if name.startswith(PROCESS_PREFIX) else None
            if process is not None:
                short = name.removeprefix(PROCESS_PREFIX)
                self.running[short] = Workload(short, process.host, short.split("-", 1)[0])
                if isinstance(process, Pausable) and process.paused():
                    process.resume()  # a producer the dead harness's nemesis had paused (pause-workload)

    def check_alive(self) -> None:
        """Raise WorkloadError if any process that should be running has exited.

        Except an observer whose host lost power (a runtime that can cut a whole host's power kills it with
        the broker it watches): it starts again, with a journal of its own, once its host is back."""
        for w in list(self.running.values()):
            if self.processes.running(PROCESS_PREFIX + w.name) is not None or w.name in self.stopping:
                continue
            if w.role == "observer" and self._lost_power(w):
                self._restart_observer(w)
                continue
            if self._fenced_out(w):  # `fenced: exit`: it ended because a newer instance took its transactional.id
                self.running.pop(w.name)
                continue
            raise WorkloadError(f"workload {w.name} died mid-run: {self.tail(w.name)}")

    def _fenced_out(self, w: Workload) -> bool:
        return isinstance(w.config, ProducerConfig) and w.config.fenced == "exit" and \
            self.processes.exit_status(PROCESS_PREFIX + w.name) == FENCED

    def _lost_power(self, w: Workload) -> bool:
        return isinstance(self.runtime, PowerCycled) and \
            self.processes.exit_status(PROCESS_PREFIX + w.name) == -signal.SIGKILL

    def _restart_observer(self, w: Workload) -> None:
        if w.config is None or self.cluster.process(w.host, self.cluster.roles[0]) is None:
            return  # its host is still down (or the process was taken over from a dead harness); KRaft: controller
        self._restarts[w.name] = self._restarts.get(w.name, 1) + 1
        again = dataclasses.replace(w.config, journal=self.folder.journal(f"{w.name}.{self._restarts[w.name]}"))
        self.start([Workload(w.name, w.host, w.role, again)])

    # -- the nemesis's hold on workload processes (nemesis.workload_faults.WorkloadControl) ---------------------
    def pause(self, process: str) -> int:
        self._pausable(process).pause()
        self._wait_paused(process, True)
        running = self.processes.running(PROCESS_PREFIX + process)
        return running.pid if running is not None else -1

    def resume(self, process: str) -> None:
        if self.processes.running(PROCESS_PREFIX + process) is not None:
            self._pausable(process).resume()
            self._wait_paused(process, False)

    def replace(self, process: str) -> str:
        """`process`'s configuration (transactional.id included) under a new name, started now."""
        w = self.running.get(process)
        if w is None or not isinstance(w.config, ProducerConfig):
            raise FaultError(f"replace-workload: {process} is not a running producer of this run")
        successor = self._successor(w, "r")
        assert isinstance(successor.config, ProducerConfig)
        if successor.config.proxy is not None:  # the loopback ports are the first one's: it connects directly
            successor.config = dataclasses.replace(successor.config, proxy=None, bootstrap=self.cluster.bootstrap)
        self.start([successor])
        return successor.name

    def _successor(self, w: Workload, tag: str) -> Workload:
        """`w`'s configuration under the next free name `<name>-<tag><n>`: its own journal and, a producer's, values."""
        assert w.config is not None
        name = f"{w.name}-{tag}{1 + sum(1 for n in self.running if n.startswith(f'{w.name}-{tag}'))}"
        renamed: dict[str, Any] = {"process": name, "journal": self.folder.journal(name)}
        if isinstance(w.config, ProducerConfig):
            renamed["value_prefix"] = f"{name}-"
        return Workload(name, w.host, w.role, dataclasses.replace(w.config, **renamed))

    def upgrade(self, process: str, version: str) -> dict[str, Any]:
        """upgrade-client: stop `process` cleanly (SIGTERM: a producer flushes, a group member leaves its group) and
        start its configuration again as `<process>-u<n>` on confluent-kafka `version`; what was done, and when."""
        w, env = self.running.get(process), self.upgrades.get(version)
        if w is None or w.role not in UNDER_TEST or w.config is None:
            raise FaultError(f"upgrade-client: {process} is not a running producer or consumer of this run")
        if env is None:
            raise FaultError(f"upgrade-client: no client venv of confluent-kafka {version} was made for this run")
        stop_ns = time.time_ns()
        self.stopping.add(process)  # check_alive, on the run's thread, may look while it exits
        stuck = self.processes.stop_within({PROCESS_PREFIX + process: UPGRADE_STOP_S})
        self.running.pop(process, None)
        self.stopping.discard(process)
        if stuck:
            raise FaultError(f"upgrade-client: {process} did not stop within {UPGRADE_STOP_S:.0f} s of SIGTERM")
        code = self._check_exit_codes([w], ok=(0, FENCED))[process]
        stopped_ns = time.time_ns()
        successor = self._successor(w, "u")
        self.start([successor], client=env)
        return {"replacement": successor.name, "stop_ns": stop_ns, "stopped_ns": stopped_ns, "exit_status": code,
                "started_ns": time.time_ns(), "client": client_report(self.runtime, successor.host, env)}

    def hold(self, process: str, kind: dict[str, Any]) -> dict[str, Any]:
        """Arm `process`'s proxy: once it holds the next request of `kind`, what it caught (the `held` event)."""
        held = self._order(process, {"action": "hold", **kind}, "held", HOLD_WAIT_S)
        return {k: held[k] for k in ("api_key", "api_version", "correlation_id", "committed")} | {"held_ns": held["t"]}

    def release(self, process: str, before: dict[str, Any] | None = None) -> dict[str, Any]:
        """Forward what `process`'s proxy holds (with `before`: just before its next request of that kind); once it
        did, when."""
        order: dict[str, Any] = {"action": "release", **({"before": before} if before is not None else {})}
        released = self._order(process, order, "released", HOLD_WAIT_S if before is not None else PAUSE_WAIT_S)
        return {"released_ns": released["t"]}

    def _order(self, process: str, order: dict[str, Any], answer: str, wait_s: float) -> dict[str, Any]:
        w = self.running.get(process)
        if w is None or not isinstance(w.config, ProducerConfig) or w.config.proxy is None:
            raise FaultError(f"hold-request: {process} is not a running producer with a proxy (proxy: true)")
        control, events = Path(w.config.proxy["control"]), Path(w.config.proxy["events"])
        self._orders += 1
        seq = self._orders
        control.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(control, {"seq": seq, **order})
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            for line in (events.read_text().splitlines() if events.exists() else []):
                event = json.loads(line)
                if event.get("event") == answer and event.get("release_seq" if answer == "released" else "seq") == seq:
                    return cast(dict[str, Any], event)
            time.sleep(0.01)
        raise FaultError(f"hold-request: {process}'s proxy did not report {answer} within {wait_s:.0f} s")

    def _pausable(self, process: str) -> Pausable:
        try:
            target = self.processes.pausable(PROCESS_PREFIX + process)
        except HarnessError as exc:
            raise FaultError(str(exc)) from exc
        if target is None:
            raise FaultError(f"workload {process} is not running")
        return target

    def _wait_paused(self, process: str, paused: bool) -> None:
        deadline = time.monotonic() + PAUSE_WAIT_S
        while time.monotonic() < deadline:
            target = self.processes.running(PROCESS_PREFIX + process)
            if target is None or cast(Pausable, target).paused() == paused:
                return
            time.sleep(0.005)
        raise FaultError(f"workload {process} did not {'stop' if paused else 'continue'} within {PAUSE_WAIT_S:.0f} s")

    def tail(self, name: str) -> str:
        return self.processes.log_tail(PROCESS_PREFIX + name, lines=2)

    def collect(self, journals_only: bool = False) -> None:
        """Bring every host's journals (and the workloads' logs) into the run folder."""
        for host in self.runtime.plan.hosts:
            self.runtime.fetch(host, self.folder.journal_dir)
            if not journals_only:
                self.runtime.fetch(host, self.folder.logs_dir)

    def stop(self, role: str, timeout: float) -> None:
        """SIGTERM every process of `role`, wait for a clean exit; one that does not exit in time is a failure."""
        self.stop_roles({role: timeout})

    def stop_roles(self, timeouts: dict[str, float]) -> None:
        """`stop` for several roles at once: every process of each role SIGTERMed together, each allowed its
        role's timeout from that moment."""
        victims = [w for w in self.running.values() if w.role in timeouts]
        allowed = {PROCESS_PREFIX + w.name: timeouts[w.role] for w in victims}
        stuck = self.processes.stop_within(allowed)
        for w in victims:
            self.running.pop(w.name, None)
        if stuck:
            late = [f"{s.removeprefix(PROCESS_PREFIX)} ({allowed[s]:.0f} s)" for s in stuck]
            raise WorkloadError(f"workloads {', '.join(late)} did not stop within their time of SIGTERM")
        self._check_exit_codes(victims, ok=(0, FENCED))  # FENCED: only a producer told to end once fenced

    def _check_exit_codes(self, finished: list[Workload], ok: tuple[int, ...]) -> dict[str, int]:
        codes = {}
        for w in finished:
            code = self.processes.exit_status(PROCESS_PREFIX + w.name)
            codes[w.name] = 0 if code is None else code
            if codes[w.name] not in ok:
                raise WorkloadError(f"workload {w.name} exited with status {code}: {self.tail(w.name)}")
        return codes

    def run_to_completion(self, workloads: list[Workload], timeout: float) -> dict[str, int]:
        """Start `workloads` (drains), wait for each to exit by itself; return exit codes."""
        self.start(workloads)
        names = [PROCESS_PREFIX + w.name for w in workloads]
        stuck = self.processes.wait(names, timeout)
        self.processes.kill(stuck)
        for w in workloads:
            self.running.pop(w.name, None)
        return self._check_exit_codes(workloads, ok=(0, DRAIN_INCOMPLETE, -signal.SIGKILL))
