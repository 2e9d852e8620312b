"""The lose-unsynced-writes filesystem on an ssh host: uploaded, mounted over a node's data directories, cut at a
power-off, mounted again at power-on, detached at teardown.

The binary is this machine's `build/bin/unsyncfs` (`testbed.runtime.unsynced`),
uploaded to `<root>/runs/<prefix>/bin/unsyncfs` and checked to run there. Each
mount's process is started detached like every process of the run
(`ssh_procs.spawn_command`: FAULTLINE_RUN=<prefix> in its environment, through
`sudo -n` where the inventory says so), so the power-off's one SIGKILL of every
process of the run on the host takes the brokers and their filesystems at the
same instant: whatever was not fsynced is gone. The dead mounts are then
detached (`umount -l`, only mounts of type fuse.unsyncfs whose source carries
a project prefix); power-on mounts what survived before anything starts.
Must never: unmount a mount that is not an unsyncfs mount of this project's runs.
"""

from __future__ import annotations

import re
import shlex
import time
from pathlib import Path
from typing import TYPE_CHECKING

from testbed.addressing import Host
from testbed.errors import RuntimeFailure
from testbed.runtime.base import RUN_ENV
from testbed.runtime.ssh_procs import spawn_command
from testbed.runtime.unsynced import FSTYPE, MOUNT_WAIT_S, binary

if TYPE_CHECKING:
    from testbed.runtime.ssh import SshRuntime

# argv: fstype, a Python regex of sources. Lazily unmounts (umount2 MNT_DETACH: a dead process leaves its mount) every
# such mount and prints its target; python3 because a minimal host has no umount (util-linux's `mount` package).
DETACH = """
import ctypes, re, sys
libc = ctypes.CDLL(None, use_errno=True)
kind, pattern = sys.argv[1], re.compile(sys.argv[2])
for line in open("/proc/mounts"):
    f = line.split()
    if len(f) > 2 and f[2] == kind and pattern.search(f[0]):
        target = f[1].replace("\\\\040", " ")
        if libc.umount2(target.encode(), 2) == 0:
            print(target)
        else:
            print("cannot detach %s: errno %d" % (target, ctypes.get_errno()), file=sys.stderr)
"""
# $1 fstype; then targets: exit 0 once every target is an unsyncfs mount, 1 after MOUNT_WAIT_S.
WAIT = (f't=$1; shift; i=0; while [ $i -lt {round(MOUNT_WAIT_S / 0.01)} ]; do ok=1; for m in "$@"; do '
        'awk -v t="$t" -v m="$m" \'$3 == t && $2 == m {f=1} END {exit !f}\' /proc/mounts || ok=0; done; '
        '[ $ok = 1 ] && exit 0; sleep 0.01; i=$((i+1)); done; exit 1')
GLIBC_RE = re.compile(rb"GLIBC_(\d+)\.(\d+)")
ELF_MACHINES = {0x3E: "x86_64", 0xB7: "aarch64", 0x03: "i686"}


def binary_needs(path: Path | None = None) -> tuple[str, tuple[int, int]]:
    """The machine (uname -m) and the newest glibc the unsyncfs binary needs, read from its ELF."""
    data = (path or binary()).read_bytes()
    machine = ELF_MACHINES.get(int.from_bytes(data[18:20], "little"), "unknown")
    versions = [(int(a), int(b)) for a, b in GLIBC_RE.findall(data)]
    return machine, max(versions, default=(0, 0))


def fit_problem(machine: str, libc: str, needs: tuple[str, tuple[int, int]]) -> str | None:
    """Why the binary cannot run on a host whose `uname -m` is `machine` and `getconf GNU_LIBC_VERSION` `libc`."""
    want_machine, want_libc = needs
    if machine != want_machine:
        return f"it is {machine}, and this machine's build/bin/unsyncfs is built for {want_machine}"
    found = re.fullmatch(r"glibc (\d+)\.(\d+)", libc.strip())
    if found is None:
        return f"its C library is {libc.strip() or 'unknown'}, and build/bin/unsyncfs needs glibc"
    have = (int(found[1]), int(found[2]))
    if have < want_libc:
        return (f"its glibc is {have[0]}.{have[1]}, and build/bin/unsyncfs needs "
                f"{want_libc[0]}.{want_libc[1]} or newer")
    return None


def detach_command(pattern: str) -> str:
    """Lazily unmount every unsyncfs mount whose source matches the Python regex `pattern` (`^fl1a2b3c-`); prints
    their targets."""
    return f"python3 -c {shlex.quote(DETACH)} {FSTYPE} {shlex.quote(pattern)}"


class SshDisks:
    """The unsyncfs mounts of one run's node hosts: which directories each keeps on it, and whether they serve."""

    def __init__(self, runtime: SshRuntime) -> None:
        self.runtime = runtime
        self._dirs: dict[str, list[tuple[str, str, str]]] = {}  # host -> (target, source, log) on the host
        self._uploaded: set[str] = set()
        self._cut: set[str] = set()  # hosts whose filesystems were cut and not mounted again

    @property
    def pattern(self) -> str:
        return f"^{self.runtime.prefix}-"

    def keep(self, host: Host, dirs: list[Path], log_dir: Path) -> None:
        """Mount unsyncfs over the host's copies of `dirs` (idempotent)."""
        if host.name in self._dirs:
            return
        rt = self.runtime
        self._upload(host)
        self._dirs[host.name] = [(rt.host_path(host, d), f"{rt.prefix}-{host.name}-{d.name}",
                                  rt.host_path(host, log_dir / f"unsyncfs-{d.name}.log")) for d in dirs]
        self._mount(host)

    def _upload(self, host: Host) -> None:
        if host.name in self._uploaded:
            return
        conn = self.runtime.conn(host)
        target = f"{self.runtime.run_root}/bin/unsyncfs"
        conn.check(f"mkdir -p {shlex.quote(str(Path(target).parent))}")
        conn.sftp_put(binary(), target)
        status, out, err = conn.run(f"chmod 755 {shlex.quote(target)} && {shlex.quote(target)} -h", retry=False)
        if b"-backing" not in out + err:
            said = (err or out).decode(errors="replace").strip()[-200:]
            raise RuntimeFailure(f"{host.name}: build/bin/unsyncfs does not run there: {said}")
        self._uploaded.add(host.name)

    def _mount(self, host: Host) -> None:
        rt = self.runtime
        conn = rt.conn(host)
        binary_path = f"{rt.run_root}/bin/unsyncfs"
        sudo = ["sudo", "-n", "env", f"{RUN_ENV}={rt.prefix}"] if conn.host.sudo else []
        for target, source, log in self._dirs[host.name]:
            pidfile = f"{rt.run_root}/pids/unsyncfs.{source}.{time.time_ns()}.pid"
            argv = [*sudo, binary_path, "-backing", target, "-name", source, "-mode", "journal"]
            conn.check(f"mkdir -p {shlex.quote(target)} && " + spawn_command(rt.prefix, pidfile, log, argv, None),
                       retry=False)
        targets = " ".join(shlex.quote(t) for t, _, _ in self._dirs[host.name])
        status, _, _ = conn.run(f"sh -c {shlex.quote(WAIT)} wait {FSTYPE} {targets}", timeout=MOUNT_WAIT_S + 20)
        if status != 0:
            logs = " ".join(shlex.quote(log) for _, _, log in self._dirs[host.name])
            _, tail, _ = conn.run(f"tail -qn 2 {logs} 2>/dev/null")
            raise RuntimeFailure(f"{host.name}: unsyncfs did not mount over its data directories within "
                                 f"{MOUNT_WAIT_S:.0f} s: {' | '.join(tail.decode(errors='replace').split(chr(10)))}")
        self._cut.discard(host.name)

    def cut(self, host: Host) -> None:
        """After the power-off's SIGKILL (which took the filesystems' processes too): detach the dead mounts."""
        if host.name not in self._dirs:
            return
        self._cut.add(host.name)
        self.runtime.conn(host).check(detach_command(f"^{self.runtime.prefix}-{host.name}-"), sudo=True)

    def power_on(self, host: Host) -> None:
        """Mount what the host's directories kept (only after a cut)."""
        if host.name in self._cut:
            self._mount(host)
