"""Process facts read from /proc: alive or not, and which run a process belongs to.

Processes the runtime starts carry FAULTLINE_RUN=<prefix> in their environment,
so a run's processes can be found again even when its state file is lost.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

RUN_ENV = "FAULTLINE_RUN"
PREFIX_RE = re.compile(r"^fl[0-9a-f]{6}$")


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


def run_of(pid: int) -> str | None:
    """The run prefix a process was started for, or None."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    for entry in environ.split(b"\0"):
        if entry.startswith(RUN_ENV.encode() + b"="):
            return entry.split(b"=", 1)[1].decode(errors="replace")
    return None


def command_of(pid: int) -> str | None:
    """The process's command name (/proc/PID/comm: the executable's base name, at most 15 characters)."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().rstrip("\n")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None


def pids_of_runs(prefix: str | None = None) -> list[int]:
    """Every live pid carrying a run prefix (a given one, or any of the project's)."""
    found = []
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        run = run_of(int(entry))
        if run is None:
            continue
        if (prefix is None and PREFIX_RE.match(run)) or run == prefix:
            found.append(int(entry))
    return sorted(found)


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
