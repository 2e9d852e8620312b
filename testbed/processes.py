"""Named processes of a run on its hosts: start, signal, stop, wait, and hold them to account.

The one process manager: the Kafka cluster (ZooKeeper servers, brokers) and
the workload set (producers, consumers, observers, drains) both keep their
processes in a `ProcessGroup`. Each process is started through the runtime
under a name (recorded in the state file, so a later harness finds it with
`runtime.process(name)`), and its output goes to a log in the run folder,
fetched from its host when needed. Must never: start a second copy of a
process that is still running, or signal anything but this run's processes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from signal import SIGKILL, SIGTERM

from testbed.addressing import Host
from testbed.errors import RuntimeFailure
from testbed.runtime.base import Pausable, Process, Runtime, wait_ended


class ProcessGroup:
    def __init__(self, runtime: Runtime, log_of: Callable[[str], Path]) -> None:
        """`log_of(name)`: where in the run folder the output of the process called `name` goes."""
        self.runtime = runtime
        self.log_of = log_of

    def start(self, host: Host, name: str, argv: list[str], env: dict[str, str] | None = None) -> Process:
        """Start `argv` on `host` as `name`; RuntimeFailure if a process of that name still runs."""
        if self.running(name) is not None:
            raise RuntimeFailure(f"{name} is already running")
        return self.runtime.spawn(host, name, argv, self.log_of(name), env)

    def get(self, name: str) -> Process | None:
        """The process last started as `name`, running or not."""
        return self.runtime.process(name)

    def running(self, name: str) -> Process | None:
        """The process of that name if it is running now."""
        process = self.runtime.process(name)
        return process if process is not None and process.alive() else None

    def signal(self, name: str, signum: int) -> Process | None:
        """Send `signum` to the running process `name`; return it, or None if it was not running."""
        process = self.running(name)
        if process is not None:
            process.signal(signum)
        return process

    def pausable(self, name: str) -> Pausable | None:
        process = self.running(name)
        if process is None:
            return None
        if not isinstance(process, Pausable):
            raise RuntimeFailure(f"the {self.runtime.kind} runtime cannot pause {name}")
        return process

    def kill(self, names: Iterable[str], timeout: float = 10.0) -> list[str]:
        """SIGKILL every named process before waiting for any (they die at one instant); the ones still alive."""
        hit = [p for p in (self.signal(n, SIGKILL) for n in names) if p is not None]
        return [p.name for p in wait_ended(hit, timeout)]

    def stop(self, names: Iterable[str], timeout: float, signum: int = SIGTERM) -> list[str]:
        """Ask every named process to exit (`signum`), wait up to `timeout`; SIGKILL and name those that did not."""
        return self.stop_within({name: timeout for name in names}, signum)

    def stop_within(self, timeouts: Mapping[str, float], signum: int = SIGTERM) -> list[str]:
        """Ask every named process to exit (`signum`) at once, each allowed its own timeout from that moment;
        SIGKILL and name those that did not exit in theirs."""
        asked = [p for p in (self.signal(n, signum) for n in timeouts) if p is not None]
        started, stuck = time.monotonic(), []
        for timeout in sorted({timeouts[p.name] for p in asked}):  # the shortest first, each killed at its end
            late = wait_ended([p for p in asked if timeouts[p.name] == timeout],
                              max(0.0, started + timeout - time.monotonic()))
            if late and (survivors := self.kill([p.name for p in late])):
                raise RuntimeFailure(f"{', '.join(survivors)} survived SIGKILL")
            stuck += late
        return [p.name for p in stuck]

    def wait(self, names: Iterable[str], timeout: float) -> list[str]:
        """Wait for the named processes to end by themselves; the names still running at `timeout`."""
        found = [p for p in (self.get(n) for n in names) if p is not None]
        return [p.name for p in wait_ended(found, timeout)]

    def exit_status(self, name: str) -> int | None:
        process = self.get(name)
        return None if process is None else process.exit_status()

    def log_tail(self, name: str, lines: int = 3) -> str:
        """The last lines of the process's output (fetched from its host), on one line."""
        process, log = self.get(name), self.log_of(name)
        if process is not None:
            try:
                self.runtime.fetch(process.host, log)
            except RuntimeFailure as exc:
                return f"(output not readable: {exc})"
        return log_tail(log, lines)


def log_tail(path: Path, lines: int = 3) -> str:
    """The last lines of a log in the run folder, joined on one line, for an error message."""
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except FileNotFoundError:
        return "(no output)"
    return " | ".join(text[-lines:]) or "(no output)"
