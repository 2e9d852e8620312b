"""An ssh node host running a cluster of the user's (inventory `provision: false`): its commands, pids and files.

Read-only on the host but for the inventory's own command lines: a process is
found by the TCP port it listens on (`ss -Htlnp`), the run's topic's partition
directories are read as one tar from the broker's log directories.
Must never: write, move or delete anything on the host (only the inventory's commands change it).
"""

from __future__ import annotations

import io
import re
import shlex
import tarfile
from pathlib import Path

from testbed.errors import RuntimeFailure
from testbed.runtime.ssh_conn import SshConnection

PID_RE = re.compile(r"pid=(\d+)")


def run_line(conn: SshConnection, line: str, timeout: float) -> str:
    """The inventory's command `line` through sh -c (sudo -n where the inventory says sudo)."""
    status, out, err = conn.run(f"sh -c {shlex.quote(line)}", timeout=timeout, sudo=True, retry=False)
    if status != 0:
        text = (err or out).decode(errors="replace").strip()[-300:]
        raise RuntimeFailure(f"{conn.host.entry} ({conn.host.name}): {line!r} exited {status}: {text}")
    return out.decode(errors="replace")


def listening_pid(conn: SshConnection, port: int) -> int | None:
    status, out, _ = conn.run(f"ss -Htlnp 'sport = :{int(port)}'", sudo=True)
    found = PID_RE.search(out.decode(errors="replace")) if status == 0 else None
    return int(found.group(1)) if found else None


def paused(conn: SshConnection, pid: int) -> bool:
    """Whether process `pid` is stopped (SIGSTOP: state T in its /proc status)."""
    state = run_line(conn, f"sed -n 's/^State:[[:space:]]*\\(.\\).*/\\1/p' /proc/{int(pid)}/status", 30.0)
    return state.strip() == "T"


def fetch_from(conn: SshConnection, directory: str, names: str, into: Path) -> list[str]:
    command = (f"cd {shlex.quote(directory)} 2>/dev/null || exit 0; set -- {names}; [ -e \"$1\" ] || exit 0; "
               f"tar -c -- \"$@\"")
    status, out, err = conn.run(command, timeout=300, sudo=True)
    if status != 0:
        raise RuntimeFailure(f"{conn.host.name}: reading {directory}/{names}: exit {status}: "
                             f"{err.decode(errors='replace').strip()[-300:]}")
    if not out:
        return []
    into.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(out), mode="r") as tar:
        tops = sorted({m.name.split("/", 1)[0] for m in tar.getmembers()})
        tar.extractall(into, filter="data")
    return tops
