"""The docker-existing runtime's process side (testbed.runtime.docker_foreign, ForeignHosts) on a fake Docker client:
an action is docker's own call on the role's container, or the inventory's command line run inside it; a role's pid
is the one listening on its port in its container (`ss` in the container's namespace, faked here); a pause is the
daemon's, or a stopped process's; docker's stop or kill of a container another role's container shares the network
namespace of is refused. (The partition side and docker's own calls run on a real daemon:
tests/docker/test_docker_your_cluster.py, tests/docker/test_docker_native_faults.py.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from testbed.addressing import Host
from testbed.dist.clients import ClientEnv
from testbed.errors import RuntimeFailure, UsageError
from testbed.runtime import docker_foreign, docker_yours
from testbed.runtime.base import CarriesClientVenvs, client_python, client_report
from testbed.runtime.docker import DockerRuntime
from testbed.runtime.docker_foreign import DockerForeignRuntime


class Result:
    def __init__(self, code: int, out: bytes) -> None:
        self.exit_code, self.output = code, (out, b"")


class FakeContainer:
    def __init__(self, name: str, calls: list[tuple[str, ...]]) -> None:
        self.name, self.id, self.calls = name, f"id-{name}", calls
        self.attrs: dict[str, Any] = {"State": {"Running": True, "Pid": 4242, "Paused": False},
                                      "HostConfig": {"NetworkMode": "bridge"}}

    def kill(self) -> None:
        self.calls.append(("kill", self.name))
        self.attrs["State"].update(Running=False, Pid=0)

    def start(self) -> None:
        self.calls.append(("start", self.name))
        self.attrs["State"].update(Running=True, Pid=5151)

    def stop(self, timeout: int) -> None:
        self.calls.append(("stop", self.name, str(timeout)))

    def pause(self) -> None:
        self.calls.append(("pause", self.name))
        self.attrs["State"]["Paused"] = True

    def unpause(self) -> None:
        self.calls.append(("unpause", self.name))
        self.attrs["State"]["Paused"] = False

    def exec_run(self, argv: list[str], demux: bool) -> Result:
        self.calls.append(("exec", self.name, *argv))
        return Result(1 if "fail" in argv[-1] else 0, b"no such process" if "fail" in argv[-1] else b"")


class FakeContainers:
    def __init__(self, calls: list[tuple[str, ...]]) -> None:
        self.by_name = {n: FakeContainer(n, calls) for n in ("kafka-1", "kafka-2", "zk-2")}

    def get(self, name: str) -> FakeContainer:
        return self.by_name[name]


class FakeClient:
    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []
        self.containers = FakeContainers(self.calls)


class FakeState:
    def __init__(self, inventory: Path) -> None:
        self.data = {"settings": {"inventory": str(inventory)}}


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> DockerForeignRuntime:
    def listening(container: FakeContainer, command: str, stdin: str | None) -> str:  # ss in its namespace
        state = container.attrs["State"]
        return f'LISTEN 0 50 *:9092 *:* users:(("java",pid={state["Pid"]},fd=9))' if state["Running"] else ""
    monkeypatch.setattr(docker_foreign, "in_namespace", listening)
    monkeypatch.setattr(docker_foreign, "is_stopped", lambda pid: pid == 4242)
    path = tmp_path / "yours.yaml"
    path.write_text(yaml.safe_dump({"nodes": [
        {"az": "az1", "broker": "kafka-1", "commands": {"broker": {"pause": "kill -STOP 7", "resume": "fail"}}},
        {"az": "az2", "broker": "kafka-2", "zookeeper": "zk-2"}]}))
    return DockerForeignRuntime("fl0a0b0c", None, FakeState(path), FakeClient())  # type: ignore[arg-type]


AZ1 = Host("az1-node", "node", "az1", 1, "10.0.0.11")
AZ1_CLIENT = Host("az1-client", "client", "az1", 1, "10.0.0.251")
AZ2 = Host("az2-node", "node", "az2", 2, "10.0.0.12")


def test_docker_calls_act_on_the_roles_container_and_command_lines_run_inside_it(
        runtime: DockerForeignRuntime) -> None:
    calls = runtime.client.calls  # type: ignore[attr-defined]
    assert runtime.role_pid(AZ2, "zookeeper", 2181) == 4242
    runtime.act(AZ2, "zookeeper", "kill")
    assert calls == [("kill", "zk-2")] and runtime.role_pid(AZ2, "zookeeper", 2181) is None
    assert runtime.role_pid(AZ2, "broker", 9092) == 4242  # its own container: untouched
    runtime.act(AZ2, "zookeeper", "start")
    runtime.act(AZ2, "broker", "stop", timeout=30)
    runtime.act(AZ2, "broker", "pause")
    assert runtime.role_paused(AZ2, "broker", 9092) and not runtime.role_paused(AZ2, "zookeeper", 2181)  # 5151 runs
    runtime.act(AZ2, "broker", "resume")
    assert calls[1:] == [("start", "zk-2"), ("stop", "kafka-2", "30"), ("pause", "kafka-2"), ("unpause", "kafka-2")]
    assert runtime.role_pid(AZ2, "zookeeper", 2181) == 5151  # started again: a new main process
    runtime.act(AZ1, "broker", "pause")  # the inventory's line, inside the container
    assert calls[-1] == ("exec", "kafka-1", "sh", "-c", "kill -STOP 7")
    assert runtime.role_paused(AZ1, "broker", 9092)  # its process stopped (state T), the container not paused
    with pytest.raises(RuntimeFailure, match=r"^az1-node \(kafka-1\): 'fail' exited 1: no such process$"):
        runtime.act(AZ1, "broker", "resume")



def test_docker_stop_or_kill_of_the_owner_of_the_other_roles_network_namespace_is_refused_in_one_line(
        runtime: DockerForeignRuntime, monkeypatch: pytest.MonkeyPatch) -> None:
    """ZooKeeper in the broker's namespace: docker may not stop or kill the broker's container (the ZooKeeper would
    lose its network), it may the ZooKeeper's; either may be paused. And the other way round. The same line refuses
    the spec before the run (`check_native_calls`, from the preflight screen) and the call itself."""
    calls = runtime.client.calls  # type: ignore[attr-defined]
    by_name = runtime.client.containers.by_name  # type: ignore[attr-defined]
    inventory, node = runtime.inventory, runtime.inventory.node("az2-node")
    monkeypatch.setattr(docker_yours, "daemon", lambda inventory: runtime.client)
    by_name["zk-2"].attrs["HostConfig"]["NetworkMode"] = "container:id-kafka-2"
    by_name["id-kafka-2"] = by_name["kafka-2"]
    for action in ("stop", "kill"):
        said = docker_yours.native_refusal(runtime.client, inventory, node, "broker", action)
        assert said == (f"inventory {inventory.path}: nodes[1] (az2): docker {action} kafka-2 (broker) would take "
                        f"down the network of zk-2 (zookeeper), which runs in its network namespace: give "
                        f"commands.broker.{action}, or run the broker in the zookeeper's namespace instead"), said
        with pytest.raises(RuntimeFailure) as refused:
            runtime.act(AZ2, "broker", action)
        assert str(refused.value) == said
        assert docker_yours.native_refusal(runtime.client, inventory, node, "zookeeper", action) is None
    with pytest.raises(UsageError) as before_the_run:
        docker_yours.check_native_calls(inventory, 3, [("broker", "pause"), ("broker", "kill"), ("broker", "start")])
    assert "docker kill kafka-2 (broker)" in str(before_the_run.value)
    docker_yours.check_native_calls(inventory, 3, [("broker", "pause"), ("zookeeper", "kill")])
    assert calls == []  # nothing was called on either container
    runtime.act(AZ2, "broker", "pause")
    runtime.act(AZ2, "zookeeper", "kill")
    assert calls == [("pause", "kafka-2"), ("kill", "zk-2")]
    assert [c.name for c in runtime.namespaces(AZ2)] == ["kafka-2"]  # fault rules go in once, into the owner's

    by_name["zk-2"].attrs["HostConfig"]["NetworkMode"] = "bridge"  # the broker in the ZooKeeper's namespace instead
    by_name["kafka-2"].attrs["HostConfig"]["NetworkMode"] = "container:id-zk-2"
    by_name["id-zk-2"] = by_name["zk-2"]
    assert docker_yours.native_refusal(runtime.client, inventory, node, "broker", "kill") is None
    assert "docker stop zk-2 (zookeeper) would take down the network of kafka-2 (broker)" in str(
        docker_yours.native_refusal(runtime.client, inventory, node, "zookeeper", "stop"))
    assert [c.name for c in runtime.namespaces(AZ2)] == ["zk-2"]
    assert [c.name for c in runtime.namespaces(AZ1)] == ["kafka-1"]  # one container for both


def test_the_client_under_test_goes_into_the_runs_client_container_never_into_yours(
        runtime: DockerForeignRuntime, monkeypatch: pytest.MonkeyPatch) -> None:
    env = ClientEnv("2.10.1", ("/venvs/2.10.1/bin/python",), {"confluent_kafka": "2.10.1", "librdkafka": "2.10.1",
                                                             "python": "3.10.13"})
    asked: list[tuple[str, str]] = []

    def put(clients: DockerRuntime, host: Host, env: ClientEnv) -> tuple[str, ...]:
        asked.append((host.name, env.version))
        return ("env", "PYTHONPATH=/code", "/venvs/2.10.1/bin/python")
    monkeypatch.setattr(DockerRuntime, "client_python", put)
    assert isinstance(runtime, CarriesClientVenvs)
    assert client_python(runtime, AZ1_CLIENT, env) == ("env", "PYTHONPATH=/code", "/venvs/2.10.1/bin/python")
    assert asked == [("az1-client", "2.10.1")]
    assert client_report(runtime, AZ1_CLIENT, env) == env.versions  # the venv made here, put there as it is
    with pytest.raises(RuntimeFailure, match=r"^az1-node: faultline runs nothing in your containers$"):
        runtime.client_python(AZ1, env)
    assert asked == [("az1-client", "2.10.1")] and runtime.client.calls == []  # type: ignore[attr-defined]
