"""The docker runtime's process handle: one `docker exec` of the run, its pid inside the container.

Liveness and exit status come from the daemon's exec record; signals are a
`kill` inside the container. Must never: signal a process after its exec ended.
"""

from __future__ import annotations

import contextlib
import signal
from typing import TYPE_CHECKING, Any

import docker.errors

from testbed.addressing import Host
from testbed.errors import RuntimeFailure

if TYPE_CHECKING:
    from testbed.runtime.docker import DockerRuntime


class DockerProcess:
    """One `docker exec` of the run: `Process` and `Pausable`, its liveness and status from the daemon."""

    def __init__(self, runtime: DockerRuntime, name: str, host: Host, pid: int, exec_id: str) -> None:
        self.runtime = runtime
        self.name = name
        self.host = host
        self.pid = pid
        self.exec_id = exec_id

    def __repr__(self) -> str:
        return f"<process {self.name} pid {self.pid} in {self.runtime.container_name(self.host)}>"

    def _inspect(self) -> dict[str, Any]:
        try:
            return dict(self.runtime.client.api.exec_inspect(self.exec_id))
        except docker.errors.NotFound:
            return {"Running": False, "ExitCode": -signal.SIGKILL}  # its container was removed

    def alive(self) -> bool:
        return bool(self._inspect()["Running"])

    def exit_status(self) -> int | None:
        state = self._inspect()
        if state["Running"]:
            return None
        code = int(state.get("ExitCode") or 0)
        return -(code - 128) if code > 128 else code  # 128+N: ended by signal N

    def signal(self, signum: int) -> None:
        if self.alive():
            with contextlib.suppress(RuntimeFailure):
                self.runtime.execute(self.host, ["kill", f"-{signal.Signals(signum).name[3:]}", str(self.pid)])

    def pause(self) -> None:
        self.signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.signal(signal.SIGCONT)

    def paused(self) -> bool:
        if not self.alive():
            return False
        stat = self.runtime.execute(self.host, ["cat", f"/proc/{self.pid}/stat"], check=False).stdout
        return stat.rsplit(")", 1)[-1].split()[:1] in (["T"], ["t"])
