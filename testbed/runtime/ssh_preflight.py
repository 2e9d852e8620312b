"""Before an ssh run creates anything: every host of the plan answers, accepts the key, shows a known host key,
and has what the runtime cannot upload (a node host of a cluster faultline did not make: only iptables, tar and ss;
java on nodes, of a major the run's Kafka runs on; python3 everywhere,
venv on client hosts, iptables; tc, CAP_NET_ADMIN and the kernel's HTB and NFQUEUE for slowed and throttled
links; for power-offs that must drop unsynced writes, on each node host a power command in the inventory or
FUSE that this machine's unsyncfs can use; on client hosts, a wheel of each client under test's confluent-kafka for
their Python and glibc, downloaded into this machine's cache).

All hosts are checked at once; the first problem (in plan order) becomes one
UsageError line naming the host and the cause. Only read-only commands run.
Must never: change anything on a host.
"""

from __future__ import annotations

import shlex
from concurrent.futures import ThreadPoolExecutor

import paramiko

from testbed.addressing import AddressPlan, Host
from testbed.dist.versions import java_major, java_problem
from testbed.errors import HarnessError, UsageError
from testbed.inventory import Inventory
from testbed.runtime.ssh_client_venvs import no_wheel_problem
from testbed.runtime.ssh_conn import HostKeys, SshConnection, connect_error
from testbed.runtime.ssh_power import fuse_problem

# What each role needs on the host, as `command -v` names, with what to install when it is missing.
NEEDS = {
    "node": (("java", "a Java runtime (Java 8-17), e.g. openjdk-17-jre-headless"),
             ("python3", "python3 (the broker observer)")),
    "client": (("python3", "python3 with venv, e.g. python3-venv"),),
}
COMMON = (("iptables-restore", "iptables (fault rules)"), ("tar", "tar"), ("sha256sum", "coreutils' sha256sum"),
          ("setsid", "util-linux's setsid"), ("tc", "iproute2 (slow-link and throttle-link)"),
          ("ip", "iproute2 (slow-link and throttle-link)"))
# A node host of a cluster faultline did not make (inventory `provision: false`): fault rules, the topic's
# partition directories fetched as one tar, and the pids of the cluster's processes by their ports.
EXISTING_NODE = (("iptables-restore", "iptables (fault rules)"), ("tar", "tar"),
                 ("ss", "iproute2's ss (the cluster's processes, by their ports)"))
# Prints the effective capabilities (hex) of a root shell there.
CAPS = "sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status"
CAP_NET_ADMIN = 12
# The kernel modules slowed and throttled links need that the kernel plainly lacks: neither loaded nor built in nor
# installed. Where /lib/modules says nothing (a container), nothing is reported: the first use would tell.
MODULES = {"sch_htb": "HTB (throttle-link)", "nfnetlink_queue": "NFQUEUE (slow-link)"}
KERNEL = ('k=/lib/modules/$(uname -r); for m in "$@"; do [ -d /sys/module/$m ] && continue; [ -d $k ] || continue; '
          r'grep -qs "/$m\.ko" $k/modules.builtin $k/modules.dep || echo $m; done; exit 0')


def check_host(host: Host, inventory: Inventory, keys: HostKeys, power_cuts: bool = False,
               kafka_version: str | None = None, client_versions: tuple[str, ...] = ()) -> str | None:
    """What is wrong with one host, in one phrase naming it; None when it is fit (its java able to run
    `kafka_version` when one is given, a client host's Python able to run each of `client_versions`)."""
    entry = inventory.host(host.name)
    conn = SshConnection(entry, keys)
    try:
        try:
            conn.connect()
        except (paramiko.SSHException, OSError) as exc:
            return connect_error(entry, exc, keys)
        where = f"{entry.entry} {entry.target} ({host.name})"
        theirs = host.role == "node" and not inventory.provision  # a node of the user's cluster: nothing installed
        for command, what in (EXISTING_NODE if theirs else (*NEEDS[host.role], *COMMON)):
            status, _, _ = conn.run(f"command -v {command} >/dev/null 2>&1 || test -x /usr/sbin/{command} "
                                    f"|| test -x /sbin/{command}", retry=False)
            if status != 0:
                return f"{where}: no {command} on the host (install {what})"
        if host.role == "node" and not theirs:
            status, out, err = conn.run("java -version", retry=False)
            if status != 0:
                return f"{where}: java does not run: {(err or out).decode(errors='replace').strip()[-200:]}"
            said = java_problem_of(kafka_version, (err + out).decode(errors="replace"))
            if said:
                return f"{where}: {said}"
        if host.role == "client":
            status, _, err = conn.run("python3 -c 'import venv, ensurepip'", retry=False)
            if status != 0:
                return f"{where}: python3 has no venv/ensurepip (install python3-venv)"
            wheel = no_wheel_problem(conn, client_versions)
            if wheel is not None:
                return f"{where}: {wheel}"
        if entry.sudo:
            status, _, err = conn.run("sudo -n true", retry=False)
            if status != 0:
                return f"{where}: sudo: true, but 'sudo -n' asks for a password or is refused"
        problem = _kernel_problem(conn, where, modules=not theirs)
        if problem is None and power_cuts and host.role == "node" and entry.power_off is None:
            fuse = fuse_problem(conn)
            if fuse is not None:
                problem = (f"{where}: a power-off cannot drop its unsynced writes: {fuse}, and the inventory names "
                           f"no power_off/power_on command for it (name one, or set cluster.lose_unsynced_writes: "
                           f"false to run power-offs as kills that keep the page cache)")
        return problem
    except HarnessError as exc:
        return f"{entry.entry} ({host.name}): {exc}"
    finally:
        conn.close()


def _kernel_problem(conn: SshConnection, where: str, modules: bool = True) -> str | None:
    """What the host's kernel or privileges lack for fault rules and (`modules`) shaped links (read-only checks)."""
    status, out, _ = conn.run(CAPS, retry=False, sudo=True)
    caps = out.decode(errors="replace").strip()
    try:
        if status == 0 and not int(caps, 16) >> CAP_NET_ADMIN & 1:
            return (f"{where}: no CAP_NET_ADMIN for its root (fault rules, tc and the delay process need it; "
                    f"a container needs --cap-add NET_ADMIN)")
    except ValueError:
        pass  # no /proc/self/status to read: the first fault would tell
    if not modules:
        return None
    status, out, _ = conn.run(f"sh -c {shlex.quote(KERNEL)} kernel {' '.join(MODULES)}", retry=False)
    missing = out.decode(errors="replace").split() if status == 0 else []
    if missing:
        return f"{where}: the kernel has no {', '.join(MODULES[m] for m in missing if m in MODULES)} ({' '.join(missing)})"
    return None


def java_problem_of(kafka_version: str | None, java_version_output: str) -> str | None:
    """Why a node host whose `java -version` printed `java_version_output` cannot run `kafka_version`; None when
    it can, or when either is unknown."""
    major = java_major(java_version_output)
    return java_problem(kafka_version, major) if kafka_version and major is not None else None


def check_hosts(plan: AddressPlan, inventory: Inventory, keys: HostKeys, power_cuts: bool = False,
                kafka_version: str | None = None, client_versions: tuple[str, ...] = ()) -> None:
    with ThreadPoolExecutor(max_workers=len(plan.hosts), thread_name_prefix="preflight") as pool:
        problems = list(pool.map(lambda h: check_host(h, inventory, keys, power_cuts, kafka_version, client_versions),
                                 plan.hosts))
    found = [p for p in problems if p is not None]
    if found:
        more = f" (and {len(found) - 1} more host(s) with problems)" if len(found) > 1 else ""
        raise UsageError(f"inventory {inventory.path}: {found[0]}{more}")
