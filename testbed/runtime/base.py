"""What a runtime is: hosts with addresses, processes on them, a firewall per host.

Contracts (every implementation):
- Every resource it creates carries the run's prefix and is recorded in the
  run's state file the moment it exists.
- `destroy` removes everything of this run and nothing else; it is idempotent
  and safe to call after a partial `create`.
- Processes are started inside their host, so they see exactly the network
  their host sees (faults included).
- Failures raise `RuntimeFailure` with the command and what it said.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Protocol, runtime_checkable

from testbed.addressing import AddressPlan, Host


@runtime_checkable
class Runtime(Protocol):
    prefix: str
    plan: AddressPlan

    def create(self) -> None:
        """Create every host of the plan and the network joining them to the control plane."""

    def destroy(self) -> None:
        """Stop every process of the run and remove every host and link; idempotent."""

    def spawn(self, host: Host, name: str, argv: list[str], log_path: Path,
              env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        """Start a long-running process on `host`, output to `log_path`; record it as `name`."""

    def execute(self, host: Host, argv: list[str], *, timeout: float = 30.0,
                input_text: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run a short command on `host` and wait for it."""

    def signal(self, pid: int, signum: int) -> None:
        """Send `signum` to one process of this run (never to anything else)."""


@runtime_checkable
class Pausable(Protocol):
    def pause(self, pid: int) -> None:
        """Freeze a process (SIGSTOP); it keeps its sockets but answers nothing."""

    def resume(self, pid: int) -> None:
        """Undo `pause` (SIGCONT)."""


@runtime_checkable
class Firewalled(Protocol):
    def set_firewall(self, host: Host, rules: str) -> None:
        """Replace the host's fault rules with `rules` (iptables-restore lines of the fault chains) in one step."""

    def clear_firewall(self, host: Host) -> None:
        """Remove every fault rule on `host`; idempotent."""
