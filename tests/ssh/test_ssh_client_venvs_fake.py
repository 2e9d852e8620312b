"""The client under test on ssh hosts without SSH: the wheel downloaded here for a host's Python (pip faked), the
preflight's one-line refusal of a version with no such wheel, the venv a host makes with its own python3 (the
"host" is a shell on this machine under a temporary root, the wheel a stand-in confluent_kafka), the runtime's
argv and reports, and run.json's `client_under_test` from them. A real run on the sshd test bed is
tests/ssh/test_ssh_client_under_test.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import zipfile
from pathlib import Path
from typing import Any

import pytest

from harness.manifest import hosts_client
from harness.spec import parse_spec
from testbed import wheelhouse
from testbed.addressing import Host
from testbed.dist.clients import MARKER, ClientEnv
from testbed.errors import DistributionError, UsageError
from testbed.inventory import load_inventory
from testbed.runtime import ssh_client_venvs, ssh_install, ssh_preflight
from testbed.runtime.ssh_client_venvs import SshClientVenvs
from testbed.runtime.ssh_conn import HostKeys
from tests.harness.test_run_fake import SPEC
from tests.ssh.test_ssh_power_fake import FakeSsh, inventory

PY311 = {"python": "3.11", "libc": ["glibc", "2.36"], "machine": "x86_64"}
# What pip said (2026-11-28) when asked for 1.9.2 for cp311 on glibc 2.36 (shortened: the list went on to 2.16.1).
PIP_SAYS = ("ERROR: Could not find a version that satisfies the requirement confluent-kafka==1.9.2 (from versions: "
            "2.0.2, 2.1.0, 2.10.1rc1, 2.10.1, 2.16.0rc1, 2.16.1)\n"
            "ERROR: No matching distribution found for confluent-kafka==1.9.2\n")
REFUSAL = ("confluent_kafka 1.9.2: no wheel for Python 3.11 on x86_64 (glibc 2.36) on PyPI (the first version that "
           "has one is 2.0.2, the newest 2.16.1)")


@pytest.fixture
def fake_pip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """pip download, faked: 1.9.2 has no cp311 wheel (pip's refusal), any other version gets a wheel file."""
    monkeypatch.setattr(wheelhouse, "CACHE_DIR", tmp_path / "cache")
    calls: list[list[str]] = []

    def run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        calls.append(argv)
        if argv[-1] == "confluent-kafka==1.9.2":
            return subprocess.CompletedProcess(argv, 1, "", PIP_SAYS)
        version = argv[-1].split("==")[1]
        target = Path(argv[argv.index("-d") + 1])
        (target / f"confluent_kafka-{version}-cp311-cp311-manylinux_2_28_x86_64.whl").write_text("wheel")
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(wheelhouse.subprocess, "run", run)
    return calls


def test_a_client_wheel_is_downloaded_once_for_the_hosts_python_and_glibc(fake_pip: list[list[str]],
                                                                          tmp_path: Path) -> None:
    first = wheelhouse.client_wheels(PY311, "2.10.1")
    assert wheelhouse.client_wheels(PY311, "2.10.1") == first and len(fake_pip) == 1  # cached: pip not asked again
    argv = fake_pip[0]
    assert argv[argv.index("--python-version") + 1] == "3.11" and argv[argv.index("--abi") + 1] == "cp311"
    assert "manylinux_2_36_x86_64" in argv and "manylinux2014_x86_64" in argv and "--only-binary=:all:" in argv
    assert first == tmp_path / "cache" / "wheelhouse" / "ck-2.10.1-cp311-glibc2.36-x86_64"
    assert [w.name for w in first.glob("*.whl")] == ["confluent_kafka-2.10.1-cp311-cp311-manylinux_2_28_x86_64.whl"]


def test_a_version_without_a_wheel_for_the_hosts_python_names_the_first_that_has_one(
        fake_pip: list[list[str]], tmp_path: Path) -> None:
    with pytest.raises(DistributionError) as caught:
        wheelhouse.client_wheels(PY311, "1.9.2")
    assert str(caught.value) == REFUSAL
    assert not (tmp_path / "cache" / "wheelhouse" / "ck-1.9.2-cp311-glibc2.36-x86_64").exists()  # nothing half-made


class WheelHost(FakeSsh):
    """A client host of the preflight whose python3 is 3.11 on glibc 2.36."""

    def run(self, command: str, **kwargs: Any) -> tuple[int, bytes, bytes]:
        if command == ssh_install.FACTS:
            return 0, json.dumps(PY311).encode() + b"\n", b""
        return super().run(command, **kwargs)

    def check(self, command: str, **kwargs: Any) -> str:
        status, out, _ = self.run(command, **kwargs)
        assert status == 0, command
        return out.decode()


def test_the_preflight_refuses_a_client_version_a_client_hosts_python_has_no_wheel_for(
        fake_pip: list[list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ssh_preflight, "SshConnection", WheelHost)
    path = inventory(tmp_path)
    inv = load_inventory(path)
    plan, keys = inv.plan(3), HostKeys(None, None)
    ssh_preflight.check_hosts(plan, inv, keys, client_versions=("2.10.1",))  # a wheel for 3.11: fit
    with pytest.raises(UsageError) as caught:
        ssh_preflight.check_hosts(plan, inv, keys, client_versions=("2.10.1", "1.9.2"))
    assert str(caught.value) == (f"inventory {path}: hosts[1] (10.0.1.21) root@10.0.1.21:22 (az1-client): "
                                 f"clients.{REFUSAL} (and 2 more host(s) with problems)")
    node = Host("az1-node", "node", "az1", 1, "10.0.1.11")  # node hosts run no client under test
    assert ssh_preflight.check_host(node, inv, keys, client_versions=("1.9.2",)) is None


class LocalHost:
    """An `SshConnection` whose host is a shell on this machine (its python3 the host's); files land where named."""

    def __init__(self) -> None:
        self.host = type("Entry", (), {"name": "az1-client"})()
        self.commands: list[str] = []

    def run(self, command: str, *, timeout: float = 30.0, stdin: bytes | None = None, retry: bool = True,
            sudo: bool = False) -> tuple[int, bytes, bytes]:
        self.commands.append(command)
        proc = subprocess.run(["sh", "-c", command], input=stdin, capture_output=True, timeout=timeout)
        return proc.returncode, proc.stdout, proc.stderr

    def check(self, command: str, **kwargs: Any) -> str:
        status, out, err = self.run(command, **kwargs)
        assert status == 0, (command, err)
        return out.decode()

    def sftp_put(self, local: Path, remote: str) -> None:
        shutil.copy(local, remote)


def stand_in_wheel(directory: Path, version: str) -> None:
    """A pure-Python wheel named confluent_kafka that answers the probe as confluent-kafka `version` would."""
    directory.mkdir(parents=True, exist_ok=True)
    info = f"confluent_kafka-{version}.dist-info"
    with zipfile.ZipFile(directory / f"confluent_kafka-{version}-py3-none-any.whl", "w") as wheel:
        wheel.writestr("confluent_kafka/__init__.py", f"def version():\n    return ({version!r}, 0)\n\n"
                                                      f"def libversion():\n    return ('{version}', 0)\n")
        wheel.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: confluent-kafka\nVersion: {version}\n")
        wheel.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: faultline-test\nRoot-Is-Purelib: true\n"
                                        "Tag: py3-none-any\n")
        wheel.writestr(f"{info}/RECORD", "")


def test_a_client_host_makes_the_venv_with_its_own_python_once_and_it_reports_itself(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[dict[str, Any]] = []

    def client_wheels(facts: dict[str, Any], version: str) -> Path:
        asked.append(facts)
        stand_in_wheel(tmp_path / "wheels", version)
        return tmp_path / "wheels"

    monkeypatch.setattr(ssh_install, "client_wheels", client_wheels)
    conn, root = LocalHost(), str(tmp_path / "host")
    python, versions = ssh_install.ensure_client_venv_on(conn, root, "2.10.1")  # type: ignore[arg-type]
    here = subprocess.run(["python3", "-c", "import platform; print(platform.python_version())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    assert versions == {"confluent_kafka": "2.10.1", "librdkafka": "2.10.1", "python": here}
    assert asked[0]["python"] == ".".join(here.split(".")[:2])  # the wheel asked for the host's Python
    venv = Path(python).parent.parent
    assert venv.parent == Path(root) / "cache" and venv.name.startswith("venv-ck-2.10.1-")
    assert json.loads((venv / MARKER).read_text()) == versions and (venv / ".complete").exists()
    assert not Path(f"{venv}.wheels").exists()  # the uploaded wheels went once installed
    install = next(c for c in conn.commands if "pip install" in c)
    assert "python3 -m venv" in install and "--no-index" in install
    conn.commands.clear()
    assert ssh_install.ensure_client_venv_on(conn, root, "2.10.1") == (python, versions)  # type: ignore[arg-type]
    assert len(conn.commands) == 2, conn.commands  # cached on the host: its Python's facts, then one look at the venv
    assert not any("pip install" in c for c in conn.commands)  # nothing made again


class FakeRuntime(SshClientVenvs):
    """What of SshRuntime the client venvs use; the host's venv faked."""

    run_root = "/var/lib/faultline/runs/fl00aa11"

    def __init__(self, settings: dict[str, Any]) -> None:
        self._lock = threading.Lock()
        self._client_venvs: dict[tuple[str, str], tuple[str, dict[str, str]]] = {}
        self.state = type("State", (), {"data": {"settings": settings}})()
        self.inventory = type("Inventory", (), {"root": "/var/lib/faultline"})()

    def conn(self, host: Host) -> Any:
        return host.name


def test_each_client_host_makes_the_runs_client_versions_at_bring_up_and_runs_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[tuple[str, str]] = []

    def ensure(conn: str, root: str, version: str) -> tuple[str, dict[str, str]]:
        made.append((conn, version))
        python = "3.11.2" if conn == "az1-client" else "3.12.3"
        return f"{root}/cache/venv-ck-{version}-k/bin/python", {"confluent_kafka": version, "librdkafka": version,
                                                               "python": python}

    monkeypatch.setattr(ssh_client_venvs, "ensure_client_venv_on", ensure)
    runtime = FakeRuntime({"client_versions": ["2.10.1", "2.16.1"]})
    hosts = [Host(f"az{i}-client", "client", f"az{i}", i, f"10.0.{i}.21") for i in (1, 2)]
    for host in hosts:
        runtime._make_client_venvs(host)
    assert made == [("az1-client", "2.10.1"), ("az1-client", "2.16.1"), ("az2-client", "2.10.1"),
                    ("az2-client", "2.16.1")]
    env = ClientEnv("2.10.1", (), {})  # what run_story hands a runtime whose hosts make the venvs
    assert runtime.client_python(hosts[0], env) == (
        "env", "PYTHONPATH=/var/lib/faultline/runs/fl00aa11/src", "/var/lib/faultline/cache/venv-ck-2.10.1-k/bin/python")
    assert runtime.client_report(hosts[1], env)["python"] == "3.12.3"
    assert len(made) == 4  # both were made at bring-up
    reports = runtime.client_venvs_made()
    assert sorted(reports) == ["2.10.1", "2.16.1"] and sorted(reports["2.10.1"]) == ["az1-client", "az2-client"]


def test_run_json_names_the_client_under_test_as_the_hosts_venvs_report_it(tmp_path: Path) -> None:
    one = {"confluent_kafka": "2.10.1", "librdkafka": "2.10.1", "python": "3.11.2"}
    (tmp_path / "state.json").write_text(json.dumps({"client_venvs": {"2.10.1": {"az1-client": one,
                                                                                "az2-client": one}}}))
    assert hosts_client(tmp_path, "2.10.1") == one
    assert hosts_client(tmp_path, None) is None and hosts_client(tmp_path, "2.16.1") is None
    other = {**one, "python": "3.12.3"}
    (tmp_path / "state.json").write_text(json.dumps({"client_venvs": {"2.10.1": {"az1-client": one,
                                                                                "az2-client": other}}}))
    assert hosts_client(tmp_path, "2.10.1") == {**one, "by_host": {"az1-client": one, "az2-client": other}}


def test_an_ssh_spec_takes_a_client_under_test_and_names_every_client_version(tmp_path: Path) -> None:
    inv = inventory(tmp_path)
    spec = parse_spec({**SPEC, "cluster": {"runtime": "ssh", "inventory": str(inv)},
                       "clients": {"confluent_kafka": "2.10.1"},
                       "nemesis": [{"at": 0, "fault": "upgrade-client", "process": "producer-az1-0",
                                    "to_version": "2.16.1", "name": "up"}]})
    assert spec.client == "2.10.1" and spec.cluster.client_versions == ("2.10.1", "2.16.1")
    assert spec.cluster.to_json()["client_versions"] == ("2.10.1", "2.16.1")
    assert "client_versions" not in parse_spec(SPEC).cluster.to_json()  # a run without one keeps its state as it was
