"""Disk faults as specs, their refusals, and what they hand the runtime and journal (a recording runtime: no mount;
tests/testbed/test_unsyncfs_faults.py holds the mount's side on a real one)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harness.spec import parse_spec
from nemesis.disk_faults import DISK_FAULT, KRAFT_METADATA, data_path
from nemesis.fault_base import FaultEnv
from nemesis.spec import parse_fault
from testbed.errors import FaultError, RuntimeFailure, SpecError
from testbed.runfolder import NodeFolder
from testbed.runtime.unsynced import LocalDiskFaults
from tests.harness.test_spec import BASE


class Disks:
    """A recording stand-in for UnsyncedDisks: rules by (host, dir); refuses what `refuse` names."""

    def __init__(self, refuse: str | None = None) -> None:
        self.rules: dict[tuple[str, Path], dict[str, Any]] = {}
        self.refuse = refuse

    def start_fault(self, host: str, target: Path, rule: dict[str, Any]) -> dict[str, Any]:
        if self.refuse == host:
            raise RuntimeFailure(f"unsyncfs over {target} refused its disk faults: no")
        self.rules[(host, target)] = rule
        return {}

    def stop_fault(self, host: str, target: Path, rule_id: str) -> dict[str, Any]:
        rule = self.rules.pop((host, target))
        assert rule["id"] == rule_id
        return {"counts": {"eio-write": 2}, "files": {f"{rule['path']}/00.log": {"eio-write": 2}}}


class Runtime(LocalDiskFaults):
    kind = "netns"

    def __init__(self, disks: Disks) -> None:
        self.disks = disks  # type: ignore[assignment]


def node(name: str, broker_id: int) -> Any:
    return SimpleNamespace(name=name, broker_id=broker_id)


NODES = {"az1-node": node("az1-node", 0), "az2-node": node("az2-node", 1)}


def env(tmp_path: Path, disks: Disks, roles: tuple[str, ...] = ("zookeeper", "broker"), lose: bool = True,
        dead: tuple[str, ...] = (), log_dirs: int = 1) -> Any:
    """A cluster stand-in; the processes named in `dead` (az1-node/broker) are not running until started."""
    settings = SimpleNamespace(topic="faultline", lose_unsynced_writes=lose, zookeeper_session_timeout_ms=0, log_dirs=log_dirs,
                               quorum_role=roles[0] if len(roles) == 2 else None)
    down = set(dead)
    cluster = SimpleNamespace(runtime=Runtime(disks), settings=settings, loses_unsynced_writes=lose, roles=roles,
                              node_folder=lambda n: NodeFolder(tmp_path / n.name),
                              plan=SimpleNamespace(host=lambda name: NODES[name]),
                              process_name=lambda n, r: f"{n.name}/{r}", registered=lambda n: False,
                              pids=lambda n: {r: None if f"{n.name}/{r}" in down else 1 for r in roles},
                              start=lambda n, r: down.discard(f"{n.name}/{r}"))
    return FaultEnv(cluster=cluster, firewall=None)  # type: ignore[arg-type]


class Resolver:
    def nodes(self, selectors: tuple[str, ...]) -> list[Any]:
        return [NODES[s.replace("leader", "az1-node")] for s in selectors]


def test_a_disk_error_on_the_leaders_partition_reaches_its_mount_and_its_counts_the_stop_row(tmp_path: Path) -> None:
    disks = Disks()
    spec = parse_fault("n[0]", {"fault": "disk-error", "target": "leader", "path": "partition", "partition": 2,
                                "ops": ["write"], "probability": 0.5})
    injected = DISK_FAULT.inject(spec, Resolver(), env(tmp_path, disks), "eio-leader")  # type: ignore[arg-type]
    data = tmp_path / "az1-node" / "kafka-data"
    assert disks.rules == {("az1-node", data): {"id": "eio-leader", "kind": "disk-error", "path": "faultline-2",
                                                  "ops": ["write"], "p": 0.5}}
    assert injected.targets == {"nodes": ["az1-node"], "brokers": [0], "path": "partition",
                                "paths": {"az1-node": "kafka-data/faultline-2"}}
    undone = DISK_FAULT.undo(injected, env(tmp_path, disks))
    assert disks.rules == {}
    assert undone == {"counts": {"az1-node": {"path": "kafka-data/faultline-2", "counts": {"eio-write": 2},
                                              "files": {"faultline-2/00.log": {"eio-write": 2}}}}, "restarted": []}


def test_the_stop_starts_a_broker_that_halted_on_its_failed_log_dir(tmp_path: Path) -> None:
    disks = Disks()
    spec = parse_fault("n[0]", {"fault": "disk-error", "target": "az1-node"})
    injected = DISK_FAULT.inject(spec, Resolver(), env(tmp_path, disks), "eio")  # type: ignore[arg-type]
    undone = DISK_FAULT.undo(injected, env(tmp_path, disks, dead=("az1-node/broker",)))
    assert undone is not None and undone["restarted"] == ["az1-node/broker"]


def test_the_quorum_path_is_zookeepers_the_controllers_or_a_combined_nodes_metadata_log(tmp_path: Path) -> None:
    n = NODES["az1-node"]
    assert data_path(env(tmp_path, Disks()).cluster, n, "quorum", 0) == (tmp_path / "az1-node" / "zookeeper-data", "")
    assert data_path(env(tmp_path, Disks(), ("controller", "broker")).cluster, n, "quorum", 0) == (
        tmp_path / "az1-node" / "controller-data", "")
    assert data_path(env(tmp_path, Disks(), ("broker",)).cluster, n, "quorum", 0) == (
        tmp_path / "az1-node" / "kafka-data", KRAFT_METADATA)


def test_with_several_log_dirs_one_fails_by_its_name_and_a_partition_is_found_in_any(tmp_path: Path) -> None:
    cluster, n = env(tmp_path, Disks(), log_dirs=2).cluster, NODES["az1-node"]
    data = tmp_path / "az1-node" / "kafka-data"
    assert data_path(cluster, n, "log-dir", 0, 1) == (data, "dir-1")
    assert data_path(cluster, n, "log-dir", 0, None) == (data, "")
    assert data_path(cluster, n, "partition", 2) == (data, "*/faultline-2")
    combined = env(tmp_path, Disks(), ("broker",), log_dirs=2).cluster
    assert data_path(combined, n, "quorum", 0) == (data, f"dir-0/{KRAFT_METADATA}")


def test_a_node_that_refuses_undoes_the_others_and_fails_the_start(tmp_path: Path) -> None:
    disks = Disks(refuse="az2-node")
    spec = parse_fault("n[0]", {"fault": "slow-disk", "target": ["az1-node", "az2-node"], "fsync_delay_ms": 500})
    with pytest.raises(FaultError, match=r"^slow-disk: unsyncfs over .* refused its disk faults: no$"):
        DISK_FAULT.inject(spec, Resolver(), env(tmp_path, disks), "slow")  # type: ignore[arg-type]
    assert disks.rules == {}


def test_data_off_unsyncfs_is_refused_when_the_fault_starts(tmp_path: Path) -> None:
    spec = parse_fault("n[0]", {"fault": "disk-full", "target": "az1-node", "free_bytes": 0})
    with pytest.raises(FaultError, match=r"disk-full: the nodes' data is not on unsyncfs"):
        DISK_FAULT.inject(spec, Resolver(), env(tmp_path, Disks(), lose=False), "full")  # type: ignore[arg-type]


@pytest.mark.parametrize(("fault", "says"), [
    ({"fault": "disk-error", "target": "leader", "probability": 1.5},
     r"^n\[0\]\.probability: expected a number >= 0 and <= 1, got 1\.5$"),
    ({"fault": "disk-error", "target": "leader", "path": "/etc"},
     r"^n\[0\]\.path: '/etc' is not one of log-dir, partition, quorum$"),
    ({"fault": "disk-error", "target": "leader", "ops": ["unlink"]},
     r"^n\[0\]\.ops\[0\]: 'unlink' is not one of write, fsync, read$"),
    ({"fault": "disk-full", "target": "leader", "free_bytes": -1},
     r"^n\[0\]\.free_bytes: expected a whole number >= 0, got -1$"),
    ({"fault": "slow-disk", "target": "leader"}, r"^n\[0\]\.fsync_delay_ms: required for fault slow-disk$"),
    ({"fault": "disk-error", "target": "leader", "path": "partition", "log_dir": 1},
     r"^n\[0\]\.log_dir: only with path log-dir"),
    ({"fault": "slow-disk", "target": "leader", "fsync_delay_ms": 10, "loss": 0.1},
     r"^n\[0\]\.loss: unknown key for fault slow-disk"),
])
def test_bad_disk_faults_name_the_key(fault: dict[str, Any], says: str) -> None:
    with pytest.raises(SpecError, match=says):
        parse_fault("n[0]", fault)


def test_a_runtime_or_cluster_that_cannot_is_refused_in_one_line() -> None:
    spec = {**BASE, "nemesis": [{"at": 1, "fault": "disk-error", "target": "leader"}]}
    assert parse_spec({**spec, "cluster": {"runtime": "netns"}}).nemesis.items
    assert parse_spec({**spec, "cluster": {"runtime": "docker"}}).nemesis.items
    with pytest.raises(SpecError, match=r"^nemesis\[0\]\.fault: disk-error needs a runtime whose nodes' data is on "
                                        r"unsyncfs mounts it can steer; the ssh runtime cannot \(use --runtime netns "
                                        r"or docker\)$"):
        parse_spec({**spec, "cluster": {"runtime": "ssh", "inventory": "hosts.yaml"}})
    with pytest.raises(SpecError, match=r"^nemesis\[0\]\.fault: disk-error acts on the nodes' unsyncfs mounts, and "
                                        r"cluster.lose_unsynced_writes: false keeps their data off them"):
        parse_spec({**spec, "cluster": {"runtime": "netns", "lose_unsynced_writes": False}})


def test_a_log_dir_the_brokers_do_not_have_is_refused() -> None:
    spec = {**BASE, "cluster": {"runtime": "netns", "log_dirs": 2},
            "nemesis": [{"at": 1, "fault": "disk-error", "target": "leader", "log_dir": 1}]}
    assert parse_spec(spec).cluster.log_dirs == 2
    with pytest.raises(SpecError, match=r"^nemesis\[0\]\.log_dir: 2: the brokers have 2 log directories "
                                        r"\(cluster.log_dirs\), numbered from 0$"):
        parse_spec({**spec, "nemesis": [{**spec["nemesis"][0], "log_dir": 2}]})
