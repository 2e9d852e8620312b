"""What a runtime is: the only way to a host. Hosts with addresses, processes on them, files, a firewall per host.

Everything above `testbed/runtime/` reaches a host through these protocols
and nothing else (as Jepsen's control layer is the only way to a node): it
never reads /proc, never assumes a host shares the harness's disk, and never
names an implementation (`testbed.runtime.factory` picks one by kind).

Contracts (every implementation):
- Every resource it creates carries the run's prefix and is recorded in the
  run's state file the moment it exists; `clean` finds it again by prefix.
- `destroy` removes everything of this run and nothing else; it is idempotent
  and safe to call after a partial `create`.
- Processes are started inside their host, so they see exactly the network
  their host sees (faults included), with RUN_ENV=<prefix> in their
  environment. A process handle never signals anything but the process it
  started (a pid reused by another process is not it).
- Files: the run folder on the harness's machine is the record. A host keeps
  its copy of a run-folder path at `host_path(host, path)`; `put` makes the
  host's copy match the run folder's, `fetch` brings the host's copy back.
  Where a host shares the disk (netns), both are no-ops.
- Failures raise `RuntimeFailure` with the command and what it said.
"""

from __future__ import annotations

import re
import secrets
import subprocess
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from testbed.addressing import AddressPlan, Host

if TYPE_CHECKING:
    from testbed.dist.clients import ClientEnv

RUN_ENV = "FAULTLINE_RUN"  # every process a runtime starts carries FAULTLINE_RUN=<prefix>
PREFIX_RE = re.compile(r"^fl[0-9a-f]{6}$")
# The fault chains a Firewalled runtime hooks into INPUT and OUTPUT; rules are written for them.
FAULT_IN_CHAIN = "FAULTLINE-IN"
FAULT_OUT_CHAIN = "FAULTLINE-OUT"

EMPTY_FILTER_TABLE = "*filter\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\nCOMMIT\n"


def fault_table(rules: str) -> str:
    """A whole filter table for iptables-restore: the fault chains, hooked from INPUT and OUTPUT, holding `rules`."""
    return (f"*filter\n:{FAULT_IN_CHAIN} - [0:0]\n:{FAULT_OUT_CHAIN} - [0:0]\n"
            f"-A INPUT -j {FAULT_IN_CHAIN}\n-A OUTPUT -j {FAULT_OUT_CHAIN}\n{rules}COMMIT\n")


def new_prefix() -> str:
    """A fresh run prefix: `fl` and six hex digits; every name a run gives carries it."""
    return "fl" + secrets.token_hex(3)


def owned_names(prefix: str | None = None) -> re.Pattern[str]:
    """Names a run gave (`<prefix>-...`), of one run or of any of the project's runs."""
    return re.compile(rf"^{re.escape(prefix)}-" if prefix else rf"^{PREFIX_RE.pattern[1:-1]}-")


@dataclass(frozen=True)
class Software:
    """What the runtime installed on a host, as that host names it."""

    java: str  # the java executable
    kafka_classpath: str  # every jar of the Kafka version, joined with ':'
    python: tuple[str, ...]  # argv prefix running this project's Python modules (`-m workloads ...`)
    # Extra JVM flags per node role ("zookeeper", "broker") on this host: the netns runtime's class-data archives.
    jvm_flags: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@runtime_checkable
class Process(Protocol):
    """A handle on one process a runtime started (or found again from the run's state file)."""

    name: str
    host: Host
    pid: int  # as the process's own host numbers it

    def alive(self) -> bool:
        """True while the process runs (a stopped process is alive; a zombie is not)."""

    def exit_status(self) -> int | None:
        """Its exit status once it has ended (negative: the signal that ended it); None while it runs,
        and 0 for a process this harness did not start (a dead harness's, found again), whose status
        nobody can read."""

    def signal(self, signum: int) -> None:
        """Send `signum` to this process if it is still this run's; nothing if it has ended."""


@runtime_checkable
class Pausable(Protocol):
    """A process that can be frozen in place: it keeps its sockets but answers nothing."""

    def pause(self) -> None:
        """Freeze it (SIGSTOP)."""

    def resume(self) -> None:
        """Undo `pause` (SIGCONT)."""

    def paused(self) -> bool:
        """True while it is frozen."""


@runtime_checkable
class Runtime(Protocol):
    kind: str  # "netns", ...: recorded in state.json, so `clean` and `recover` build the same kind
    prefix: str
    plan: AddressPlan

    def create(self) -> None:
        """Create every host of the plan and the network joining them to the control plane."""

    def destroy(self) -> None:
        """Stop every process of the run and remove every host and link; idempotent."""

    def exists(self) -> bool:
        """Whether any host of this run is still there."""

    def install(self, host: Host, kafka_version: str) -> Software:
        """Make Kafka `kafka_version` and this project's client code runnable on `host`; say where."""

    def host_path(self, host: Host, path: Path) -> str:
        """Where `host` keeps its copy of `path`, a path inside the run folder."""

    def put(self, host: Host, path: Path) -> str:
        """Make `host`'s copy of the run-folder file or directory `path` match it; return the host's path."""

    def fetch(self, host: Host, path: Path) -> None:
        """Bring `host`'s copy of `path` (a file or a directory, if it exists there) into the run folder."""

    def spawn(self, host: Host, name: str, argv: list[str], log: Path,
              env: dict[str, str] | None = None) -> Process:
        """Start a long-running process on `host` as `name`, its output to (the host's copy of) `log`."""

    def process(self, name: str) -> Process | None:
        """The process last started as `name` in this run (by this harness or a dead one), if any."""

    def process_names(self) -> list[str]:
        """The names of every process started in this run (by this harness or a dead one)."""

    def execute(self, host: Host, argv: list[str], *, timeout: float = 30.0,
                input_text: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run a short command on `host` and wait for it; RuntimeFailure on a timeout (or a failure, with check)."""


@runtime_checkable
class KeepsNetwork(Protocol):
    def keep_network(self) -> None:
        """Have `destroy` leave the network joining the hosts to the control plane (its bridge, with the control
        address and the route to the plan's network) and remove the rest: what this machine still sends to the
        hosts' addresses stays on it. `clean` removes the network."""


@runtime_checkable
class Firewalled(Protocol):
    def set_firewall(self, host: Host, rules: str) -> None:
        """Make the host's fault chains (FAULT_IN_CHAIN, FAULT_OUT_CHAIN) hold exactly `rules`
        (iptables-restore lines) in one step."""

    def clear_firewall(self, host: Host) -> None:
        """Remove every fault rule, chain and hook on `host`; idempotent."""


@dataclass(frozen=True)
class LinkShaping:
    """What one host's links must do beyond its firewall: egress bandwidth and held (delayed) packets.

    `rates`: (destination address, kbit/s): the host sends to each such address
    at most that fast; destinations at the same rate share one bucket.
    `delays`: (queue number, delay ms, jitter ms): every packet the host's fault
    rules send to NFQUEUE queue `number` is held delay +- jitter, in order.
    Empty: the host's links are as fast as they are.
    """

    rates: tuple[tuple[str, int], ...] = ()
    delays: tuple[tuple[int, float, float], ...] = ()

    @property
    def empty(self) -> bool:
        return not self.rates and not self.delays


@runtime_checkable
class LinkShaper(Protocol):
    """A runtime that can slow and throttle its hosts' links (`nemesis.links` says how much)."""

    def shape_links(self, host: Host, shaping: LinkShaping) -> None:
        """Make the host's egress rates and delay queues exactly `shaping` (empty: none); never touches
        traffic to or from the control plane."""

    def clear_links(self, host: Host) -> None:
        """Remove every rate and delay of `host`; idempotent, and fine on a host that is gone."""


@runtime_checkable
class PowerCycled(Protocol):
    """A runtime whose hosts can lose power as a whole (a container killed), keeping their disks."""

    def power_off(self, host: Host) -> None:
        """Every process of `host` dies at the same instant; the host is down until `power_on`."""

    def power_on(self, host: Host) -> None:
        """Bring `host` back, its files as they were on disk; no process of the run runs on it yet."""


@runtime_checkable
class LosesUnsyncedWrites(Protocol):
    """A runtime whose power cuts lose what a host had not fsynced, as a real one does.

    It keeps a host's data directories on a filesystem that holds every unsynced
    write, and every create, rename and unlink not yet made durable by an fsync, in
    memory (testbed/unsyncfs). Such a runtime is also `PowerCycled`: `power_off`
    drops everything unsynced under those directories at the instant the host's
    processes die, `power_on` mounts what survived before anything starts. A
    process killed on its own (not a power cut) loses nothing of it.
    """

    def keep_unsynced(self, host: Host, dirs: list[Path], log_dir: Path) -> None:
        """From now on `dirs` (run-folder directories of `host`, their contents durable) are on that filesystem:
        mounted now and again at every `power_on`; its own logs go to `log_dir`. Idempotent."""


@runtime_checkable
class DiskFaults(Protocol):
    """A runtime that can make the unsyncfs mounts of a host's data directories fail or slow their calls (EIO,
    ENOSPC, slow fsync: rules of testbed/unsyncfs/faults.go) on a path under one of them, counting every call."""

    def start_disk_fault(self, host: Host, data_dir: Path, rule: dict[str, Any]) -> dict[str, Any]:
        """Add `rule` (its `id` new) to the mount over `data_dir` (one of `keep_unsynced`'s): its status once
        applied; RuntimeFailure (one line) if the mount refused it."""

    def stop_disk_fault(self, host: Host, data_dir: Path, rule_id: str) -> dict[str, Any]:
        """Take the rule off: what it counted (`counts`, `files`)."""


@runtime_checkable
class ForeignHosts(Protocol):
    """A runtime whose node hosts may run a cluster of the user's (ssh with `provision: false`, docker-existing): it
    acts on the cluster's processes as the inventory says (its command lines, or docker's own calls), finds them
    and reads their files, and changes nothing else there."""

    def act(self, host: Host, role: str, action: str, timeout: float = 60.0) -> None:
        """Do `action` (stop, start, kill, pause, resume) to `role`'s process (broker, zookeeper: the inventory's
        words) on `host` as the inventory says. RuntimeFailure (one line naming the host and what ran) when it
        fails, or when the inventory gives no way to do it."""

    def role_pid(self, host: Host, role: str, port: int) -> int | None:
        """The pid of `role`'s process on `host`, which listens on TCP `port` (None: it does not run)."""

    def role_paused(self, host: Host, role: str, port: int) -> bool:
        """Whether `role`'s process on `host` is frozen (a pause it has not been resumed from)."""

    def fetch_from(self, host: Host, directory: str, names: str, into: Path) -> list[str]:
        """Copy the entries of `host`'s `directory` matching the shell pattern `names` into `into`; read-only on
        the host. The names copied."""


@runtime_checkable
class ShiftsClocks(Protocol):
    """A runtime that can shift the wall clock of a process it starts, while it runs, without touching the host's
    (libfaketime: testbed.runtime.clocks). Only what the process reads as the time of day moves; its monotonic clock
    stays true."""

    def clock_env(self, host: Host, offset_file: Path) -> dict[str, str]:
        """The environment a process on `host` starts with so that its wall clock is true time plus the offset
        `offset_file` (a run-folder path) holds; writes offset 0 there first if it holds none. RuntimeFailure (one
        line) if the host cannot shift a clock (no libfaketime)."""

    def set_clock_offset(self, host: Host, offset_file: Path, offset_ms: float) -> None:
        """From now on (within `CLOCK_REREAD_S`) the processes started with `offset_file` read true time plus
        `offset_ms`."""


@runtime_checkable
class CarriesClientVenvs(Protocol):
    """A runtime whose client hosts do not see this machine's files: a venv of the client under test is on a host
    before a process runs on it, put there (docker: the venv made here, testbed.dist.clients) or made there (ssh:
    by the host's own Python, testbed.runtime.ssh_client_venvs). A runtime without this ability runs a venv where it
    is (netns: the hosts share this machine's filesystem)."""

    def client_python(self, host: Host, env: ClientEnv) -> tuple[str, ...]:
        """The argv prefix running this project's Python modules on `host` with `env`'s confluent-kafka (the venv
        put or made there first if it is not); RuntimeFailure (one line) if it cannot be."""

    def client_report(self, host: Host, env: ClientEnv) -> dict[str, str]:
        """What the venv of `env`'s version on `host` reports of itself (confluent_kafka, librdkafka, python)."""


def client_python(runtime: Runtime, host: Host, env: ClientEnv) -> tuple[str, ...]:
    """How `host` runs this project's Python modules on the client venv `env`."""
    return runtime.client_python(host, env) if isinstance(runtime, CarriesClientVenvs) else env.python


def client_report(runtime: Runtime, host: Host, env: ClientEnv) -> dict[str, str]:
    """What the client venv `env` that processes on `host` run reports of itself."""
    return runtime.client_report(host, env) if isinstance(runtime, CarriesClientVenvs) else env.versions


# What `PowerKinds.power_kind` says of a host whose power-off only kills processes (its page cache survives).
PROCESSES_ONLY = "processes"


@runtime_checkable
class PowerKinds(Protocol):
    """A runtime whose hosts differ in what a power-off is (ssh: a power command, unsyncfs, or processes only)."""

    def power_kind(self, host: Host) -> str:
        """What a power-off of `host` is; PROCESSES_ONLY where its unsynced writes survive it."""


P = TypeVar("P", bound=Process)


def wait_ended(processes: Iterable[P], timeout: float, interval: float = 0.02) -> list[P]:
    """Wait until every process has ended; return those still alive at the deadline."""
    remaining = [p for p in processes if p.alive()]
    deadline = time.monotonic() + timeout
    while remaining and time.monotonic() < deadline:
        time.sleep(interval)
        remaining = [p for p in remaining if p.alive()]
    return remaining
