"""The default runtime: every host a Linux network namespace on this machine, joined by one bridge.

The control plane (this process) keeps the bridge address, so it reaches every
host and no fault rule (always inside a host's namespace) can cut it off.
Nothing here touches the machine's own firewall, enables forwarding or adds a
route off the machine. Must never: signal a process that does not carry this
run's prefix, or delete a namespace or link without it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
from pathlib import Path

from harness.addressing import AddressPlan, Host
from harness.errors import RuntimeFailure
from harness.runtime.procs import PREFIX_RE, RUN_ENV, is_alive, pids_of_runs, run_of, wait_dead
from harness.state import RunState

FAULT_CHAIN = "FAULTLINE"


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
        return child

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
        """Install `rules` (iptables-restore lines for FAULTLINE chains) atomically, hooked from INPUT/OUTPUT."""
        text = (f"*filter\n:{FAULT_CHAIN}-IN - [0:0]\n:{FAULT_CHAIN}-OUT - [0:0]\n"
                f"-A INPUT -j {FAULT_CHAIN}-IN\n-A OUTPUT -j {FAULT_CHAIN}-OUT\n{rules}COMMIT\n")
        self.execute(host, ["iptables-restore"], input_text=text)

    def clear_firewall(self, host: Host) -> None:
        self.execute(host, ["iptables-restore"], input_text="*filter\n:INPUT ACCEPT [0:0]\n"
                     ":OUTPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\nCOMMIT\n")


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
