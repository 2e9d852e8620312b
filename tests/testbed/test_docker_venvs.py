"""A client venv put into a docker container: the tar of its Python's prefix (without what no workload uses) and the
venv at their absolute paths, links kept, put once per container. A real container running it is
tests/docker/test_docker_client_venv.py."""

from __future__ import annotations

import io
import subprocess
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed.addressing import Host
from testbed.dist import clients
from testbed.dist.clients import MARKER, ClientEnv
from testbed.runtime.docker_venvs import DockerClientVenvs, venv_archive

VERSION = "9.9.9"


@pytest.fixture
def fake_venv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path]]:
    """A pyenv-like prefix and a venv made from it, as testbed.dist.clients lays them out."""
    prefix = tmp_path / "pyenv" / "versions" / "3.10.13"
    for rel in ("bin/python3.10", "lib/libpython3.10.so.1.0", "lib/python3.10/os.py",
                "lib/python3.10/lib-dynload/_ssl.so", "lib/python3.10/test/test_os.py",
                "lib/python3.10/site-packages/pip/__init__.py", "lib/python3.10/config-3.10-x86_64-linux-gnu/x.a",
                "lib/python3.10/tkinter/__init__.py", "lib/python3.10/testing.py"):
        (prefix / rel).parent.mkdir(parents=True, exist_ok=True)
        (prefix / rel).write_text(rel)
    venv = tmp_path / "cache" / f"venv-ck-{VERSION}"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(prefix / "bin" / "python3.10")
    (venv / "pyvenv.cfg").write_text(f"home = {prefix}/bin\ninclude-system-site-packages = false\n")
    (venv / MARKER).write_text("{}\n")
    monkeypatch.setattr(clients, "venv_dir", lambda version: venv)
    venv_archive.cache_clear()
    yield prefix, venv
    venv_archive.cache_clear()


def test_the_archive_holds_prefix_and_venv_at_their_paths_without_what_no_workload_uses(
        fake_venv: tuple[Path, Path]) -> None:
    prefix, venv = fake_venv
    with tarfile.open(fileobj=io.BytesIO(venv_archive(VERSION))) as tar:
        members = {m.name: m for m in tar.getmembers()}
    files = {"/" + name for name, m in members.items() if not m.isdir()}
    assert files == {f"{prefix}/bin/python3.10", f"{prefix}/lib/libpython3.10.so.1.0", f"{prefix}/lib/python3.10/os.py",
                     f"{prefix}/lib/python3.10/lib-dynload/_ssl.so", f"{prefix}/lib/python3.10/testing.py",
                     f"{venv}/bin/python", f"{venv}/pyvenv.cfg", f"{venv}/{MARKER}"}
    link = members[f"{venv}/bin/python".lstrip("/")]
    assert link.issym() and link.linkname == f"{prefix}/bin/python3.10"  # resolves in the container as here


class FakeContainer(DockerClientVenvs):
    code_root = "/faultline/src"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.files: set[str] = set()
        self.puts: list[tuple[str, str]] = []

    def execute(self, host: Host, argv: list[str], *, timeout: float = 30.0, input_text: str | None = None,
                check: bool = True) -> subprocess.CompletedProcess[str]:
        assert argv[:2] == ["test", "-f"], argv
        return subprocess.CompletedProcess(argv, 0 if argv[2] in self.files else 1, "", "")

    def _put_tar(self, host: Host, where: str, data: bytes) -> None:
        self.puts.append((host.name, where))
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            self.files |= {"/" + m.name for m in tar.getmembers()}


def test_a_container_gets_the_venv_once_and_runs_the_workloads_on_it(fake_venv: tuple[Path, Path]) -> None:
    _, venv = fake_venv
    container, host = FakeContainer(), Host("az1-client", "client", "az1", 1, "198.19.0.21")
    env = ClientEnv(VERSION, ("env", "PYTHONPATH=/repo", str(venv / "bin" / "python")), {})
    first = container.client_python(host, env)
    assert first == ("env", "PYTHONPATH=/faultline/src", f"{venv}/bin/python")
    assert container.client_python(host, env) == first
    assert container.puts == [("az1-client", "/")]  # the second start found the venv's marker there
