"""What a project-owned dockerd leaves on this machine, read and removed by hand: cgroups, mounts, pids.

For cleaning up after a daemon that was killed (testbed.runtime.dockerd).
Must never: touch a cgroup, mount or process outside the paths and names the
caller passes (always a project prefix's).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

from testbed.localprocs import is_alive, start_time
from testbed.runtime.docker_api import one_line_text

KILL_TIMEOUT_S = 10.0


def cgroup_dirs(parent: str) -> list[Path]:
    base = Path("/sys/fs/cgroup")
    name = parent.strip("/")
    dirs = [base / name] if (base / "cgroup.controllers").exists() else []  # cgroup v2
    if base.is_dir():
        dirs += [hierarchy / name for hierarchy in base.iterdir() if hierarchy.is_dir()
                 and not hierarchy.is_symlink() and hierarchy.name != name]
    return [d for d in dirs if d.is_dir()]


def kill_cgroup(parent: str) -> None:
    pids: set[int] = set()
    for root in cgroup_dirs(parent):
        for procs in root.rglob("cgroup.procs"):
            with contextlib.suppress(OSError, ValueError):
                pids |= {int(p) for p in procs.read_text().split()}
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + KILL_TIMEOUT_S
    while pids and time.monotonic() < deadline:
        pids = {p for p in pids if is_alive(p)}
        time.sleep(0.05)


def remove_cgroup(parent: str) -> None:
    for root in cgroup_dirs(parent):
        for directory in sorted((d for d in root.rglob("*") if d.is_dir()), key=lambda d: -len(d.parts)):
            with contextlib.suppress(OSError):
                directory.rmdir()
        with contextlib.suppress(OSError):
            root.rmdir()


def mounts_under(path: Path) -> list[str]:
    top = str(path.resolve()) if path.exists() else str(path)
    found = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            point = line.split()[4].replace("\\040", " ")
            if point == top or point.startswith(top + "/"):
                found.append(point)
    return found


def unmount_under(path: Path) -> None:
    for point in sorted(set(mounts_under(path)), key=lambda p: -p.count("/")):
        subprocess.run(["umount", "-l", point], capture_output=True)


def read_pid(pidfile: Path) -> int | None:
    try:
        return int(pidfile.read_text().strip())
    except (OSError, ValueError):
        return None


def wait_gone(pid: int, process: subprocess.Popen[bytes] | None, timeout: float) -> None:
    if process is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=timeout)
        return
    identity = start_time(pid)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and is_alive(pid) and start_time(pid) == identity:
        time.sleep(0.05)


def last_error(log_path: Path) -> str:
    try:
        lines = [line for line in log_path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "no log"
    for line in reversed(lines):
        if "level=fatal" in line or "level=error" in line or "failed" in line.lower():
            return one_line_text(line)
    return one_line_text(lines[-1]) if lines else "empty log"
