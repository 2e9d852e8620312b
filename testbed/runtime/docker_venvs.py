"""The client under test on the docker runtime: a client venv of this machine copied into a client container.

A client venv (testbed.dist.clients) is pyenv's Python 3.10 plus confluent-kafka X, made on this machine. A client
container (faultline/client, Debian 12 like this machine, glibc and the shared libraries Python's modules load
coming with its own python3) runs it once the venv and that Python's prefix are at the same absolute paths as here:
the venv's bin/python is a link to the prefix's, whose python finds libpython by an absolute RUNPATH, and the venv's
pyvenv.cfg names the prefix. So both are put into the container through the API as one tar (the prefix without
what no workload uses, `PREFIX_UNUSED`: 68 MB for 3.10.13, the venv 30 to 38 MB), once per container and version,
and the workloads run from the code `install` put there, as the image's own venv's do.
Must never: write outside the venv's and the prefix's paths in a container, or into a container of another run.
"""

from __future__ import annotations

import functools
import io
import subprocess
import tarfile
import threading
from pathlib import Path
from typing import Protocol

from testbed.addressing import Host
from testbed.dist.clients import MARKER, PREFIX_UNUSED, ClientEnv, venv_tree


class _TarTarget(Protocol):
    """What of DockerRuntime this needs: its lock, where a container keeps this project's code, a command and a
    tar unpacked in a container."""

    _lock: threading.Lock
    code_root: str

    def execute(self, host: Host, argv: list[str], *, timeout: float = 30.0, input_text: str | None = None,
                check: bool = True) -> subprocess.CompletedProcess[str]: ...

    def _put_tar(self, host: Host, where: str, data: bytes) -> None: ...


@functools.lru_cache(maxsize=1)  # the run's client under test, put into each client container in turn
def venv_archive(version: str) -> bytes:
    """The venv of `version` and the Python prefix it runs on, as a tar of their absolute paths (without `/`)."""
    venv, prefix = venv_tree(version)

    def used(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        inside = Path("/", info.name)
        if inside.is_relative_to(prefix):
            rel = inside.relative_to(prefix).as_posix() + ("/" if info.isdir() else "")
            if any(rel.startswith(unused) for unused in PREFIX_UNUSED):
                return None
        return info

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for tree in (prefix, venv):
            tar.add(tree, arcname=str(tree.relative_to("/")), filter=used)
    return buffer.getvalue()


class DockerClientVenvs:
    """DockerRuntime's `CarriesClientVenvs` (testbed.runtime.base): a client venv put into a container on first use."""

    def client_python(self: _TarTarget, host: Host, env: ClientEnv) -> tuple[str, ...]:
        """The argv prefix running `python -m ...` on `host` with `env`'s confluent-kafka and the code `install`
        put there; the venv and its Python are put there first unless the container has them (its marker file,
        written last when the venv was made, is there: a harness taking over a run finds them too)."""
        venv, _ = venv_tree(env.version)
        with self._lock:
            if self.execute(host, ["test", "-f", str(venv / MARKER)], check=False).returncode != 0:
                self._put_tar(host, "/", venv_archive(env.version))
        return ("env", f"PYTHONPATH={self.code_root}", str(venv / "bin" / "python"))

    def client_report(self, host: Host, env: ClientEnv) -> dict[str, str]:
        """What the venv reports of itself: the one made here, put there as it is."""
        return env.versions
