"""The ssh runtime: every host a real machine of an inventory, reached over one pooled SSH connection (paramiko).

A host keeps this run's files under `<root>/runs/<prefix>/` (the inventory's
root): the run folder's `path` at `run/<path relative to the run folder>`,
this project's code at `src/`, pid and status files at `pids/`. Kafka's jars
and the client venvs (the harness's, and one per client under test made by the
host's own python3: `ssh_client_venvs`) are cached under `<root>/cache/`
between runs (`ssh_install`). Processes start detached with a pid file and
FAULTLINE_RUN=<prefix> (`ssh_procs`); fault rules live in the run's own
chains, the control address exempt (`run_chains`); slowed and throttled links
are the host's own `tc` and delay process (`ssh_links`). A power-off is, per node
host (`ssh_power`, recorded in state.json's `ssh.power`): the inventory's power
commands (the machine loses power; the harness waits for its sshd after
power-on), or every process of the run SIGKILLed at once with the unsyncfs
filesystems under the data directories (`ssh_unsynced`: unsynced writes dropped),
or the processes alone (the page cache survives). Each host's clock offset is
recorded at the start and the end (`ssh_clock`). Teardown kills the run's
processes, detaches its unsyncfs mounts, removes its chains, its qdiscs and its
run directory on every host; the cache stays.
Must never: signal a process, remove a chain or delete a file without this
run's prefix, or touch a host the inventory does not name.
"""

from __future__ import annotations

import io
import logging
import shlex
import subprocess
import tarfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from testbed.addressing import AddressPlan, Host
from testbed.dist.kafka import DEFAULT_VERSION
from testbed.errors import HarnessError, RuntimeFailure
from testbed.inventory import Inventory, load_inventory
from testbed.runfolder import RunFolder
from testbed.runtime import run_chains, ssh_clock, ssh_foreign, ssh_install, ssh_power
from testbed.runtime.base import PREFIX_RE, LinkShaping, Software
from testbed.runtime.ssh_client_venvs import SshClientVenvs
from testbed.runtime.ssh_conn import HostKeys, SshConnection
from testbed.runtime.ssh_links import SshLinks, unshape_command
from testbed.runtime.ssh_preflight import check_hosts
from testbed.runtime.ssh_procs import SshProcess, find_script, kill_all_script, spawn_command
from testbed.runtime.ssh_unsynced import SshDisks, detach_command
from testbed.state import RunState

log = logging.getLogger("faultline.runtime")
T = TypeVar("T")


def on_hosts(hosts: list[Host], action: Callable[[Host], T]) -> dict[str, T]:
    """`action` on every host at once; the first failure (by host order) raised after all have finished."""
    if not hosts:
        return {}
    with ThreadPoolExecutor(max_workers=len(hosts), thread_name_prefix="ssh") as pool:
        futures = {h.name: pool.submit(action, h) for h in hosts}
        results: dict[str, T] = {}
        errors = []
        for name, future in futures.items():
            exc = future.exception()
            if exc is None:
                results[name] = future.result()
            else:
                errors.append(exc)
    if errors:
        raise errors[0]
    return results


class SshRuntime(SshClientVenvs):
    """Hosts of an inventory; implements Runtime, Firewalled, LinkShaper, PowerCycled, CarriesClientVenvs,
    LosesUnsyncedWrites (on the node hosts whose power-off is `command` or `unsyncfs`) and ForeignHosts (`provision:
    false`: the node hosts run the user's cluster and get nothing of faultline's but fault rules); its processes are
    Pausable."""

    kind = "ssh"

    def __init__(self, prefix: str, plan: AddressPlan, state: RunState, inventory: Inventory | None = None) -> None:
        if not PREFIX_RE.match(prefix):
            raise RuntimeFailure(f"bad run prefix {prefix!r}")
        settings = state.data.get("settings", {})
        self.prefix = prefix
        self.plan = plan
        self.state = state
        self.inventory = inventory or load_inventory(settings["inventory"])
        self.kafka_version = str(settings.get("kafka_version", DEFAULT_VERSION))
        self.folder = RunFolder(state.run_dir)
        self.keys = HostKeys(settings.get("known_hosts"), self.folder.known_hosts)
        self._conns: dict[str, SshConnection] = {}
        self._software: dict[str, Software] = {}
        self._processes: dict[str, SshProcess] = {}
        self._client_venvs: dict[tuple[str, str], tuple[str, dict[str, str]]] = {}  # (host, version): python, report
        self._lock = threading.Lock()
        self._links = SshLinks(self)
        self._disks = SshDisks(self)
        self._down: set[str] = set()  # hosts whose power command cut them off, until their power_on
        self.lose_unsynced = bool(settings.get("lose_unsynced_writes", True))
        self.power_offs = bool(settings.get("power_offs", False))

    # -- names -------------------------------------------------------------
    def conn(self, host: Host) -> SshConnection:
        with self._lock:
            if host.name not in self._conns:
                self._conns[host.name] = SshConnection(self.inventory.host(host.name), self.keys)
            return self._conns[host.name]

    @property
    def run_root(self) -> str:
        return f"{self.inventory.root}/runs/{self.prefix}"

    def host_path(self, host: Host, path: Path) -> str:
        try:
            return f"{self.run_root}/run/{path.relative_to(self.state.run_dir)}"
        except ValueError as exc:
            raise RuntimeFailure(f"{path} is not inside the run folder {self.state.run_dir}") from exc

    # -- lifecycle ---------------------------------------------------------
    def create(self) -> None:
        """Reach every host, make its run directory, provision it (in parallel); record the clocks."""
        self.state.update(ssh={"inventory": str(self.inventory.path), "host_keys": self.keys.describe(),
                               "root": self.inventory.root,
                               "hosts": {h.name: self.inventory.host(h.name).target for h in self.plan.hosts}})
        on_hosts(list(self.plan.hosts), self._provision)
        if self._client_venvs:  # what each client host's venv of each client version reported
            self.state.update(client_venvs=self.client_venvs_made())
        nodes = [h for h in self.plan.hosts if h.role == "node"]
        power = on_hosts(nodes, self._choose_power)
        self.state.update(ssh={**self.state.data["ssh"], "power": power})
        self._record_clocks("start")

    def _choose_power(self, host: Host) -> str:
        entry = self.inventory.host(host.name)
        fuse = (self.lose_unsynced and self.power_offs and entry.power_off is None
                and ssh_power.fuse_problem(self.conn(host)) is None)
        return ssh_power.choose(entry, self.lose_unsynced, self.power_offs, fuse)

    def power_kind(self, host: Host) -> str:
        """What a power-off of `host` is: `unsyncfs`, `command` or `processes` (ssh_power)."""
        return str((self.state.data.get("ssh", {}).get("power") or {}).get(host.name, ssh_power.PROCESSES))

    def down(self, host: Host) -> bool:
        """Whether `host` is off (its power command ran, its power_on not yet)."""
        return host.name in self._down
    def _provision(self, host: Host) -> Software:
        if host.role == "node" and not self.inventory.provision:  # the user's cluster: nothing of ours goes there
            self._software[host.name] = Software(java="java", kafka_classpath="", python=("python3",))
            return self._software[host.name]
        conn = self.conn(host)
        q = shlex.quote(self.inventory.root)
        conn.check(f"mkdir -p {q}/runs {q}/cache" + (f" && chown {shlex.quote(conn.host.user)} {q} {q}/runs {q}/cache"
                                                       if conn.host.sudo else ""), sudo=True)
        src = ssh_install.put_code(conn, self.run_root)
        if host.role == "node":
            classpath = ssh_install.ensure_kafka_on(conn, self.inventory.root, self.kafka_version)
            python = "python3"
        else:
            classpath = ""
            python = ssh_install.ensure_venv_on(conn, self.inventory.root)
            self._make_client_venvs(host)
        software = Software(java="java", kafka_classpath=classpath, python=("env", f"PYTHONPATH={src}", python))
        self._software[host.name] = software
        return software

    def _record_clocks(self, moment: str) -> None:
        try:
            offsets = on_hosts(list(self.plan.hosts), lambda h: ssh_clock.measure(self.conn(h)))
        except HarnessError as exc:
            log.warning("ssh: could not measure the clocks at the %s: %s", moment, exc)
            return
        ssh_clock.record(self.folder.clocks, moment, offsets)
        large = ssh_clock.large_offsets({moment: offsets})
        if large:
            log.warning("ssh: clock offsets large enough to reorder the timeline: %s", "; ".join(large))

    def exists(self) -> bool:
        def present(host: Host) -> bool:
            status, _, _ = self.conn(host).run(f"test -d {shlex.quote(self.run_root)}")
            return status == 0
        try:
            return any(on_hosts(list(self.plan.hosts), present).values())
        except HarnessError:
            return False

    def destroy(self) -> None:
        """Kill the run's processes, remove its chains and its run directory on every host; idempotent."""
        if self.folder.clocks.exists() and "end" not in self.folder.clocks.read_text():
            self._record_clocks("end")
        on_hosts(list(self.plan.hosts), self._destroy_host)
        self.state.update(processes={})
        for conn in list(self._conns.values()):
            conn.close()

    def _destroy_host(self, host: Host) -> None:
        if host.name in self._down:  # its power_on never ran: bring it back to clean it
            self.power_on(host)
        conn = self.conn(host)
        left = conn.check(kill_all_script(self.prefix), sudo=True).split()
        if left:
            raise RuntimeFailure(f"{host.name}: processes {left} of run {self.prefix} survived SIGKILL")
        conn.check(detach_command(f"^{self.prefix}-"), sudo=True)  # the filesystems died with the processes
        conn.check(run_chains.clean_command(self.prefix), sudo=True)
        conn.check(unshape_command(self._links.records), sudo=True)  # its delay processes died with the others
        conn.check(f"rm -rf {shlex.quote(self.run_root)}", sudo=True)

    def power_off(self, host: Host) -> None:
        """The host's power command; else every process of the run on `host` SIGKILLed in one `kill`, its unsyncfs
        filesystems with them (their unsynced writes gone; without them the page cache survives)."""
        if self.power_kind(host) == ssh_power.COMMAND:
            self._down.add(host.name)
            ssh_power.run_command(self.inventory.host(host.name), "power_off", self.prefix)
            self.conn(host).close()
            return
        left = self.conn(host).check(kill_all_script(self.prefix), sudo=True).split()
        if left:
            raise RuntimeFailure(f"{host.name}: processes {left} survived the power-off's SIGKILL")
        self._disks.cut(host)

    def power_on(self, host: Host) -> None:
        """A host cut off by its power command: its power_on command, then wait for its sshd. A host on unsyncfs:
        mount what survived. Nothing else (a no-op on a host that is up)."""
        if host.name in self._down:
            entry = self.inventory.host(host.name)
            ssh_power.run_command(entry, "power_on", self.prefix)
            took = ssh_power.wait_for_sshd(self.conn(host), entry.power_timeout_s)
            log.info("ssh: %s is back %.1f s after its power_on command", host.name, took)
            self._down.discard(host.name)
        self._disks.power_on(host)

    def keep_unsynced(self, host: Host, dirs: list[Path], log_dir: Path) -> None:
        """On a host whose power-off is `unsyncfs`: mount it over the host's copies of `dirs` (idempotent). A host
        with a power command keeps its data on its own disk, which loses what it did not fsync by itself."""
        if self.power_kind(host) == ssh_power.UNSYNCFS:
            self._disks.keep(host, dirs, log_dir)

    # -- software and files ------------------------------------------------
    def install(self, host: Host, kafka_version: str) -> Software:
        if kafka_version != self.kafka_version:
            raise RuntimeFailure(f"{host.name}: provisioned for Kafka {self.kafka_version}, not {kafka_version}")
        if host.name not in self._software:
            self._provision(host)
        return self._software[host.name]

    def put(self, host: Host, path: Path) -> str:
        """A file over SFTP; a directory as one tar streamed into `tar -x` on the host."""
        target = self.host_path(host, path)
        conn = self.conn(host)
        conn.check(f"mkdir -p {shlex.quote(str(Path(target).parent))}")
        if path.is_dir():
            conn.check(f"tar -x -C {shlex.quote(str(Path(target).parent))}", stdin=ssh_install.tar_bytes(path),
                       timeout=120)
        else:
            conn.sftp_put(path, target)
        return target

    def fetch(self, host: Host, path: Path) -> None:
        """The host's copy of `path` into the run folder (a directory as one tar); nothing if it is not there, or
        while the host is off (a later fetch brings it)."""
        if self.down(host):
            return None
        source = Path(self.host_path(host, path))
        command = (f"cd {shlex.quote(str(source.parent))} 2>/dev/null && [ -e {shlex.quote(source.name)} ] "
                   f"&& tar -c {shlex.quote(source.name)} || true")
        status, out, err = self.conn(host).run(command, timeout=300)
        if not out:
            return None
        path.parent.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(out), mode="r") as tar:
            tar.extractall(path.parent, filter="data")

    # -- processes ---------------------------------------------------------
    def spawn(self, host: Host, name: str, argv: list[str], log: Path,
              env: dict[str, str] | None = None) -> SshProcess:
        pidfile = f"{self.run_root}/pids/{name.replace('/', '.')}.{time.time_ns()}.pid"  # never an old one's
        command = spawn_command(self.prefix, pidfile, self.host_path(host, log), argv, env)
        out = self.conn(host).check(command, retry=False).split()
        if len(out) != 2 or not out[0].isdigit():
            raise RuntimeFailure(f"{host.name}: {name} did not start (spawn said {' '.join(out)!r})")
        process = SshProcess(self, name, host, int(out[0]), out[1], pidfile)
        self._processes[name] = process
        self.state.set_process(name, {"pid": process.pid, "host": host.name, "argv0": argv[0],
                                      "start_time": process.started, "pidfile": pidfile})
        return process

    def process(self, name: str) -> SshProcess | None:
        if name not in self._processes:
            info = self.state.data.get("processes", {}).get(name)
            if info is None or "pidfile" not in info:
                return None
            self._processes[name] = SshProcess(self, name, self.plan.host(info["host"]), int(info["pid"]),
                                               str(info["start_time"]), info["pidfile"])
        return self._processes[name]

    def process_names(self) -> list[str]:
        return sorted(set(self._processes) | set(self.state.data.get("processes", {})))

    def execute(self, host: Host, argv: list[str], *, timeout: float = 30.0,
                input_text: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        if self.down(host):
            raise RuntimeFailure(f"{' '.join(argv)[:200]} on {host.name}: the host is powered off")
        conn = self.conn(host)
        status, out, err = conn.run(" ".join(shlex.quote(a) for a in argv), timeout=timeout,
                                    stdin=input_text.encode() if input_text is not None else None)
        proc = conn.completed(argv, status, out, err)
        if check and status != 0:
            raise RuntimeFailure(f"{' '.join(argv)[:200]} on {host.name}: exit {status}: "
                                 f"{(proc.stderr or proc.stdout).strip()[-300:]}")
        return proc

    # -- a cluster of the user's (`provision: false`, ssh_foreign) ------------
    def act(self, host: Host, role: str, action: str, timeout: float = 60.0) -> None:
        """The inventory's command line for `action` of `role`, run on the host (sh -c, sudo -n with sudo: true)."""
        line = self.inventory.host(host.name).command(role, action)
        if line is None:
            raise RuntimeFailure(f"{host.name}: the inventory names no commands.{role}.{action}")
        ssh_foreign.run_line(self.conn(host), line, timeout)

    def role_pid(self, host: Host, role: str, port: int) -> int | None:
        return ssh_foreign.listening_pid(self.conn(host), port)

    def role_paused(self, host: Host, role: str, port: int) -> bool:
        pid = self.role_pid(host, role, port)
        return pid is not None and ssh_foreign.paused(self.conn(host), pid)

    def fetch_from(self, host: Host, directory: str, names: str, into: Path) -> list[str]:
        return ssh_foreign.fetch_from(self.conn(host), directory, names, into)

    # -- firewall ----------------------------------------------------------
    def set_firewall(self, host: Host, rules: str) -> None:
        """One `iptables-restore --noflush` replacing the run's two chains (control address exempt first); nothing
        on a host that is off (the nemesis gives it its rules back at power-on)."""
        if self.down(host):
            return
        text = run_chains.restore_text(self.prefix, self.plan.control, rules)
        self.conn(host).check(run_chains.install_command(self.prefix), stdin=text.encode(), sudo=True)

    def clear_firewall(self, host: Host) -> None:
        if self.down(host):
            return
        self.conn(host).check(run_chains.clean_command(self.prefix), sudo=True)

    # -- link shaping (`ssh_links`: tc and the delay process on the host) ----
    def shape_links(self, host: Host, shaping: LinkShaping) -> None:
        if not self.down(host):
            self._links.shape(host, shaping)

    def clear_links(self, host: Host) -> None:
        if not self.down(host):
            self._links.clear(host)


def preflight(plan: AddressPlan, inventory: Inventory, known_hosts: str | None, power_cuts: bool = False,
              kafka_version: str | None = None, client_versions: tuple[str, ...] = ()) -> None:
    """Every host reachable, its key accepted and host key known, java (of a major `kafka_version` runs on) and
    python3 present (on client hosts, one each of `client_versions` has a wheel for), and with `power_cuts` every node
    host able to drop unsynced writes (a power command or FUSE); else UsageError.

    Runs before anything is created, on every host at once; changes nothing on any host."""
    check_hosts(plan, inventory, HostKeys(known_hosts, None), power_cuts, kafka_version, client_versions)


def clean_leftovers(inventory: Inventory, known_hosts: str | None, prefix: str | None = None) -> list[str]:
    """Remove what killed runs (or one run) left on the inventory's hosts: processes (delay processes too), chains,
    qdiscs, run directories."""
    pattern = prefix or "fl[0-9a-f]\\{6\\}"
    removed: list[str] = []
    keys = HostKeys(known_hosts, None)
    for entry in inventory.hosts:
        conn = SshConnection(entry, keys)
        try:
            pids = conn.check(find_script(pattern), sudo=True).split()
            left = conn.check(kill_all_script(pattern), sudo=True).split()
            if left:
                raise RuntimeFailure(f"{entry.entry}: processes {left} survived SIGKILL")
            removed += [f"{entry.name}: process {p}" for p in pids]
            removed += [f"{entry.name}: unsyncfs mount {m}" for m in
                        conn.check(detach_command(f"^{prefix or 'fl[0-9a-f]{6}'}-"), sudo=True).split()]
            removed += [f"{entry.name}: chain {c}" for c in
                        conn.check(run_chains.clean_command(prefix), sudo=True).split()]
            records = f"{inventory.root}/runs/{prefix or 'fl' + '[0-9a-f]' * 6}/tc"
            removed += [f"{entry.name}: qdisc on {d}" for d in conn.check(unshape_command(records), sudo=True).split()]
            runs = shlex.quote(f"{inventory.root}/runs")
            gone = conn.check(f"cd {runs} 2>/dev/null || exit 0; for d in {prefix or 'fl??????'}; do "
                              f"case $d in fl[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]) "
                              f"[ -d \"$d\" ] && rm -rf \"$d\" && echo \"$d\";; esac; done", sudo=True).split()
            removed += [f"{entry.name}: {inventory.root}/runs/{d}" for d in gone]
        finally:
            conn.close()
    return removed
