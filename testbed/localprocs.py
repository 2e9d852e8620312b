"""Processes on this machine, read from /proc: alive or not, their identity, environment and command line.

The one place that reads another process's /proc files. Users: the netns
runtime's process handles (testbed.runtime.procs), the project's own dockerd
(testbed.runtime.dockerd, dockerd_host), the lose-unsynced-writes mounts
(testbed.runtime.unsynced), the standalone Spark daemons
(spark_analysis.standalone) and the judging's priority (harness.priority).
It knows nothing of runtimes, hosts or run prefixes, so code that only manages
local daemons need not import a runtime.
Must never: signal a process (callers do, by pid and start time).
"""

from __future__ import annotations

import os
import time
from pathlib import Path


def is_alive(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state not in ("Z", "X")


def is_stopped(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] in ("T", "t")


def env_of(pid: int, name: str) -> str | None:
    """The value of environment variable `name` a process was started with, or None (unset, or unreadable)."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    for entry in environ.split(b"\0"):
        if entry.startswith(name.encode() + b"="):
            return entry.split(b"=", 1)[1].decode(errors="replace")
    return None


def command_of(pid: int) -> str | None:
    """The process's command name (/proc/PID/comm: the executable's base name, at most 15 characters)."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().rstrip("\n")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None


def cmdline_bytes(pid: int) -> bytes | None:
    """The process's raw command line (/proc/PID/cmdline: NUL-separated), or None if it is gone or unreadable."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None


def cmdline(pid: int) -> list[str]:
    """The process's command line as a list ([] if it is gone, unreadable or a kernel thread)."""
    raw = cmdline_bytes(pid)
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part] if raw else []


def pid_namespace(pid: int | str) -> str | None:
    """The pid namespace a process lives in (e.g. 'pid:[4026531836]'), or None if it is gone or unreadable."""
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def net_namespace(pid: int | str) -> str | None:
    """The network namespace a process lives in (e.g. 'net:[4026531840]'), or None if it is gone or unreadable."""
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def thread_ids(pid: int) -> list[int] | None:
    """The ids of the process's threads (/proc/PID/task), or None if it has ended."""
    try:
        return [int(t.name) for t in Path(f"/proc/{pid}/task").iterdir()]
    except OSError:
        return None


def all_pids() -> list[int]:
    """Every pid /proc lists (any pid namespace this one can see)."""
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot: with the pid, its identity (pids are reused)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def wait_dead(pids: list[int], timeout: float) -> list[int]:
    """Wait until every pid is gone; return those still alive at the deadline.

    A pid that is reused by a new process while we wait counts as gone.
    """
    identity = {p: start_time(p) for p in pids}

    def same_and_alive(pid: int) -> bool:
        return is_alive(pid) and start_time(pid) == identity[pid]

    deadline = time.monotonic() + timeout
    remaining = [p for p in pids if identity[p] is not None and same_and_alive(p)]
    while remaining and time.monotonic() < deadline:
        time.sleep(0.02)
        remaining = [p for p in remaining if same_and_alive(p)]
    return remaining
