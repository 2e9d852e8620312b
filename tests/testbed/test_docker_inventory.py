"""A Docker inventory (testbed.docker_inventory): containers of the user's per AZ, docker's own actions unless a
command line is given, every mistake one line naming the file and the entry; and what a spec may do with one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.spec import parse_spec
from testbed.docker_inventory import (
    DockerInventory,
    is_docker_inventory,
    load_any_inventory,
    load_docker_inventory,
)
from testbed.errors import SpecError, UsageError
from testbed.inventory import Inventory

NODES = [{"az": f"az{i}", "broker": f"kafka-{i}"} for i in (1, 2, 3)]


def write(tmp_path: Path, **top: Any) -> Path:
    path = tmp_path / "yours.yaml"
    path.write_text(yaml.safe_dump({"nodes": NODES, **top}))
    return path


def test_a_docker_inventory_names_containers_per_az_and_defaults_to_dockers_own_actions(tmp_path: Path) -> None:
    nodes = [NODES[1], NODES[0], {"az": "az3", "broker": "kafka-3", "zookeeper": "zk-3",
                                  "commands": {"broker": {"pause": "kill -STOP 1"}}}]
    path = write(tmp_path, daemon="unix:///run/yours.sock", ports=[9092, 2181], nodes=nodes)
    inventory = load_any_inventory(path)
    assert is_docker_inventory(path) and not isinstance(inventory, Inventory)
    assert [n.name for n in inventory.nodes] == ["az1-node", "az2-node", "az3-node"]  # sorted by AZ
    assert inventory.host == "unix:///run/yours.sock" and inventory.ports == (2181, 9092)
    assert inventory.provision is False and inventory.compose_project is None
    az1, az3 = inventory.node("az1-node"), inventory.node("az3-node")
    assert az1.container("zookeeper") == "kafka-1"  # its ZooKeeper in the broker's container unless named
    assert az1.says("broker", "kill") == "docker kill kafka-1" and az1.says("broker", "resume") == "docker unpause kafka-1"
    assert az3.says("zookeeper", "stop") == "docker stop zk-3"
    assert az3.says("broker", "pause") == "docker exec kafka-3 sh -c 'kill -STOP 1'"
    assert load_docker_inventory(write(tmp_path)).ports == (2181, 2888, 3888, 9092, 9093)  # the default ports
    inventory.check_nodes(3)
    with pytest.raises(UsageError, match=r"the cluster needs 4 AZs \(az1..az4\), but nodes names no az4"):
        inventory.check_nodes(4)


@pytest.mark.parametrize("top, says", [
    ({"provision": True}, "provision: an inventory of `nodes` names containers of yours: only provision: false"),
    ({"daemon": "/var/run/docker.sock"}, "daemon: '/var/run/docker.sock' must be a Docker daemon's URL"),
    ({"compose_project": "my shop"}, "compose_project: 'my shop' is not a Docker name"),
    ({"hosts": []}, "hosts: unknown key in a Docker inventory"),
    ({"nodes": []}, "nodes: must be a non-empty list of AZs"),
    ({"nodes": NODES + [{"az": "az1", "broker": "other"}]}, "nodes[3] (az1): az1 is named twice (one node per AZ)"),
    ({"nodes": [{"az": "zone-a", "broker": "k"}]}, "nodes[0] (zone-a): az: 'zone-a' must be az1..az9"),
    ({"nodes": [{"az": "az1"}]}, "nodes[0] (az1): broker: None must name a container"),
    ({"nodes": [{"az": "az1", "broker": "k", "colour": "red"}]}, "nodes[0] (az1): unknown key 'colour'"),
    ({"nodes": [{"az": "az1", "broker": "k", "commands": {"broker": {"reboot": "x"}}}]},
     "nodes[0] (az1): commands: broker.reboot: unknown action"),
    ({"ports": [0]}, "ports: 0 is not a TCP port"),
])
def test_bad_docker_inventories_are_one_line_naming_the_entry(tmp_path: Path, top: dict[str, Any], says: str) -> None:
    with pytest.raises(UsageError) as exc:
        load_docker_inventory(write(tmp_path, **top))
    assert str(exc.value).startswith(f"inventory {tmp_path / 'yours.yaml'}: {says}"), str(exc.value)
    assert "\n" not in str(exc.value)


def spec(inventory: Path, **changes: Any) -> dict[str, Any]:
    return {"name": "s", "duration_s": 20, "cluster": {"inventory": str(inventory)},
            "workloads": {"producers": [{"azs": ["az1"]}]}, **changes}


def test_a_spec_on_a_docker_inventory_runs_on_docker_existing_and_refuses_what_it_may_not_do(tmp_path: Path) -> None:
    path = write(tmp_path)
    parsed = parse_spec(spec(path))
    assert parsed.cluster.runtime == "docker-existing" and parsed.cluster.provision is False
    for fault, says in (("power-off", "a power cut needs faultline's own processes"),
                        ("slow-link", "a degraded link needs faultline's own delay process")):
        extra = {"delay_ms": 100} if fault == "slow-link" else {}
        with pytest.raises(SpecError, match=f"nemesis\\[0\\].fault: {fault}: with provision: false .*{says}"):
            parse_spec(spec(path, nemesis=[{"at": 5, "fault": fault, "target": "az2", **extra}]))
    # A broker and its ZooKeeper in one container: docker's kill would take both down, unless a command line says how.
    for role in ("broker", "zookeeper"):
        with pytest.raises(SpecError, match=rf"kill \(role {role}\): .* nodes\[0\] \(az1\)'s broker and zookeeper "
                                            rf"share the container kafka-1, and docker's kill would act on both"):
            parse_spec(spec(path, nemesis=[{"at": 5, "fault": "kill", "target": "az2", "role": role}]))
    own = write(tmp_path, nodes=[{**n, "zookeeper": f"zk-{i}"} for i, n in enumerate(NODES, 1)])
    assert parse_spec(spec(own, nemesis=[{"at": 5, "fault": "kill", "target": "az2", "role": "zookeeper"}]))
    lines = {"kill": "kill -9 $(pgrep -f kafka.Kafka)", "start": "/start-broker.sh"}
    told = write(tmp_path, nodes=[{**n, "commands": {"broker": lines}} for n in NODES])
    assert parse_spec(spec(told, nemesis=[{"at": 5, "fault": "kill", "target": "az2"}]))


def test_any_inventory_is_read_once_and_refused_in_one_line_naming_the_file(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[str] = []
    parse = yaml.safe_load
    monkeypatch.setattr(yaml, "safe_load", lambda text: reads.append(text) or parse(text))
    assert isinstance(load_any_inventory(write(tmp_path)), DockerInventory) and len(reads) == 1
    ssh, missing = tmp_path / "ssh.yaml", tmp_path / "none.yaml"
    for text, says in (("control: 10.0.0.5\nhosts: []\n", ": hosts: must be a non-empty list of hosts"),
                       ("nodes: [\n", ":2: not valid YAML"),
                       ("- az1\n", ": must be a YAML mapping with 'control' and 'hosts'")):
        ssh.write_text(text)
        reads.clear()
        with pytest.raises(UsageError, match=rf"^inventory {ssh}{says}"):
            load_any_inventory(ssh)
        assert len(reads) == 1, text
    with pytest.raises(UsageError, match=rf"^inventory {missing}: cannot read it \(No such file or directory\)$"):
        load_any_inventory(missing)
