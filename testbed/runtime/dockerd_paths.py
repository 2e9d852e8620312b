"""Where a dockerd of the project's own keeps its files, and the flags it starts with (testbed.runtime.dockerd).

The layout and the flags are described in testbed.runtime.dockerd's docstring;
this module names them once, so starting, finding and cleaning a daemon agree.
Must never: create, start or remove anything (it only names paths and flags).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from testbed.errors import RuntimeFailure

RUN_ROOT = Path("/run/faultline")
DATA_ROOT = Path(os.environ.get("FAULTLINE_DOCKER_DATA_ROOT", "/var/lib/faultline/docker"))
DOCKERD_PATHS = (Path("/usr/sbin/dockerd"), Path("/usr/bin/dockerd"))  # Debian's docker.io, never /usr/local
CONTAINERD_NAMESPACE = "faultline"


@dataclass(frozen=True)
class DockerdPaths:
    """Where one own daemon keeps its socket, pidfile, exec root, config and log."""

    prefix: str

    @property
    def run_dir(self) -> Path:
        return RUN_ROOT / f"dockerd-{self.prefix}"

    @property
    def socket(self) -> Path:
        return self.run_dir / "docker.sock"

    @property
    def pidfile(self) -> Path:
        return self.run_dir / "dockerd.pid"

    @property
    def exec_root(self) -> Path:
        return self.run_dir / "exec"

    @property
    def config(self) -> Path:
        return self.run_dir / "daemon.json"

    @property
    def log(self) -> Path:
        return self.run_dir / "dockerd.log"

    @property
    def owner(self) -> Path:
        """The pid and start time of the process that started the daemon (for `orphaned`)."""
        return self.run_dir / "owner"

    @property
    def data_root_note(self) -> Path:
        return self.run_dir / "data-root"

    @property
    def cgroup_parent(self) -> str:
        return f"/faultline-{self.prefix}"

    @property
    def host_arg(self) -> str:
        return f"--host=unix://{self.socket}"


def dockerd_flags(paths: DockerdPaths, data_root: Path) -> list[str]:
    """Every flag an own dockerd gets: its own paths, and no change to the machine's network."""
    return [
        paths.host_arg,
        f"--pidfile={paths.pidfile}",
        f"--data-root={data_root}",
        f"--exec-root={paths.exec_root}",
        f"--config-file={paths.config}",
        f"--cgroup-parent={paths.cgroup_parent}",
        f"--containerd-namespace={CONTAINERD_NAMESPACE}",
        f"--containerd-plugins-namespace={CONTAINERD_NAMESPACE}-plugins",
        "--bridge=none",
        "--iptables=false",
        "--ip6tables=false",
        "--ip-forward=false",
        "--ip-masq=false",
        "--userland-proxy=false",
        "--log-level=warn",
    ]


def dockerd_binary() -> Path:
    for candidate in DOCKERD_PATHS:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise RuntimeFailure(f"no dockerd: install Debian's docker.io (make setup-docker, or apt-get install "
                         f"docker.io) or set DOCKER_HOST (looked for {', '.join(map(str, DOCKERD_PATHS))})")
