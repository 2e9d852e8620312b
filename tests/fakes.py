"""An in-memory runtime for fast tests: hosts, processes and firewalls as records; no root, no Kafka.

`FakeRuntime` implements `Runtime` and `Firewalled` (kind "fake"); the
processes it spawns are `FakeProcess`es, which implement `Process` and
`Pausable` as scripted state. Everything the code above the runtime asks of
it is recorded (puts, fetches, commands, firewall rules, signals), so a test
asserts what the harness did to the hosts. Nothing here starts a process,
touches the network, or writes outside the paths it is given.

How a process behaves is scripted per name prefix (the longest matching
prefix wins): a `Script` says what ends it (SIGTERM, or nothing but SIGKILL;
ending by itself with a status, at once or after a while), and a
`Behaviour(argv, log)` runs once at spawn, e.g. to write the journal a real
workload would (`workload_behaviours`). `break_once` makes one call fail with
RuntimeFailure, as a host that misbehaves once would. `destroy` ends every
process but leaves the firewall records alone, so a test can tell whether the
harness cleared them itself.
Must never: be imported by production code.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from signal import SIGCONT, SIGKILL, SIGSTOP, SIGTERM
from typing import Any, TypeVar

from testbed.addressing import AddressPlan, Host, make_plan
from testbed.errors import RuntimeFailure
from testbed.runtime.base import Software, new_prefix
from testbed.state import RunState
from workloads.config import load_config
from workloads.settings import producer_effective

Behaviour = Callable[[list[str], Path], None]
T = TypeVar("T")
Handler = Callable[[Host, list[str], str | None], "subprocess.CompletedProcess[str] | None"]


@dataclass(frozen=True)
class Script:
    """How a fake process ends. Default: runs until SIGTERM (exit 0) or SIGKILL (-9), at once."""

    term_status: int | None = 0  # the status SIGTERM ends it with; None: it ignores SIGTERM
    exit_status: int | None = None  # set: it ends by itself with this status ...
    exit_after_s: float = 0.0  # ... this long after it was started (0: it dies at once)
    linger_s: float = 0.0  # how long it takes to end once a signal has ended it (a JVM's shutdown)


IGNORES_SIGTERM = Script(term_status=None)
DIES_AT_ONCE = Script(exit_status=1)


def exits_by_itself(status: int, after_s: float = 0.0) -> Script:
    return Script(exit_status=status, exit_after_s=after_s)


class FakeProcess:
    """A scripted process: alive until its script or a signal ends it; SIGSTOP/SIGCONT pause it."""

    def __init__(self, name: str, host: Host, pid: int, argv: list[str], log: Path, script: Script) -> None:
        self.name, self.host, self.pid, self.argv, self.log, self.script = name, host, pid, argv, log, script
        self.started = time.monotonic()
        self.signals: list[tuple[int, float]] = []  # (signum, time.monotonic()) of every signal it got
        self.ended_by: str | None = None  # "exit", "SIGTERM", "SIGKILL" or "destroy"
        self._status: int | None = None
        self._final = 0  # the status it ends with once a signal has ended it
        self._ends_at: float | None = None  # a signal has ended it; it is gone at this time
        self._pending_term = False  # SIGTERM while stopped: acted on at SIGCONT, as the kernel does
        self._paused = False
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<fake process {self.name} pid {self.pid} on {self.host.name}>"

    def exit_status(self) -> int | None:
        with self._lock:
            now = time.monotonic()
            if self._status is None and self._ends_at is not None and now >= self._ends_at:
                self._status = self._final
            s = self.script
            if self._status is None and self._ends_at is None and s.exit_status is not None \
                    and now - self.started >= s.exit_after_s:
                self._status, self.ended_by = s.exit_status, "exit"
            return self._status

    def alive(self) -> bool:
        return self.exit_status() is None

    def signal(self, signum: int) -> None:
        if not self.alive():
            return
        with self._lock:
            self.signals.append((signum, time.monotonic()))
            if signum == SIGKILL:
                self._end(-SIGKILL, "SIGKILL")
            elif signum == SIGSTOP:
                self._paused = True
            elif signum == SIGCONT:
                self._paused = False
                if self._pending_term:
                    self._term()
            elif signum == SIGTERM and self._paused:
                self._pending_term = True
            elif signum == SIGTERM:
                self._term()

    def _term(self) -> None:
        if self.script.term_status is not None:
            self._end(self.script.term_status, "SIGTERM")

    def _end(self, status: int, by: str) -> None:
        if self._ends_at is None:  # the first fatal signal decides
            self._final, self.ended_by, self._paused = status, by, False
            self._ends_at = time.monotonic() + self.script.linger_s

    def die(self, status: int = 1, by: str = "exit") -> None:
        """End now, whatever it was doing (by default: a crash of its own)."""
        with self._lock:
            if self._status is None:
                self._status, self.ended_by, self._paused = status, by, False

    def pause(self) -> None:
        self.signal(SIGSTOP)

    def resume(self) -> None:
        self.signal(SIGCONT)

    def paused(self) -> bool:
        return self.alive() and self._paused


class FakeRuntime:
    """Hosts of an `AddressPlan` as records; implements Runtime and Firewalled (see the module docstring)."""

    kind = "fake"

    def __init__(self, plan: AddressPlan | None = None, prefix: str | None = None, state: RunState | None = None,
                 scripts: dict[str, Script] | None = None, behaviours: dict[str, Behaviour] | None = None,
                 execute: Handler | None = None, on_fetch: Callable[[Host, Path], None] | None = None) -> None:
        self.plan = plan or make_plan()
        self.prefix = prefix or new_prefix()
        self.state = state  # when given, spawned processes are recorded in it, as a real runtime does
        self.scripts = dict(scripts or {})
        self.behaviours = dict(behaviours or {})
        self.handler, self.on_fetch = execute, on_fetch
        self.up = False
        self.created = self.destroyed = 0
        self.spawned: list[FakeProcess] = []  # every process ever started, in order
        self.processes: dict[str, FakeProcess] = {}  # the last one of each name
        self.installs: list[tuple[str, str]] = []
        self.puts: list[tuple[str, Path]] = []
        self.fetches: list[tuple[str, Path]] = []
        self.commands: list[tuple[str, list[str]]] = []
        self.rules: dict[str, str] = {}  # per host, the fault rules it holds now ("" after a clear)
        self.firewall_calls: list[tuple[str, str, str]] = []  # ("set" | "clear", host, rules)
        self._breaks: list[tuple[str, str | None]] = []
        self._pids = itertools.count(1000)
        self._lock = threading.Lock()

    # -- scripting -----------------------------------------------------------------
    def break_once(self, operation: str, key: str | None = None) -> None:
        """Make the next `operation` (a method name) on `key` (a host or process name; None: any) fail once."""
        self._breaks.append((operation, key))

    def _maybe_fail(self, operation: str, key: str) -> None:
        with self._lock:
            for i, (op, k) in enumerate(self._breaks):
                if op == operation and k in (None, key):
                    del self._breaks[i]
                    raise RuntimeFailure(f"fake {operation} on {key} failed (scripted)")

    @staticmethod
    def _by_prefix(table: dict[str, T], name: str) -> T | None:
        matches = [p for p in table if name.startswith(p)]
        return table[max(matches, key=len)] if matches else None

    def _host_up(self, host: Host, what: str) -> None:
        if not self.up:
            raise RuntimeFailure(f"{what} on {host.name}: the host does not exist")

    # -- Runtime ----------------------------------------------------------------------
    def create(self) -> None:
        self._maybe_fail("create", self.prefix)
        self.created += 1
        self.up = True

    def destroy(self) -> None:
        self.destroyed += 1
        for process in self.spawned:
            if process.alive():
                process.die(-SIGKILL, by="destroy")
        self.up = False
        if self.state is not None:
            self.state.update(processes={})

    def exists(self) -> bool:
        return self.up

    def install(self, host: Host, kafka_version: str) -> Software:
        self.installs.append((host.name, kafka_version))
        return Software(java="java", kafka_classpath=f"/fake/kafka-{kafka_version}/libs/*", python=("python",))

    def host_path(self, host: Host, path: Path) -> str:
        return str(path)

    def put(self, host: Host, path: Path) -> str:
        self._maybe_fail("put", host.name)
        self.puts.append((host.name, path))
        return str(path)

    def fetch(self, host: Host, path: Path) -> None:
        self._maybe_fail("fetch", host.name)
        self.fetches.append((host.name, path))
        if self.on_fetch is not None:
            self.on_fetch(host, path)

    def spawn(self, host: Host, name: str, argv: list[str], log: Path,
              env: dict[str, str] | None = None) -> FakeProcess:
        self._host_up(host, f"spawn {name}")
        self._maybe_fail("spawn", name)
        behaviour = self._by_prefix(self.behaviours, name)
        if behaviour is not None:
            behaviour(argv, log)
        script = self._by_prefix(self.scripts, name) or Script()
        process = FakeProcess(name, host, next(self._pids), argv, log, script)
        self.spawned.append(process)
        self.processes[name] = process
        if self.state is not None:
            self.state.set_process(name, {"pid": process.pid, "host": host.name, "argv0": argv[0]})
        return process

    def process(self, name: str) -> FakeProcess | None:
        return self.processes.get(name)

    def process_names(self) -> list[str]:
        return sorted(self.processes)

    def execute(self, host: Host, argv: list[str], *, timeout: float = 30.0,
                input_text: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        self._host_up(host, " ".join(argv))
        self._maybe_fail("execute", host.name)
        self.commands.append((host.name, argv))
        done = self.handler(host, argv, input_text) if self.handler is not None else None
        done = done or subprocess.CompletedProcess(argv, 0, "", "")
        if check and done.returncode != 0:
            raise RuntimeFailure(f"{' '.join(argv)} on {host.name}: exit {done.returncode}")
        return done

    # -- Firewalled -------------------------------------------------------------------
    def set_firewall(self, host: Host, rules: str) -> None:
        self._host_up(host, "set_firewall")
        self._maybe_fail("set_firewall", host.name)
        with self._lock:
            self.rules[host.name] = rules
            self.firewall_calls.append(("set", host.name, rules))

    def clear_firewall(self, host: Host) -> None:
        self._host_up(host, "clear_firewall")
        self._maybe_fail("clear_firewall", host.name)
        with self._lock:
            self.rules[host.name] = ""
            self.firewall_calls.append(("clear", host.name, ""))

    # -- for assertions ---------------------------------------------------------------
    def alive(self) -> list[str]:
        """The names of the processes running now."""
        return [p.name for p in self.spawned if p.alive()]

    def cleared_last(self) -> list[str]:
        """The hosts whose last firewall call was a clear (every host, after a heal-all)."""
        last = {host: op for op, host, _ in self.firewall_calls}
        return sorted(h for h, op in last.items() if op == "clear")


# -- workloads that write what real ones would ------------------------------------------
class FakeTopic:
    """The topic as the fake workloads see it: per partition, the values at their offsets."""

    def __init__(self) -> None:
        self.partitions: dict[int, list[str]] = defaultdict(list)
        self._lock = threading.Lock()

    def append(self, partition: int, value: str) -> int:
        with self._lock:
            self.partitions[partition].append(value)
            return len(self.partitions[partition]) - 1


def _journal(path: Path, *lines: dict[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as out:
        out.writelines(json.dumps(line) + "\n" for line in lines)


def workload_behaviours(topic: FakeTopic, writes: int = 3) -> dict[str, Behaviour]:
    """Behaviours for `workload/<role>-...` processes: at spawn, each reads the config it was started with
    (`python -m workloads CONFIG`) and writes the journal a real one would (workloads.lines):
    a producer `writes` acknowledged sends, a consumer and an observer what they saw, a drain the whole topic."""

    def header(argv: list[str]) -> tuple[Any, dict[str, object]]:
        config = load_config(Path(argv[-1]))
        return config, {"kind": "process", "process": config.process, "role": config.role, "az": config.az,
                        "topic": config.topic, "pid": 1, "start_ns": time.time_ns()}

    def producer(argv: list[str], log: Path) -> None:
        config, head = header(argv)
        values = {"prefix": config.value_prefix, "width": 0, "partitions": config.partitions, "key": "none"}
        offsets = [topic.append(op % config.partitions, f"{config.value_prefix}{op}") for op in range(writes)]
        t = time.time_ns()
        _journal(config.journal, {**head, "config": producer_effective(config), "values": values},
                 {"kind": "invoke", "t": t, "op": 0, "n": writes},
                 {"kind": "ack", "t": t + 1, "op": ",".join(map(str, range(writes))), "offset": offsets},
                 {"kind": "end", "t": t + 2, "sent": writes, "ok": writes, "fail": 0, "info": 0, "fatal": None})

    def records() -> list[list[object]]:
        return [[p, off, None, v, 0] for p, vs in sorted(topic.partitions.items()) for off, v in enumerate(vs)]

    def consumer(argv: list[str], log: Path) -> None:
        config, head = header(argv)
        _journal(config.journal, {**head, "config": {"mode": "assign"}},
                 {"kind": "poll", "t": time.time_ns(), "seq": 0, "phase": "live", "group": None,
                  "records": records()})

    def drain(argv: list[str], log: Path) -> None:
        config, head = header(argv)
        held = records()
        _journal(config.journal, {**head, "config": {"mode": "assign"}},
                 {"kind": "watermarks", "t": time.time_ns(),
                  "partitions": {str(p): [0, len(vs)] for p, vs in topic.partitions.items()}},
                 {"kind": "poll", "t": time.time_ns(), "seq": 0, "phase": "final", "group": None, "records": held},
                 {"kind": "drain_end", "t": time.time_ns(), "complete": True, "records": len(held),
                  "reason": None, "behind": {}})

    def observer(argv: list[str], log: Path) -> None:
        config, head = header(argv)
        broker = config.broker_id
        parts = [[config.topic, p, p % 3, [0, 1, 2], 0, 0] for p in range(3)]
        _journal(config.journal, {**head, "config": {"broker_id": broker}},
                 {"kind": "observation", "t": time.time_ns(), "observer": f"broker-{broker}",
                  "broker": broker, "controller": 0, "partitions": parts})

    return {"workload/producer-": producer, "workload/consumer-": consumer,
            "workload/drain-": drain, "workload/observer-": observer}
