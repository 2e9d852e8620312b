"""`zk-to-kraft` on a fake cluster: the controllers formatted with ZooKeeper's cluster id and started in migration
mode, the brokers rolled into migration then into KRaft, the controllers finalized; each phase's rows, the modes
over time run.json takes from them, its words; the spec's refusals.

The real migration (3.9.1 under load, the active controller's "Completed migration of metadata") is the
zk-to-kraft scenario's (scenarios/versions/zk-to-kraft.yaml, docs/scenarios.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import nemesis.faults
import nemesis.nemesis
from harness.spec import parse_spec
from nemesis.fault_words import migrated
from nemesis.journal import read_journal
from nemesis.migrate import modes_over_time
from nemesis.nemesis import Nemesis
from nemesis.targets import ClusterFacts
from testbed.errors import SpecError
from testbed.kafka import kraft, migration
from testbed.kafka.cluster import KafkaCluster
from testbed.kafka.config import ClusterSettings
from testbed.kafka.quorum import QuorumView
from testbed.runfolder import RunFolder
from tests.fakes import FakeRuntime

ROOT = Path(__file__).resolve().parents[2]
CLUSTER_ID = "zkClusterId0123456789a"


def props_of(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line and not line.startswith("#"))


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Nemesis, KafkaCluster, FakeRuntime,
                                                                              list[dict[str, str]]]]:
    """A fake 3.9.1 ZooKeeper cluster whose ISR is always full and whose quorum always has controller 101 (broker
    1's node) active; each controller start's config recorded; the active controller's server.log says the
    metadata was migrated once the last broker started in migration mode."""
    monkeypatch.setattr(nemesis.faults, "_wait_unregistered", lambda cluster, node: None)
    monkeypatch.setattr(nemesis.nemesis, "observe", lambda cluster: ClusterFacts(controller=1))
    monkeypatch.setattr(migration, "zookeeper_cluster_id", lambda cluster: CLUSTER_ID)
    monkeypatch.setattr(kraft, "wait_quorum", lambda cluster, timeout, interval: 1)
    monkeypatch.setattr(kraft, "quorum_ready", lambda cluster: 1)
    # every controller answers DescribeQuorum (a follower with an error), once its process runs
    monkeypatch.setattr(kraft, "quorum_views", lambda cluster, timeout=2.0: {
        n.name: (QuorumView(6) if cluster.process(n, "controller") is not None else None) for n in cluster.nodes})
    monkeypatch.setattr(kraft, "active_controller", lambda settings, views: 1)
    starts: list[dict[str, str]] = []
    runtime = FakeRuntime(behaviours={"": lambda argv, log: None})
    runtime.create()
    cluster = KafkaCluster(runtime, ClusterSettings(kafka_version="3.9.1"), RunFolder(tmp_path).make())

    def on_spawn(argv: list[str], log: Path) -> None:
        name = Path(argv[-1]).stem
        props = props_of(Path(argv[-1]))
        starts.append({"config": name, **props})
        migrating = [n for n in cluster.nodes if props_of(cluster.node_folder(n).config("broker"))
                     .get("zookeeper.metadata.migration.enable") == "true"]
        if name == "server" and len(migrating) == len(cluster.nodes):
            logs = cluster.node_folder(cluster.node(1)).logs("controller")
            (logs / "server.log").write_text(f"[2026-11-28] INFO {migration.MIGRATED_LINE}. 42 records\n")
    runtime.behaviours = {"": on_spawn}
    cluster.write_configs()
    cluster.power_on_all()
    starts.clear()
    monkeypatch.setattr(cluster, "settled", lambda: {})
    monkeypatch.setattr(cluster, "views", lambda: {})
    nem = Nemesis(cluster, runtime, cluster.folder.nemesis_journal, seed=1)
    yield nem, cluster, runtime, starts
    nem.close()


def rows(cluster: KafkaCluster) -> list[dict[str, Any]]:
    return [r for r in read_journal(cluster.folder.nemesis_journal) if r["fault"] == "zk-to-kraft"]


def test_the_phases_in_turn_controllers_migrating_migrated_kraft_finalized(world: Any) -> None:
    nem, cluster, runtime, starts = world
    nem.start({"fault": "zk-to-kraft", "wait_s": 5}, "migrate")
    nem.stop("migrate")
    info = [r for r in rows(cluster) if r["type"] == "info"]
    assert [r["targets"]["phase"] for r in info] == [
        "controllers", "migrating", "migrating", "migrating", "migrated", "kraft", "kraft", "kraft",
        "finalized", "finalized", "finalized"]
    assert not [r for r in info if "aborted" in r["detail"]]
    assert info[4]["detail"]["controller_node"] == cluster.node(1).name
    # the controllers: formatted with ZooKeeper's id (their storage only), started with the migration keys
    formats = [argv for _, argv in runtime.commands if "format" in argv]
    assert len(formats) == 3 and all(argv[argv.index("-t") + 1] == CLUSTER_ID for argv in formats)
    assert all(argv[argv.index("-c") + 1].endswith("controller.properties") for argv in formats)
    first = [s for s in starts if s["config"] == "controller"][:3]
    assert all(s["zookeeper.metadata.migration.enable"] == "true" and s["process.roles"] == "controller"
               and s["inter.broker.listener.name"] == "PLAINTEXT" for s in first)
    # the first roll: ZooKeeper-mode brokers with the migration keys; the second: KRaft brokers
    brokers = [s for s in starts if s["config"] == "server"]
    assert [("broker.id" in s, s.get("zookeeper.metadata.migration.enable"), s.get("process.roles"))
            for s in brokers] == [(True, "true", None)] * 3 + [(False, None, "broker")] * 3
    assert all(s["controller.quorum.voters"] == kraft_voters(cluster) for s in brokers)
    assert all(s["inter.broker.protocol.version"] == "3.9" for s in brokers[:3])
    assert all("zookeeper.connect" not in s for s in brokers[3:])
    # the finalized controllers: restarted without the migration keys, the active one (broker 1's node) last
    last = [s for s in starts if s["config"] == "controller"][3:]
    assert [s["node.id"] for s in last] == ["100", "102", "101"]
    assert all("zookeeper.metadata.migration.enable" not in s and "zookeeper.connect" not in s for s in last)
    assert cluster.roles == ("zookeeper", "controller", "broker")
    assert cluster.migration_phase == "finalized" and migration.kraft_leads(cluster)  # the views ask the quorum


def test_before_a_migration_the_views_never_ask_the_quorum(world: Any) -> None:
    _, cluster, _, _ = world
    assert cluster.migration_phase is None and not migration.kraft_leads(cluster)  # no ZooKeeper asked either


def kraft_voters(cluster: KafkaCluster) -> str:
    return ",".join(f"{n.broker_id + 100}@{n.address}:9093" for n in cluster.nodes)


def test_run_json_reads_each_nodes_modes_and_the_words_name_them(world: Any) -> None:
    nem, cluster, _, _ = world
    nem.start({"fault": "zk-to-kraft", "wait_s": 5}, "migrate")
    nem.stop("migrate")
    over_time = modes_over_time(read_journal(cluster.folder.nemesis_journal), 5)
    assert set(over_time) == {n.name for n in cluster.nodes}
    for steps in over_time.values():
        assert [(s["broker"], s["controller"]) for s in steps] == [
            ("zookeeper", None), ("zookeeper", "migrating"), ("migrating", "migrating"), ("kraft", "migrating"),
            ("kraft", "kraft")]
        assert steps[0]["from_ns"] == 5 and [s["from_ns"] for s in steps] == sorted(s["from_ns"] for s in steps)
    assert modes_over_time([], 5) == {}
    start = next(r for r in rows(cluster) if r["type"] == "start")
    assert "migration from ZooKeeper to KRaft of brokers" in migrated(start["targets"])
    assert migrated({"phase": "kraft", "nodes": ["az1-node"], "broker_mode": "kraft"}) == (
        "ZooKeeper to KRaft, phase kraft: az1-node now runs broker kraft")


def test_no_migrated_line_stops_the_operation_there_and_says_so(world: Any) -> None:
    nem, cluster, runtime, starts = world
    runtime.behaviours = {"": lambda argv, log: None}  # the controller never says the metadata was migrated
    nem.start({"fault": "zk-to-kraft", "wait_s": 1}, "migrate")
    nem.stop("migrate")
    info = [r for r in rows(cluster) if r["type"] == "info"]
    assert [r["targets"]["phase"] for r in info] == ["controllers", "migrating", "migrating", "migrating", "migrated"]
    assert "Completed migration of metadata from ZooKeeper to KRaft" in info[-1]["detail"]["aborted"]
    # the brokers stay ZooKeeper-mode brokers with the migration enabled: none was rolled into KRaft
    assert all(props_of(cluster.node_folder(n).config("broker")).get("zookeeper.metadata.migration.enable") == "true"
               for n in cluster.nodes)


def spec_with(*faults: dict[str, Any], **cluster: Any) -> dict[str, Any]:
    raw = yaml.safe_load((ROOT / "scenarios" / "rolling-restart.yaml").read_text())
    raw.pop("configurations")
    raw["cluster"].update({"kafka_version": "3.9.1", **cluster})
    raw["nemesis"] = [{"at": 10 + i, "name": f"m{i}", **f} for i, f in enumerate(faults)]
    return raw


@pytest.mark.parametrize("faults, cluster, refusal", [
    ([{"fault": "zk-to-kraft"}], {"metadata": "kraft"}, r"nemesis\[0\]\.fault: zk-to-kraft: this spec's cluster is "
                                                        r"KRaft already \(Kafka 3\.9\.1, metadata kraft"),
    ([{"fault": "zk-to-kraft"}], {"kafka_version": "4.0.0"}, r"KRaft already \(Kafka 4\.0\.0, metadata kraft; 4\.0 "
                                                             r"on has no ZooKeeper mode\): nothing to migrate"),
    ([{"fault": "zk-to-kraft"}], {"kafka_version": "3.3.2"}, r"zk-to-kraft needs Kafka 3\.4 or later"),
    ([{"fault": "zk-to-kraft"}], {"runtime": "docker"}, r"zk-to-kraft on the docker runtime: not built"),
    ([{"fault": "zk-to-kraft"}], {"kafka_version": "3.6.2", "log_dirs": 2},
     r"with 2 log directories needs Kafka 3\.7 or later"),
    ([{"fault": "zk-to-kraft"}, {"fault": "zk-to-kraft"}], {}, r"nemesis\[1\]\.fault: a second zk-to-kraft"),
    ([{"fault": "rolling-upgrade", "to_version": "3.9.1"}, {"fault": "zk-to-kraft"}], {"kafka_version": "3.8.1"},
     r"zk-to-kraft beside a rolling-upgrade \(nemesis\[0\]\) is not built"),
    ([{"fault": "zk-to-kraft"}, {"fault": "rolling-downgrade", "to_version": "3.8.1"}],
     {"broker_overrides": {"inter.broker.protocol.version": "3.8"}},
     r"^nemesis\[0\]\.fault: zk-to-kraft beside a rolling-downgrade \(nemesis\[1\]\) is not built"),
])
def test_a_migration_the_cluster_cannot_do_is_refused(faults: list[dict[str, Any]], cluster: dict[str, Any],
                                                      refusal: str) -> None:
    with pytest.raises(SpecError, match=refusal):
        parse_spec(spec_with(*faults, **cluster))


def test_a_zookeeper_cluster_of_3_9_1_may_migrate() -> None:
    spec = parse_spec(spec_with({"fault": "zk-to-kraft", "wait_s": 60}))
    assert [f.fault for _, f in spec.nemesis.faults()] == ["zk-to-kraft"]
