"""What a power-off is on each ssh host, and the inventory's power commands.

Per node host, decided when the run is created and recorded in state.json
(`ssh.power`), the report and run.json:

- `command`: the inventory names `power_off` and `power_on` command lines for the
  host (an IPMI, hypervisor or cloud CLI call). They run on this machine (the
  harness's), through `sh -c`, with the harness's environment plus
  FAULTLINE_HOST (az1-node), FAULTLINE_ADDRESS, FAULTLINE_SSH_ADDRESS and
  FAULTLINE_PREFIX, each bounded by the host's `power_timeout_s`; a command that
  fails or outlasts it is a RuntimeFailure naming the host, the command, its exit
  status and the end of its output. After `power_on` the harness waits (same
  bound) until the host's sshd lets it in again. The machine itself loses power:
  its page cache and every process go with it.
- `unsyncfs`: the host can mount FUSE (`/dev/fuse` opens, the kernel has fuse,
  root has CAP_SYS_ADMIN, this machine's `build/bin/unsyncfs` fits its arch and
  glibc): its data directories are on unsyncfs (`ssh_unsynced`), and a power-off
  SIGKILLs every process of the run on it with the filesystems, dropping what
  was not fsynced.
- `processes`: neither (or the spec keeps unsynced writes, or powers nothing
  off): a power-off SIGKILLs the run's processes and the page cache survives.

A spec that powers nodes off and loses unsynced writes is refused before
anything starts on a node host that has neither a command nor FUSE (`fuse_problem`).
Must never: run a power command the inventory does not name for that host.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import time

import paramiko

from testbed.errors import RuntimeFailure
from testbed.inventory import SshHost
from testbed.runtime.base import PROCESSES_ONLY
from testbed.runtime.ssh_conn import SshConnection
from testbed.runtime.ssh_unsynced import binary_needs, fit_problem

UNSYNCFS, COMMAND, PROCESSES = "unsyncfs", "command", PROCESSES_ONLY
# What each kind of power-off is, for the report.
MEANING = {
    UNSYNCFS: "unsyncfs: the run's processes and filesystems SIGKILLed at once, unsynced writes dropped",
    COMMAND: "the inventory's power command: the machine lost power",
    PROCESSES: "processes only: SIGKILLed, the page cache survived",
}
CAP_SYS_ADMIN = 21
# Read-only: prints "cap <CapEff hex>", "fuse <yes|no>", "fs <yes|no>", "machine <uname -m>", "libc <glibc x.y>".
PROBE = ("echo cap $(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status); "
         "if [ -c /dev/fuse ] && (exec 3<>/dev/fuse) 2>/dev/null; then echo fuse yes; else echo fuse no; fi; "
         "if grep -qw fuse /proc/filesystems; then echo fs yes; else echo fs no; fi; "
         "echo machine $(uname -m); echo libc $(getconf GNU_LIBC_VERSION 2>/dev/null || echo unknown)")


def fuse_problem(conn: SshConnection) -> str | None:
    """Why unsyncfs cannot run on the host (None: it can). Changes nothing there."""
    status, out, err = conn.run(PROBE, retry=False, sudo=True)
    facts = dict(line.split(" ", 1) for line in out.decode(errors="replace").splitlines() if " " in line)
    if facts.get("fuse") != "yes":
        return "no usable /dev/fuse (a container needs --device /dev/fuse)"
    if facts.get("fs") != "yes":
        return "its kernel has no fuse filesystem"
    try:
        if not int(facts.get("cap", ""), 16) >> CAP_SYS_ADMIN & 1:
            return "no CAP_SYS_ADMIN for its root, which mounting needs (a container needs --cap-add SYS_ADMIN)"
    except ValueError:
        pass
    try:
        needs = binary_needs()
    except RuntimeFailure as exc:
        return str(exc)
    problem = fit_problem(facts.get("machine", "unknown"), facts.get("libc", ""), needs)
    return f"build/bin/unsyncfs cannot run there: {problem}" if problem else None


def choose(entry: SshHost, lose_unsynced: bool, power_offs: bool, fuse: bool) -> str:
    """The kind of power-off of a node host."""
    if not lose_unsynced:
        return PROCESSES
    if entry.power_off is not None:
        return COMMAND
    return UNSYNCFS if power_offs and fuse else PROCESSES


def run_command(entry: SshHost, which: str, prefix: str) -> None:
    """Run the host's `power_off` or `power_on` command line here; RuntimeFailure if it fails or times out."""
    command = entry.power_off if which == "power_off" else entry.power_on
    if command is None:
        raise RuntimeFailure(f"{entry.name}: the inventory names no {which} command")
    env = {**os.environ, "FAULTLINE_HOST": entry.name, "FAULTLINE_ADDRESS": entry.address,
           "FAULTLINE_SSH_ADDRESS": entry.ssh_address, "FAULTLINE_PREFIX": prefix}
    try:
        done = subprocess.run(["sh", "-c", command], env=env, capture_output=True, text=True,
                              timeout=entry.power_timeout_s, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        raise RuntimeFailure(f"{entry.name}: {which} command {shlex.quote(command)} did not finish within "
                             f"{entry.power_timeout_s:g} s") from exc
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip()[-300:]
        raise RuntimeFailure(f"{entry.name}: {which} command {shlex.quote(command)} exited {done.returncode}: "
                             f"{said or 'no output'}")


def wait_for_sshd(conn: SshConnection, timeout: float) -> float:
    """After a power-on: drop the old connection and connect until the host lets us in; the seconds it took."""
    conn.close()
    started = time.monotonic()
    delay = 0.2
    while True:
        try:
            conn.connect()
            status, _, _ = conn.run("true", retry=False)
            if status == 0:
                return time.monotonic() - started
            problem = f"'true' exited {status}"
        except (paramiko.SSHException, OSError, RuntimeFailure) as exc:
            problem = str(exc) or type(exc).__name__
        conn.close()
        if time.monotonic() - started + delay > timeout:
            raise RuntimeFailure(f"{conn.host.name}: no sshd let the harness in within {timeout:g} s after "
                                 f"power_on ({problem})")
        time.sleep(delay)
        delay = min(delay * 2, 2.0)
