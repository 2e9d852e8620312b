"""The default runtime: every host a Linux network namespace on this machine, joined by one bridge.

The control plane (this process) keeps the bridge address, so it reaches every
host and no fault rule (always inside a host's namespace) can cut it off.
Hosts share this machine's disk, so `put` and `fetch` have nothing to copy and
`install` points at the local Kafka cache and Python. A node's data directories
can sit on the lose-unsynced-writes filesystem (`testbed.runtime.unsynced`),
mounted in this machine's mount namespace before the node's processes start; a
power-off kills every process of the host's namespace and that filesystem's
process at one instant, so what was not fsynced is gone. Nothing here touches the
machine's own firewall, enables forwarding or adds a route off the machine.
Must never: signal a process that does not carry this run's prefix, or delete
a namespace or link without it.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from testbed.addressing import AddressPlan, Host
from testbed.dist.classdata import ROLES as CDS_ROLES
from testbed.dist.classdata import archive_flags
from testbed.dist.kafka import classpath, java_for
from testbed.errors import RuntimeFailure, UsageError
from testbed.localprocs import command_of, is_alive, start_time, wait_dead
from testbed.runtime.base import EMPTY_FILTER_TABLE, PREFIX_RE, RUN_ENV, LinkShaping, Software, owned_names
from testbed.runtime.clocks import LocalClocks
from testbed.runtime.netns_firewall import FirewallChannels
from testbed.runtime.netns_links import NetnsLinks
from testbed.runtime.procs import LocalProcess, pids_of_runs, run_of
from testbed.runtime.unsynced import LocalDiskFaults, UnsyncedDisks, clean_mounts
from testbed.state import RunState

EXEC_WAIT_S = 5.0  # from Popen until `ip netns exec` has become the command
log = logging.getLogger("faultline.runtime")


def ip(*args: str, input_text: str | None = None, check: bool = True) -> str:
    """Run `ip`; raise RuntimeFailure naming the command on failure."""
    proc = subprocess.run(["ip", *args], input=input_text, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise RuntimeFailure(f"ip {' '.join(args)}: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout


def ip_batch(commands: list[str]) -> None:
    """Run `ip` commands in one `ip -force -batch` (each tried even if one before it failed); errors ignored."""
    if commands:
        ip("-force", "-batch", "-", input_text="\n".join(commands) + "\n", check=False)


def list_namespaces() -> list[str]:
    out = ip("-j", "netns", "list", check=False).strip()
    return sorted(n["name"] for n in json.loads(out or "[]"))


def list_links() -> list[str]:
    out = ip("-j", "link", "show", check=False).strip()
    return sorted(link["ifname"] for link in json.loads(out or "[]"))


def namespace_pids(ns: str) -> list[int]:
    out = ip("netns", "pids", ns, check=False)
    return [int(p) for p in out.split()]


class NetnsRuntime(LocalDiskFaults, LocalClocks):
    """Hosts as network namespaces; implements Runtime, Firewalled, KeepsNetwork, PowerCycled, LosesUnsyncedWrites,
    DiskFaults, LinkShaper and ShiftsClocks; its processes are Pausable."""

    kind = "netns"

    def __init__(self, prefix: str, plan: AddressPlan, state: RunState) -> None:
        if not PREFIX_RE.match(prefix):
            raise RuntimeFailure(f"bad run prefix {prefix!r}")
        self.prefix = prefix
        self.plan = plan
        self.state = state
        self._processes: dict[str, LocalProcess] = {}
        self._firewalls = FirewallChannels(self._env(None))
        self.disks = UnsyncedDisks(prefix, state, self._env(None))
        self._links = NetnsLinks(lambda host: ["ip", "netns", "exec", self.namespace(host)], self._env(None))
        self._kept: set[str] = set()  # links destroy leaves (keep_network)

    # -- names -------------------------------------------------------------
    def namespace(self, host: Host) -> str:
        return f"{self.prefix}-{host.name}"

    @property
    def bridge(self) -> str:
        return f"{self.prefix}-br"

    def _veth(self, host: Host) -> str:
        return f"{self.prefix}-{host.tag}"

    # -- lifecycle ---------------------------------------------------------
    @staticmethod
    def preflight(plan: AddressPlan) -> None:
        """Refuse a plan whose network overlaps a route or address already on the machine."""
        net = ipaddress.IPv4Network(plan.network)
        for where, other in machine_networks():
            if net.overlaps(other):
                raise UsageError(f"--network {plan.network} overlaps {where} already on this machine; "
                                 f"choose another range (or run 'python -m harness clean' if a dead run left it)")

    def create(self) -> None:
        plan = self.plan
        self.state.add("links", self.bridge)
        ip("link", "add", self.bridge, "type", "bridge")
        # Bridged frames must not traverse the machine's own iptables (br_netfilter):
        # the machine's firewall is not ours to depend on or to change.
        ip("link", "set", "dev", self.bridge, "type", "bridge", "nf_call_iptables", "0", check=False)
        ip("addr", "add", f"{plan.control}/{plan.prefixlen}", "dev", self.bridge)
        ip("link", "set", self.bridge, "up")
        for host in plan.hosts:
            ns, veth = self.namespace(host), self._veth(host)
            self.state.add("namespaces", ns)
            ip("netns", "add", ns)
            self.state.add("links", veth)
            ip("link", "add", veth, "type", "veth", "peer", "name", f"{veth}p", "netns", ns)
            ip("link", "set", veth, "master", self.bridge, "up")
            ip("-n", ns, "-batch", "-", input_text="\n".join([
                f"link set {veth}p name eth0",
                f"addr add {host.address}/{plan.prefixlen} dev eth0",
                "link set eth0 up",
                "link set lo up",
            ]) + "\n")

    def exists(self) -> bool:
        return any(ns.startswith(self.prefix + "-") for ns in list_namespaces())

    def keep_network(self) -> None:
        self._kept.add(self.bridge)

    def destroy(self) -> None:
        self._firewalls.close()  # a channel's netlink socket would keep a deleted namespace alive
        self._links.close()  # delay processes release what they hold and go
        namespaces = sorted(set(self.state.data.get("namespaces", []))
                            | {n for n in list_namespaces() if n.startswith(self.prefix + "-")})
        pids = set(pids_of_runs(self.prefix))
        pids |= {int(p["pid"]) for p in self.state.data.get("processes", {}).values()
                 if run_of(int(p["pid"])) == self.prefix}
        for ns in namespaces:
            pids |= set(namespace_pids(ns))
        disks = self.disks.pids()
        kill_all(sorted(pids - disks))  # the nodes' processes first, then their disks sync and unmount
        self.disks.unmount_all()
        kill_all(sorted(p for p in pids & disks if is_alive(p)))
        for process in self._processes.values():
            process.exit_status()  # reap
        present = set(list_namespaces())
        ip_batch([f"netns del {ns}" for ns in namespaces if ns in present])  # one `ip` for all of them
        for ns in namespaces:
            self.state.discard("namespaces", ns)
        present = set(list_links())  # a deleted namespace took its end of each veth pair, and so the pair
        links = sorted(set(self.state.data.get("links", [])) | {x for x in present if x.startswith(self.prefix)})
        links = [link for link in links if link not in self._kept]
        ip_batch([f"link del {link}" for link in links if link in present])
        for link in links:
            self.state.discard("links", link)
        self.state.update(processes={})

    # -- power: every process of a host at once, and its unsynced writes -----
    def keep_unsynced(self, host: Host, dirs: list[Path], log_dir: Path) -> None:
        self.disks.keep(host.name, dirs, log_dir)

    def power_off(self, host: Host) -> None:
        """SIGKILL every process in the host's namespace and its disks' processes at once; their mounts detached."""
        self._firewalls.drop(host.name)  # its iptables-restore channel dies with the host's other processes
        victims = [p for p in namespace_pids(self.namespace(host)) if is_alive(p)]
        for pid in victims:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.disks.cut_host(host.name)

    def power_on(self, host: Host) -> None:
        """Mount what the host's disks kept (a no-op while they are up)."""
        self.disks.mount_host(host.name)

    # -- software and files: one disk, nothing to copy ---------------------
    def install(self, host: Host, kafka_version: str) -> Software:
        # The nodes start from the class-data archives `make setup` built, when there are any (testbed.dist.classdata).
        # Their java is the one the version table names for the version (testbed.dist.versions).
        return Software(java=java_for(kafka_version), kafka_classpath=classpath(kafka_version),
                        python=(sys.executable,), jvm_flags={role: tuple(archive_flags(kafka_version, role)) for role in CDS_ROLES})

    def host_path(self, host: Host, path: Path) -> str:
        return str(path)

    def put(self, host: Host, path: Path) -> str:
        return str(path)

    def fetch(self, host: Host, path: Path) -> None:
        return None

    # -- processes ---------------------------------------------------------
    def _env(self, env: dict[str, str] | None) -> dict[str, str]:
        merged = dict(os.environ)
        merged.update(env or {})
        merged[RUN_ENV] = self.prefix
        return merged

    def spawn(self, host: Host, name: str, argv: list[str], log: Path,
              env: dict[str, str] | None = None) -> LocalProcess:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as out:
            # `ip netns exec` execs the command: the pid we get is the process itself.
            child = subprocess.Popen(["ip", "netns", "exec", self.namespace(host), *argv],
                                     stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                     env=self._env(env), start_new_session=True)
        self._await_exec(child, argv[0])
        process = LocalProcess(name, host, child.pid, self.prefix, start_time(child.pid), child)
        self._processes[name] = process
        self.state.set_process(name, {"pid": child.pid, "host": host.name, "argv0": argv[0],
                                      "start_time": process.started})
        return process

    def process(self, name: str) -> LocalProcess | None:
        if name in self._processes:
            return self._processes[name]
        info = self.state.data.get("processes", {}).get(name)
        if info is None:
            return None
        # A dead harness's process: no Popen, so its exit status cannot be read.
        process = LocalProcess(name, self.plan.host(info["host"]), int(info["pid"]), self.prefix,
                               info.get("start_time"))
        self._processes[name] = process
        return process

    def process_names(self) -> list[str]:
        return sorted(set(self._processes) | set(self.state.data.get("processes", {})))

    def _await_exec(self, child: subprocess.Popen[bytes], argv0: str) -> None:
        """Return once `ip` has exec'd the command (or it ended, or EXEC_WAIT_S passed).

        Until then the pid is `ip`'s, and while the kernel loads the new image
        /proc/PID/environ reads empty, so the process does not yet show as this
        run's: `alive` would call a process just started not running, and
        `signal` would skip it. The command name changes first, the
        environment is readable again last.
        """
        want = os.path.basename(argv0)[:15]
        deadline = time.monotonic() + EXEC_WAIT_S
        while child.poll() is None and time.monotonic() < deadline:
            if command_of(child.pid) == want and run_of(child.pid) == self.prefix:
                return
            time.sleep(0.001)

    def execute(self, host: Host, argv: list[str], *, timeout: float = 30.0,
                input_text: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        cmd = ["ip", "netns", "exec", self.namespace(host), *argv]
        try:
            proc = subprocess.run(cmd, input=input_text, capture_output=True, text=True,
                                  timeout=timeout, env=self._env(None))
        except subprocess.TimeoutExpired as exc:
            raise RuntimeFailure(f"{' '.join(argv)} on {host.name}: no answer within {timeout:.0f} s") from exc
        if check and proc.returncode != 0:
            raise RuntimeFailure(f"{' '.join(argv)} on {host.name}: exit {proc.returncode}: "
                                 f"{(proc.stderr or proc.stdout).strip()[-300:]}")
        return proc

    # -- firewall ----------------------------------------------------------
    def set_firewall(self, host: Host, rules: str) -> None:
        """Make the host's fault chains hold exactly `rules`, atomically (`FirewallChannels.install`)."""
        def replace_table(table: str) -> None:
            self.execute(host, ["iptables-restore"], input_text=table)
        self._firewalls.install(host.name, f"/run/netns/{self.namespace(host)}", rules, replace_table)

    def clear_firewall(self, host: Host) -> None:
        """Remove the fault chains and their hooks from the host's filter table, and its channel; idempotent."""
        self._firewalls.drop(host.name)
        self.execute(host, ["iptables-restore"], input_text=EMPTY_FILTER_TABLE)

    # -- link shaping (`testbed.runtime.netns_links`) -------------------------
    def shape_links(self, host: Host, shaping: LinkShaping) -> None:
        self._links.shape(host, shaping)

    def clear_links(self, host: Host) -> None:
        self._links.clear(host)


def machine_networks() -> list[tuple[str, ipaddress.IPv4Network]]:
    """(where, network) for every IPv4 route and interface address on the machine."""
    found: list[tuple[str, ipaddress.IPv4Network]] = []
    for r in json.loads(ip("-j", "-4", "route", "show", "table", "main") or "[]"):
        dst = r.get("dst", "")
        if dst and dst != "default":
            found.append((f"route {dst} dev {r.get('dev', '?')}", ipaddress.IPv4Network(dst, strict=False)))
    for link in json.loads(ip("-j", "-4", "addr", "show") or "[]"):
        for a in link.get("addr_info", []):
            if a.get("local", "").startswith("127."):
                continue
            net = ipaddress.IPv4Network(f"{a['local']}/{a['prefixlen']}", strict=False)
            found.append((f"address {a['local']}/{a['prefixlen']} on {link.get('ifname', '?')}", net))
    return found


def kill_all(pids: list[int]) -> None:
    """SIGKILL the given pids (already vetted as ours) and wait for them to go."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    stuck = wait_dead(pids, timeout=10.0)
    if stuck:
        raise RuntimeFailure(f"processes {stuck} did not die after SIGKILL")


def clean_leftovers(prefix: str | None = None) -> list[str]:
    """Remove every namespace, link and process of the project's runs (or one run); return what went.

    Found by name and environment, not by state file: works after any crash.
    Only names matching the project's prefix pattern are touched.
    """
    pattern = owned_names(prefix)
    removed: list[str] = []
    namespaces = [n for n in list_namespaces() if pattern.match(n)]
    pids = set(pids_of_runs(prefix))
    for ns in namespaces:
        pids |= {p for p in namespace_pids(ns) if is_alive(p)}
    kill_all(sorted(pids))
    removed += [f"process {p}" for p in sorted(pids)]
    removed += clean_mounts(prefix)
    ip_batch([f"netns del {ns}" for ns in namespaces])
    removed += [f"namespace {ns}" for ns in namespaces]
    links = [link for link in list_links() if pattern.match(link)]  # what the namespaces' deletion left
    ip_batch([f"link del {link}" for link in links])
    removed += [f"link {link}" for link in links]
    return removed
