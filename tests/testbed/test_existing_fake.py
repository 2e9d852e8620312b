"""A cluster of the user's (testbed.kafka.existing) on a fake runtime: its process faults act as the inventory
says (`ForeignHosts.act`) and find processes again by role and port, the end starts again only what a fault stopped, collect copies only the
run's topic's partitions from the learned log directories, and the topic goes only once it may exist."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from testbed.addressing import Host
from testbed.errors import ClusterError, RuntimeFailure, UsageError
from testbed.inventory import load_inventory
from testbed.kafka import existing
from testbed.kafka.config import ClusterSettings
from testbed.kafka.existing import ExistingCluster, new_cluster
from testbed.lifecycle import check_can_provision
from testbed.runfolder import RunFolder

PORTS = {9092: "broker", 2181: "zookeeper"}


class ForeignFake:
    """The runtime's side of a cluster of the user's: command lines run, pids by port, files copied."""

    kind = "fake"
    prefix = "fl0a0b0c"

    def __init__(self, inventory_path: Path) -> None:
        self.inventory = load_inventory(inventory_path)
        self.plan = self.inventory.plan(3)
        self.lines: list[tuple[str, str]] = []
        self.fetched: list[tuple[str, str, str, Path]] = []
        self.pids = {(n.name, role): 1000 + 10 * n.index + i for n in self.plan.nodes
                     for i, role in enumerate(("zookeeper", "broker"))}
        self.running = set(self.pids)

    def act(self, host: Host, role: str, action: str, timeout: float = 60.0) -> None:
        line = self.inventory.host(host.name).command(role, action)
        if line is None:  # as the ssh runtime says it
            raise RuntimeFailure(f"{host.name}: the inventory names no commands.{role}.{action}")
        self.lines.append((host.name, line))
        if action == "kill":
            self.running.discard((host.name, role))
        elif action == "start":
            self.running.add((host.name, role))
            self.pids[(host.name, role)] += 1

    def role_pid(self, host: Host, role: str, port: int) -> int | None:
        assert PORTS[port] == role
        key = (host.name, role)
        return self.pids[key] if key in self.running else None

    def role_paused(self, host: Host, role: str, port: int) -> bool:
        return False

    def fetch_from(self, host: Host, directory: str, names: str, into: Path) -> list[str]:
        self.fetched.append((host.name, directory, names, into))
        return []


def inventory(tmp_path: Path, commands: dict[str, Any]) -> Path:
    (tmp_path / "id").write_text("x\n")
    hosts = [{"address": f"10.0.{i}.{11 if role == 'node' else 21}", "az": f"az{i}", "role": role,
              **({"commands": commands} if role == "node" else {})} for i in (1, 2, 3) for role in ("node", "client")]
    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump({"control": "10.0.0.5", "key_file": "id", "provision": False, "hosts": hosts}))
    return path


@pytest.fixture
def cluster(tmp_path: Path) -> ExistingCluster:
    runtime = ForeignFake(inventory(tmp_path, {"broker": {"kill": "kill broker", "start": "start broker"}}))
    settings = ClusterSettings(runtime="ssh", provision=False, topic="faultline-fl0a0b0c")
    made = new_cluster(runtime, settings, RunFolder(tmp_path / "run").make())  # type: ignore[arg-type]
    assert isinstance(made, ExistingCluster)
    return made


def test_a_kill_runs_the_inventorys_command_and_the_end_starts_again_only_what_a_fault_stopped(
        cluster: ExistingCluster) -> None:
    runtime: ForeignFake = cluster.runtime  # type: ignore[assignment]
    az2 = cluster.node(1)
    assert cluster.pids(az2) == {"zookeeper": 1020, "broker": 1021}
    assert cluster.processes.kill([cluster.process_name(az2, "broker")], 1.0) == []
    assert runtime.lines == [("az2-node", "kill broker")] and cluster.process(az2, "broker") is None
    runtime.running.discard(("az3-node", "broker"))  # down, but not by a fault: the user's to start
    cluster.power_on_all()
    assert runtime.lines == [("az2-node", "kill broker"), ("az2-node", "start broker")]
    assert cluster.pids(az2)["broker"] == 1022 and cluster.stopped == set()
    with pytest.raises(ClusterError, match=r"^az1-node: the inventory names no commands.broker.pause$"):
        cluster.pause(cluster.node(0), "broker")
    with pytest.raises(ClusterError, match=r"^az1-node: the inventory names no commands.zookeeper.kill$"):
        cluster.kill(cluster.node(0), "zookeeper")
    with pytest.raises(ClusterError, match=r"power-off needs faultline's own processes"):
        cluster.power_off([az2])


def test_collect_copies_only_the_runs_partitions_and_the_topic_goes_once_it_may_exist(
        cluster: ExistingCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    runtime: ForeignFake = cluster.runtime  # type: ignore[assignment]
    deleted: list[str] = []
    monkeypatch.setattr(existing, "delete_topic", lambda c: deleted.append(c.topic))
    cluster.remove_own()
    assert deleted == []  # never made: nothing of the user's is deleted
    cluster.learned = {"brokers": {str(b): {"log_dirs": [f"/data/{b}a", f"/data/{b}b"]} for b in range(3)}}
    cluster.collect()
    assert [(h, d, n) for h, d, n, _ in runtime.fetched] == [
        (f"az{b + 1}-node", f"/data/{b}{x}", "faultline-fl0a0b0c-*") for b in range(3) for x in "ab"]
    assert all(into == cluster.node_folder(cluster.node(int(d[6]))).data("broker") for _, d, _, into in runtime.fetched)
    monkeypatch.setattr(existing, "learn", lambda c: {"brokers": {}, "controller": 2, "topics": []})
    monkeypatch.setattr(existing, "create_topic", lambda c: (_ for _ in ()).throw(ClusterError("refused")))
    with pytest.raises(ClusterError, match="refused"):
        cluster.bring_up(1.0)
    cluster.remove_own()
    assert deleted == ["faultline-fl0a0b0c"]  # a create that may have reached the brokers is undone


def test_a_cluster_of_yours_is_never_provisioned_over(tmp_path: Path) -> None:
    """A run set up to make its own cluster (e.g. `cluster up` without the inventory's word) on an inventory that
    says provision: false is refused before anything is checked or made, and the other way round."""
    path = inventory(tmp_path, {})
    with pytest.raises(UsageError, match=r"^inventory .*: it says provision: false, but the run was set up for a "
                                         r"cluster faultline makes$"):
        check_can_provision(ClusterSettings(runtime="ssh", inventory=str(path)))
    path.write_text(path.read_text().replace("provision: false", "provision: true"))
    with pytest.raises(UsageError, match=r"it says provision: true, but the run was set up for a cluster of yours$"):
        check_can_provision(ClusterSettings(runtime="ssh", inventory=str(path), provision=False))
