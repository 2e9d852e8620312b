"""The default runtime: every host a Linux network namespace on this machine, joined by one bridge.

The control plane (this process) keeps the bridge address, so it reaches every
host and no fault rule (always inside a host's namespace) can cut it off.
Nothing here touches the machine's own firewall, enables forwarding or adds a
route off the machine. Must never: signal a process that does not carry this
run's prefix, or delete a namespace or link without it.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import os
import re
import signal
import socket
import struct
import subprocess
import threading
import time
from pathlib import Path

from testbed.addressing import AddressPlan, Host
from testbed.errors import RuntimeFailure
from testbed.runtime.procs import PREFIX_RE, RUN_ENV, command_of, is_alive, pids_of_runs, run_of, wait_dead
from testbed.state import RunState

FAULT_CHAIN = "FAULTLINE"
# Hearing nftables commits (linux/netfilter/nfnetlink.h, nf_tables.h).
NETLINK_NETFILTER = 12
NFNLGRP_NFTABLES = 7
NFT_MSG_NEWGEN = (10 << 8) | 15  # NFNL_SUBSYS_NFTABLES << 8 | NFT_MSG_NEWGEN
NFTA_GEN_PROC_PID = 2
CLONE_NEWNET = 0x40000000
FIREWALL_ACK_S = 5.0
EXEC_WAIT_S = 5.0  # from Popen until `ip netns exec` has become the command
_libc = ctypes.CDLL(None, use_errno=True)
log = logging.getLogger("faultline.runtime")


def ip(*args: str, input_text: str | None = None, check: bool = True) -> str:
    """Run `ip`; raise RuntimeFailure naming the command on failure."""
    proc = subprocess.run(["ip", *args], input=input_text, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise RuntimeFailure(f"ip {' '.join(args)}: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout


def list_namespaces() -> list[str]:
    out = ip("-j", "netns", "list", check=False).strip()
    return sorted(n["name"] for n in json.loads(out or "[]"))


def list_links() -> list[str]:
    out = ip("-j", "link", "show", check=False).strip()
    return sorted(link["ifname"] for link in json.loads(out or "[]"))


def namespace_pids(ns: str) -> list[int]:
    out = ip("netns", "pids", ns, check=False)
    return [int(p) for p in out.split()]


class NetnsRuntime:
    """Hosts as network namespaces; implements Runtime, Pausable and Firewalled."""

    def __init__(self, prefix: str, plan: AddressPlan, state: RunState) -> None:
        if not PREFIX_RE.match(prefix):
            raise RuntimeFailure(f"bad run prefix {prefix!r}")
        self.prefix = prefix
        self.plan = plan
        self.state = state
        self._children: list[subprocess.Popen[bytes]] = []
        self._firewalls: dict[str, FirewallChannel] = {}
        self._firewall_locks: dict[str, threading.Lock] = {}
        self._firewalls_guard = threading.Lock()

    @property
    def children(self) -> list[subprocess.Popen[bytes]]:
        """Processes this harness process started (and so can reap and read exit codes of)."""
        return list(self._children)

    # -- names -------------------------------------------------------------
    def namespace(self, host: Host) -> str:
        return f"{self.prefix}-{host.name}"

    @property
    def bridge(self) -> str:
        return f"{self.prefix}-br"

    def _veth(self, host: Host) -> str:
        return f"{self.prefix}-{host.tag}"

    # -- lifecycle ---------------------------------------------------------
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

    def destroy(self) -> None:
        self._close_firewall_channels()
        namespaces = sorted(set(self.state.data.get("namespaces", []))
                            | {n for n in list_namespaces() if n.startswith(self.prefix + "-")})
        pids = set(pids_of_runs(self.prefix))
        pids |= {int(p["pid"]) for p in self.state.data.get("processes", {}).values()
                 if run_of(int(p["pid"])) == self.prefix}
        for ns in namespaces:
            pids |= set(namespace_pids(ns))
        kill_all(sorted(pids))
        for child in self._children:
            child.poll()
        for ns in namespaces:
            if ns in list_namespaces():
                ip("netns", "del", ns, check=False)
            self.state.discard("namespaces", ns)
        present = set(list_links())
        for link in sorted(set(self.state.data.get("links", [])) | {x for x in present if x.startswith(self.prefix)}):
            if link in present:
                ip("link", "del", link, check=False)
            self.state.discard("links", link)
        self.state.update(processes={})

    # -- processes ---------------------------------------------------------
    def _env(self, env: dict[str, str] | None) -> dict[str, str]:
        merged = dict(os.environ)
        merged.update(env or {})
        merged[RUN_ENV] = self.prefix
        return merged

    def spawn(self, host: Host, name: str, argv: list[str], log_path: Path,
              env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "ab") as log:
            # `ip netns exec` execs the command: the pid we get is the process itself.
            child = subprocess.Popen(["ip", "netns", "exec", self.namespace(host), *argv],
                                     stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                     env=self._env(env), start_new_session=True)
        self._children.append(child)
        self.state.set_process(name, {"pid": child.pid, "host": host.name, "argv0": argv[0]})
        self._await_exec(child, argv[0])
        return child

    def _await_exec(self, child: subprocess.Popen[bytes], argv0: str) -> None:
        """Return once `ip` has exec'd the command (or it ended, or EXEC_WAIT_S passed).

        Until then the pid is `ip`'s, and while the kernel loads the new image
        /proc/PID/environ reads empty, so the process does not yet show as this
        run's: `pids` would call a process just started not running, and
        `signal` would refuse it. The command name changes first, the
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

    def signal(self, pid: int, signum: int) -> None:
        if run_of(pid) != self.prefix:
            raise RuntimeFailure(f"pid {pid} is not a process of run {self.prefix}; refusing to signal it")
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)
        for child in self._children:
            child.poll()

    def pause(self, pid: int) -> None:
        self.signal(pid, signal.SIGSTOP)

    def resume(self, pid: int) -> None:
        self.signal(pid, signal.SIGCONT)

    # -- firewall ----------------------------------------------------------
    def set_firewall(self, host: Host, rules: str) -> None:
        """Make the host's fault chains hold exactly `rules` (iptables-restore lines), atomically.

        Fast path: the host's `FirewallChannel` (a long-lived iptables-restore)
        commits the change as one transaction and we return once the kernel
        announces it, a few milliseconds. Whenever that path cannot vouch for
        the result (first use, the process died, another process changed the
        host's rules, no acknowledgement), the whole filter table is replaced
        by a one-shot iptables-restore instead, and a new channel is opened.
        """
        with self._firewall_lock(host):
            channel = self._firewalls.pop(host.name, None)
            if channel is not None:
                try:
                    channel.install(rules)
                    self._firewalls[host.name] = channel
                    return
                except RuntimeFailure as exc:
                    log.warning("firewall of %s: %s; replacing the whole table", host.name, exc)
                    channel.close()
            monitor = nftables_monitor(self.namespace(host))
            try:
                self.execute(host, ["iptables-restore"], input_text=fault_table(rules))
                self._firewalls[host.name] = FirewallChannel(self, host, monitor, rules)
            except BaseException:
                monitor.close()
                raise

    def clear_firewall(self, host: Host) -> None:
        """Remove the fault chains and their hooks from the host's filter table, and its channel; idempotent."""
        with self._firewall_lock(host):
            self.execute(host, ["iptables-restore"], input_text="*filter\n:INPUT ACCEPT [0:0]\n"
                         ":OUTPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\nCOMMIT\n")
            channel = self._firewalls.pop(host.name, None)
            if channel is not None:
                channel.close()

    def _close_firewall_channels(self) -> None:
        """End every host's firewall channel; its netlink socket would keep a deleted namespace alive."""
        with self._firewalls_guard:
            channels, self._firewalls = list(self._firewalls.values()), {}
        for channel in channels:
            channel.end_input()  # all at once: each process takes a while to exit
        for channel in channels:
            channel.close()

    def _firewall_lock(self, host: Host) -> threading.Lock:
        with self._firewalls_guard:
            return self._firewall_locks.setdefault(host.name, threading.Lock())


def fault_table(rules: str) -> str:
    """A whole filter table: the fault chains, hooked from INPUT and OUTPUT, holding `rules`."""
    return (f"*filter\n:{FAULT_CHAIN}-IN - [0:0]\n:{FAULT_CHAIN}-OUT - [0:0]\n"
            f"-A INPUT -j {FAULT_CHAIN}-IN\n-A OUTPUT -j {FAULT_CHAIN}-OUT\n{rules}COMMIT\n")


def nftables_monitor(namespace: str) -> socket.socket:
    """A netfilter netlink socket in `namespace` that hears every nftables change made there."""
    made: list[socket.socket | BaseException] = []

    def make() -> None:
        # setns(2) moves only the calling thread, so a throwaway thread does it and ours stays put;
        # the socket belongs to the namespace it was created in.
        try:
            fd = os.open(f"/run/netns/{namespace}", os.O_RDONLY)
            try:
                if _libc.setns(fd, CLONE_NEWNET) != 0:
                    err = ctypes.get_errno()
                    raise OSError(err, f"setns into {namespace}: {os.strerror(err)}")
            finally:
                os.close(fd)
            sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
            sock.bind((0, 1 << (NFNLGRP_NFTABLES - 1)))
            made.append(sock)
        except BaseException as exc:
            made.append(exc)

    worker = threading.Thread(target=make, name=f"netns-{namespace}")
    worker.start()
    worker.join()
    if isinstance(made[0], BaseException):
        raise RuntimeFailure(f"cannot watch the firewall of {namespace}: {made[0]}") from made[0]
    return made[0]


def committed_by(datagram: bytes) -> list[int]:
    """The pids named by the NEWGEN messages (one per committed nftables transaction) in a netlink datagram."""
    pids, off = [], 0
    while off + 20 <= len(datagram):
        length, kind = struct.unpack_from("=IH", datagram, off)
        if length < 16:
            break
        if kind == NFT_MSG_NEWGEN:
            attr = off + 20  # after nlmsghdr (16) and nfgenmsg (4)
            while attr + 4 <= off + length:
                alen, atype = struct.unpack_from("=HH", datagram, attr)
                if alen < 4:
                    break
                if atype == NFTA_GEN_PROC_PID:
                    pids.append(struct.unpack_from(">I", datagram, attr + 4)[0])
                attr += (alen + 3) & ~3
        off += (length + 3) & ~3
    return pids


class FirewallChannel:
    """One host's fault chains, rewritten by a long-lived `iptables-restore --noflush` in its namespace.

    Each `install` writes one COMMIT block to the process's stdin: one atomic
    nftables transaction that replaces both fault chains. The kernel announces
    every committed transaction in the namespace with a NEWGEN message naming
    the committing process; ours is the acknowledgement, anyone else's means
    the rules are no longer what this channel last installed. Spawning a
    process per change costs tens of milliseconds (its netlink socket's close
    waits for an RCU grace period); this costs a pipe write and a netlink read.
    The process carries the run's prefix, so teardown and `clean` find it.
    """

    def __init__(self, runtime: NetnsRuntime, host: Host, monitor: socket.socket, installed: str) -> None:
        self.host = host
        self.monitor = monitor
        self.process = subprocess.Popen(
            ["ip", "netns", "exec", runtime.namespace(host), "iptables-restore", "--noflush"],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            env=runtime._env(None), start_new_session=True)
        self.installed: str | None = installed
        self._drain()  # the one-shot restore that made the table was not ours: forget its announcement

    def _drain(self) -> list[int]:
        """Every committing pid announced since the last read, without waiting."""
        pids: list[int] = []
        self.monitor.setblocking(False)
        try:
            while True:
                pids += committed_by(self.monitor.recv(1 << 16))
        except BlockingIOError:
            return pids
        except OSError as exc:  # ENOBUFS: announcements were lost, so were possibly foreign ones
            raise RuntimeFailure(f"lost track of the firewall ({exc})") from exc

    def install(self, rules: str) -> None:
        """Make the fault chains hold `rules`; RuntimeFailure if it cannot be sure they do."""
        if any(pid != self.process.pid for pid in self._drain()):
            raise RuntimeFailure("another process changed the rules")
        if rules == self.installed:
            return  # an identical transaction would be empty, and the kernel announces no empty one
        if self.process.poll() is not None:
            raise RuntimeFailure(f"iptables-restore exited {self.process.returncode}: {self._stderr()}")
        self.installed = None
        block = f"*filter\n:{FAULT_CHAIN}-IN - [0:0]\n:{FAULT_CHAIN}-OUT - [0:0]\n{rules}COMMIT\n"
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(block)
            self.process.stdin.flush()
        except OSError as exc:
            raise RuntimeFailure(f"iptables-restore went away: {exc}") from exc
        self._await_commit()
        self.installed = rules

    def _await_commit(self) -> None:
        deadline = time.monotonic() + FIREWALL_ACK_S
        self.monitor.setblocking(True)
        while (left := deadline - time.monotonic()) > 0:
            self.monitor.settimeout(min(left, 0.05))
            try:
                pids = committed_by(self.monitor.recv(1 << 16))
            except TimeoutError:
                if self.process.poll() is not None:
                    raise RuntimeFailure(f"iptables-restore exited {self.process.returncode}: "
                                         f"{self._stderr()}") from None
                continue
            except OSError as exc:
                raise RuntimeFailure(f"lost track of the firewall ({exc})") from exc
            if any(pid != self.process.pid for pid in pids):
                raise RuntimeFailure("another process changed the rules meanwhile")
            if pids:
                return
        raise RuntimeFailure(f"rules not confirmed within {FIREWALL_ACK_S:.0f} s")

    def _stderr(self) -> str:
        if self.process.poll() is None or self.process.stderr is None:
            return ""
        return self.process.stderr.read().strip()[-300:]

    def end_input(self) -> None:
        """Tell the process there is nothing more to commit; it exits soon after."""
        with contextlib.suppress(OSError):
            if self.process.stdin is not None:
                self.process.stdin.close()

    def close(self) -> None:
        """End the process and stop listening."""
        self.end_input()
        try:
            self.process.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stderr is not None:
            self.process.stderr.close()
        self.monitor.close()


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
    pattern = re.compile(rf"^{re.escape(prefix)}-" if prefix else r"^fl[0-9a-f]{6}-")
    removed: list[str] = []
    namespaces = [n for n in list_namespaces() if pattern.match(n)]
    pids = set(pids_of_runs(prefix))
    for ns in namespaces:
        pids |= {p for p in namespace_pids(ns) if is_alive(p)}
    kill_all(sorted(pids))
    removed += [f"process {p}" for p in sorted(pids)]
    for ns in namespaces:
        ip("netns", "del", ns, check=False)
        removed.append(f"namespace {ns}")
    for link in list_links():
        if pattern.match(link) and link in list_links():
            ip("link", "del", link, check=False)
            removed.append(f"link {link}")
    return removed
