"""Processes of a run on this machine: which run they belong to, and their handle.

For runtimes whose hosts share this machine's kernel (netns). Processes the
runtime starts carry RUN_ENV=<prefix> in their environment, so a run's
processes can be found again even when its state file is lost. Must never:
signal a pid that does not carry the run's prefix, or that was reused by
another process since it was started (pid and start time are its identity).
Reading /proc is testbed.localprocs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess

from testbed.addressing import Host
from testbed.localprocs import all_pids, env_of, is_alive, is_stopped, pid_namespace, start_time
from testbed.runtime.base import PREFIX_RE, RUN_ENV


def run_of(pid: int) -> str | None:
    """The run prefix a process was started for, or None."""
    return env_of(pid, RUN_ENV)


def pids_of_runs(prefix: str | None = None) -> list[int]:
    """Every live pid carrying a run prefix (a given one, or any of the project's), in this machine's own pid
    namespace: a container's processes (a docker node, an ssh test bed's host) belong to that host, which is
    cleaned as a whole (its container removed, or `clean --inventory` on it), never from here."""
    found = []
    me, ours = os.getpid(), pid_namespace("self")
    for pid in all_pids():
        if pid == me or pid_namespace(pid) != ours:
            continue
        run = run_of(pid)
        if run is None:
            continue
        if (prefix is None and PREFIX_RE.match(run)) or run == prefix:
            found.append(pid)
    return sorted(found)


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
