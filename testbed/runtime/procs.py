"""Processes on this machine, read from /proc: alive or not, which run they belong to; and their handle.

For runtimes whose hosts share this machine's kernel (netns). Processes the
runtime starts carry RUN_ENV=<prefix> in their environment, so a run's
processes can be found again even when its state file is lost. Must never:
signal a pid that does not carry the run's prefix, or that was reused by
another process since it was started (pid and start time are its identity).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

from testbed.addressing import Host
from testbed.runtime.base import PREFIX_RE, RUN_ENV


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


def run_of(pid: int) -> str | None:
    """The run prefix a process was started for, or None."""
    return env_of(pid, RUN_ENV)


def command_of(pid: int) -> str | None:
    """The process's command name (/proc/PID/comm: the executable's base name, at most 15 characters)."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().rstrip("\n")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None


def pid_namespace(pid: int | str) -> str | None:
    """The pid namespace a process lives in (e.g. 'pid:[4026531836]'), or None if it is gone or unreadable."""
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def pids_of_runs(prefix: str | None = None) -> list[int]:
    """Every live pid carrying a run prefix (a given one, or any of the project's), in this machine's own pid
    namespace: a container's processes (a docker node, an ssh test bed's host) belong to that host, which is
    cleaned as a whole (its container removed, or `clean --inventory` on it), never from here."""
    found = []
    me, ours = os.getpid(), pid_namespace("self")
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me or pid_namespace(entry) != ours:
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


class LocalProcess:
    """A process on this machine's kernel: a `Process`, and `Pausable` by SIGSTOP/SIGCONT.

    `child` is the Popen when this harness started it (so its exit status can
    be read); None for a process a dead harness started, found again from the
    state file.
    """

    def __init__(self, name: str, host: Host, pid: int, prefix: str, started: int | None,
                 child: subprocess.Popen[bytes] | None = None) -> None:
        self.name = name
        self.host = host
        self.pid = pid
        self.prefix = prefix
        self.started = started  # start_time(pid) when it was started: with the pid, its identity
        self.child = child

    def __repr__(self) -> str:
        return f"<process {self.name} pid {self.pid} on {self.host.name}>"

    def ours(self) -> bool:
        """Still the process we started: alive, this run's, and not a reused pid."""
        if self.child is not None:
            # Our own child: its pid cannot be reused before we reap it, and the Popen knows when it ends
            # (/proc is no witness then: an exiting process's environ reads empty before it is a zombie).
            return self.child.poll() is None
        return (is_alive(self.pid) and run_of(self.pid) == self.prefix
                and (self.started is None or start_time(self.pid) == self.started))

    def alive(self) -> bool:
        return self.ours()

    def exit_status(self) -> int | None:
        if self.child is not None:
            return self.child.poll()
        return None if self.ours() else 0

    def signal(self, signum: int) -> None:
        if self.ours():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signum)
        if self.child is not None:
            self.child.poll()

    def pause(self) -> None:
        self.signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.signal(signal.SIGCONT)

    def paused(self) -> bool:
        return self.ours() and is_stopped(self.pid)
