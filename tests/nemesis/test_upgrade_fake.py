"""`rolling-upgrade` on a fake cluster: each broker started on the new version with the protocol pinned, then bumped
in a second roll, ZooKeeper left alone; its step rows, the versions over time run.json takes from them, its words;
the spec's refusals and the upgrade notes' pins.

The real cluster's roll (2.7.2 -> 3.9.1, each broker's start line naming the new version) is
tests/nemesis/test_operations_cluster.py's and the rolling-upgrade scenario's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.spec import parse_spec
from nemesis.fault_words import upgraded
from nemesis.journal import read_journal
from nemesis.nemesis import Nemesis
from nemesis.upgrade import versions_over_time
from testbed.dist.versions import protocol_version, upgrade_pins
from testbed.errors import ClusterError, DistributionError, SpecError
from testbed.kafka.cluster import KafkaCluster
from testbed.kafka.config import ClusterSettings
from testbed.lifecycle import check_can_provision
from testbed.machine import Machine
from tests.fakes import FakeRuntime

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def world(fake_world: tuple[Nemesis, KafkaCluster, FakeRuntime],
          monkeypatch: pytest.MonkeyPatch) -> tuple[Nemesis, KafkaCluster, FakeRuntime]:
    """tests/nemesis/conftest.py's fake world, with every ISR full at once."""
    monkeypatch.setattr(fake_world[1], "settled", lambda: {})
    return fake_world


def rows(cluster: KafkaCluster) -> list[dict[str, Any]]:
    return [r for r in read_journal(cluster.folder.nemesis_journal) if r["fault"] == "rolling-upgrade"]


def props(cluster: KafkaCluster, name: str) -> dict[str, str]:
    text = cluster.node_folder(next(n for n in cluster.nodes if n.name == name)).config("broker").read_text()
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#"))


def test_each_broker_starts_on_the_new_version_pinned_then_bumped(
        world: tuple[Nemesis, KafkaCluster, FakeRuntime]) -> None:
    nem, cluster, runtime = world
    zookeepers = {n.name: runtime.process(f"{n.name}/zookeeper") for n in cluster.nodes}
    active = nem.start({"fault": "rolling-upgrade", "to_version": "3.9.1"}, "up")
    assert active.targets["pinned"] == {"inter.broker.protocol.version": "2.7"}
    assert active.targets["bumped_to"] == "3.9"
    nem.stop("up")
    steps = [r for r in rows(cluster) if r["type"] == "info"]
    assert [(s["targets"]["roll"], s["detail"]["broker"], s["targets"]["inter_broker_protocol"]) for s in steps] == [
        (1, 0, "2.7"), (1, 2, "2.7"), (1, 1, "2.7"), (2, 0, "3.9"), (2, 2, "3.9"), (2, 1, "3.9")]
    assert all(s["targets"]["version"] == "3.9.1" for s in steps)
    for node in cluster.nodes:
        broker = runtime.process(f"{node.name}/broker")
        assert broker is not None and "/fake/kafka-3.9.1/libs/*" in broker.argv  # the new version's jars
        assert props(cluster, node.name)["inter.broker.protocol.version"] == "3.9"
        assert "log.message.format.version" not in props(cluster, node.name)  # not pinned from 2.7 (2.4 on)
        # ZooKeeper stays: the same process, on the cluster's version
        assert runtime.process(f"{node.name}/zookeeper") is zookeepers[node.name]
        assert "/fake/kafka-2.7.2/libs/*" in zookeepers[node.name].argv  # type: ignore[union-attr]
    assert cluster.broker_versions == {n.name: "3.9.1" for n in cluster.nodes}


def test_without_bump_the_protocol_stays_pinned_and_run_json_reads_the_versions_over_time(
        world: tuple[Nemesis, KafkaCluster, FakeRuntime]) -> None:
    nem, cluster, _ = world
    nem.start({"fault": "rolling-upgrade", "to_version": "3.9.1", "bump": False}, "up")
    nem.stop("up")
    journal = rows(cluster)
    assert [r["targets"]["roll"] for r in journal if r["type"] == "info"] == [1, 1, 1]
    assert all(props(cluster, n.name)["inter.broker.protocol.version"] == "2.7" for n in cluster.nodes)
    over_time = versions_over_time(read_journal(cluster.folder.nemesis_journal), "2.7.2", 5)
    assert set(over_time) == {n.name for n in cluster.nodes}
    for node, steps in over_time.items():
        started = next(r["detail"]["started_ns"] for r in journal if r["type"] == "info"
                       and r["targets"]["nodes"] == [node])
        assert steps == [{"from_ns": 5, "version": "2.7.2", "inter_broker_protocol": None},
                         {"from_ns": started, "version": "3.9.1", "inter_broker_protocol": "2.7"}]
    assert versions_over_time([], "2.7.2", 5) == {}  # no upgrade: nothing to say


def test_a_brokers_version_changes_only_while_it_is_down(world: tuple[Nemesis, KafkaCluster, FakeRuntime]) -> None:
    _, cluster, _ = world
    with pytest.raises(ClusterError, match="is running: its version changes only while down"):
        cluster.set_broker(cluster.nodes[0], "3.9.1", {})


def test_the_upgrade_notes_pins() -> None:
    assert upgrade_pins("2.7.2") == {"inter.broker.protocol.version": "2.7"}
    assert upgrade_pins("2.3.1") == {"inter.broker.protocol.version": "2.3", "log.message.format.version": "2.3"}
    assert upgrade_pins("0.10.2.2")["inter.broker.protocol.version"] == "0.10.2"
    assert protocol_version("3.9.1") == "3.9"


def test_the_words_name_the_versions_and_the_protocol() -> None:
    assert upgraded({"brokers": [0], "nodes": ["az1-node"], "version": "3.9.1", "roll": 1,
                     "inter_broker_protocol": "2.7"}) == (
        "rolling upgrade, roll 1: broker 0 stopped cleanly and started on Kafka 3.9.1, "
        "inter.broker.protocol.version 2.7")
    start = upgraded({"brokers": [0, 2, 1], "controller": 1, "from_version": "2.7.2", "to_version": "3.9.1",
                      "pinned": {"inter.broker.protocol.version": "2.7"}, "bumped_to": "3.9"})
    assert "from Kafka 2.7.2 to 3.9.1" in start and "bumping inter.broker.protocol.version to 3.9" in start


def spec_with(fault: dict[str, Any], **cluster: Any) -> dict[str, Any]:
    raw = yaml.safe_load((ROOT / "scenarios" / "rolling-restart.yaml").read_text())
    raw.pop("configurations")
    raw["cluster"].update(cluster)
    raw["nemesis"] = [{"at": 10, "name": "up", "fault": "rolling-upgrade", **fault}, {"at": 100, "stop": "up"}]
    return raw


@pytest.mark.parametrize(("fault", "cluster", "message"), [
    ({"to_version": "2.7.2"}, {}, r"nemesis\[0\].to_version: 2.7.2 is the version the brokers run then: a "
                                  r"rolling-upgrade needs another"),
    ({"to_version": "2.6.3"}, {}, r"nemesis\[0\].to_version: 2.6.3 is not later than the brokers' 2.7.2 then "
                                  r"\(use rolling-downgrade for that way\)"),
    ({"to_version": "4.1.1"}, {}, r"nemesis\[0\].to_version: Kafka 4.1.1 runs only on KRaft"),
    ({"to_version": "5.0.0"}, {}, r"nemesis\[0\].to_version: faultline runs Kafka from 0.10.2 to 4.x"),
    ({"to_version": "3.9"}, {}, r"nemesis\[0\].to_version: expected a Kafka version such as 3.9.1"),
    ({}, {}, r"nemesis\[0\].to_version: required for fault rolling-upgrade"),
    ({"to_version": "3.9.1", "bump": "yes"}, {}, r"nemesis\[0\].bump: expected true or false"),
    ({"to_version": "2.1.1"}, {"kafka_version": "1.1.1", "runtime": "docker"},
     r"nemesis\[0\].to_version: Kafka 2.1.1 runs on Java 11, which the docker runtime's nodes do not have"),
    ({"to_version": "3.9.1"}, {"runtime": "ssh", "inventory": "hosts.yaml"},
     r"nemesis\[0\].fault: rolling-upgrade on the ssh runtime is not built: its node hosts get one version"),
])
def test_an_upgrade_the_cluster_cannot_do_is_refused_in_one_line(fault: dict[str, Any], cluster: dict[str, Any],
                                                                 message: str) -> None:
    with pytest.raises(SpecError, match=message):
        parse_spec(spec_with(fault, **cluster))


def test_the_new_versions_jars_are_fetched_before_anything_starts() -> None:
    spec = parse_spec(spec_with({"to_version": "3.9.1"}))
    assert spec.cluster.upgrade_versions == ("3.9.1",)
    assert parse_spec(spec_with({"to_version": "3.9.1"}, runtime="docker")).cluster.upgrade_versions == ("3.9.1",)
    assert spec.cluster.to_json()["upgrade_versions"] == ("3.9.1",)
    assert "upgrade_versions" not in ClusterSettings().to_json()


def test_a_version_that_cannot_be_had_stops_the_run_before_anything_starts(tmp_path: Path) -> None:
    fetched: list[str] = []

    def ensure_kafka(version: str) -> None:
        fetched.append(version)
        if version == "3.9.1":
            raise DistributionError("Kafka 3.9.1 is neither cached nor fetchable from Maven Central: artifact not found")

    def preflight(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("nothing may be checked on the runtime, let alone made, after a failed fetch")

    machine = Machine(ensure_kafka=ensure_kafka, preflight=preflight, active_file=tmp_path / "active.json")
    settings = parse_spec(spec_with({"to_version": "3.9.1"})).cluster
    with pytest.raises(DistributionError, match="Kafka 3.9.1 is neither cached"):
        check_can_provision(settings, machine)
    assert fetched == ["2.7.2", "3.9.1"]
