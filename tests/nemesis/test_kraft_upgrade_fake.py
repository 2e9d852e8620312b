"""`rolling-upgrade` on KRaft and `rolling-downgrade` on a fake cluster: the controllers' roll then the brokers',
metadata.version raised by Kafka's feature tool as its own journaled step (lowered first on a downgrade), the
ZooKeeper-mode downgrade keeping the pins in force; the spec's refusals of what Kafka's notes forbid, and the
metadata.version levels and safe downgrades as the 3.9.1 and 4.1.1 jars have them.

The real cluster's roll (3.7.2 -> 3.9.1 KRaft, and back) is the rolling-upgrade scenario's `kraft` configurations.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import nemesis.faults
import nemesis.nemesis
import nemesis.operations
import nemesis.upgrade
from harness.spec import parse_spec
from nemesis.fault_words import upgraded
from nemesis.journal import read_journal
from nemesis.nemesis import Nemesis
from nemesis.targets import ClusterFacts
from nemesis.upgrade import versions_over_time
from report.logexcerpts import broker_id
from testbed.addressing import Host
from testbed.dist.metadata_versions import LEVELS, Level, downgrade_problem, named, release_level
from testbed.errors import FaultError, SpecError
from testbed.kafka import config, kraft, snapshots
from testbed.kafka.cluster import KafkaCluster
from testbed.kafka.config import ClusterSettings
from testbed.kafka.features import FEATURE_TOOL
from testbed.kafka.quorum import QuorumView
from testbed.runfolder import RunFolder
from tests.fakes import FakeRuntime

ROOT = Path(__file__).resolve().parents[2]


class FeatureTool:
    """The fake cluster's finalized metadata.version, as Kafka's feature tool reads and sets it (a refused
    downgrade answers in the controller's words)."""

    def __init__(self, level: int) -> None:
        self.level, self.calls = level, []  # type: list[list[str]]
        self.deaf = False  # answers a change with success and changes nothing
        self.snapshot_ends: list[int] = []  # each `ls` of a metadata log: its newest snapshot's end (the last repeats)
        self.listed: list[str] = []  # the metadata logs listed, in order

    def __call__(self, host: Host, argv: list[str], _: str | None) -> subprocess.CompletedProcess[str] | None:
        if argv[0] == "ls" and argv[1].endswith("__cluster_metadata-0"):
            self.listed.append(argv[1])
            end = self.snapshot_ends.pop(0) if len(self.snapshot_ends) > 1 else (self.snapshot_ends or [None])[0]
            names = ["00000000000000000000.log", "leader-epoch-checkpoint"]
            names += [] if end is None else [f"{end - 40:020d}-0000000001.checkpoint", f"{end:020d}-0000000002.checkpoint"]
            return subprocess.CompletedProcess(argv, 0, "\n".join(names) + "\n", "")
        if FEATURE_TOOL not in argv:
            return None
        args = argv[argv.index(FEATURE_TOOL) + 3:]  # past --bootstrap-server X
        self.calls.append(args)
        if args[0] in ("upgrade", "downgrade"):
            want = int(args[-1].split("=")[1])
            problem = downgrade_problem(_level(self.level), _level(want)) if args[0] == "downgrade" else None
            if problem is not None:
                return subprocess.CompletedProcess(argv, 1, "", "Could not downgrade metadata.version to "
                                                   f"{want}. Invalid metadata.version {want}. Refusing to perform the "
                                                   "requested downgrade because it might delete metadata information.")
            self.level = self.level if self.deaf else want
            return subprocess.CompletedProcess(argv, 0, f"metadata.version was {args[0]}d to {want}.\n", "")
        name = _level(self.level).name
        return subprocess.CompletedProcess(argv, 0, f"Feature: metadata.version\tSupportedMinVersion: 3.0-IV1\t"
                                           f"SupportedMaxVersion: 3.9-IV0\tFinalizedVersionLevel: {name}\tEpoch: 9\n", "")


def _level(number: int) -> Level:
    return next(lv for lv in LEVELS if lv.level == number)


def make_world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings: ClusterSettings,
               tool: FeatureTool | None = None) -> tuple[Nemesis, KafkaCluster, FakeRuntime]:
    monkeypatch.setattr(nemesis.faults, "_wait_unregistered", lambda cluster, node: None)
    monkeypatch.setattr(nemesis.nemesis, "observe", lambda cluster: ClusterFacts(controller=1))
    monkeypatch.setattr(nemesis.operations, "controller_caught_up", lambda cluster, node: 1)
    runtime = FakeRuntime(execute=tool)
    runtime.create()
    cluster = KafkaCluster(runtime, settings, RunFolder(tmp_path).make())
    cluster.write_configs()
    cluster.power_on_all()
    monkeypatch.setattr(cluster, "views", lambda: {})
    monkeypatch.setattr(cluster, "settled", lambda: {})
    return Nemesis(cluster, runtime, cluster.folder.nemesis_journal, seed=1), cluster, runtime


@pytest.fixture
def kraft_world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Nemesis, KafkaCluster,
                                                                                   FakeRuntime, FeatureTool]]:
    tool = FeatureTool(release_level("3.7.2").level)
    nem, cluster, runtime = make_world(tmp_path, monkeypatch, ClusterSettings(kafka_version="3.7.2",
                                                                              metadata="kraft"), tool)
    yield nem, cluster, runtime, tool
    nem.close()


def rows(cluster: KafkaCluster) -> list[dict[str, Any]]:
    return [r for r in read_journal(cluster.folder.nemesis_journal)
            if r["fault"] in ("rolling-upgrade", "rolling-downgrade")]


def test_kraft_rolls_the_controllers_then_the_brokers_then_raises_metadata_version(
        kraft_world: tuple[Nemesis, KafkaCluster, FakeRuntime, FeatureTool]) -> None:
    nem, cluster, runtime, tool = kraft_world
    active = nem.start({"fault": "rolling-upgrade", "to_version": "3.9.1"}, "up")
    assert active.targets["metadata_version"] == "3.9-IV0" and "pinned" not in active.targets
    nem.stop("up")
    journal = rows(cluster)
    steps = [r for r in journal if r["type"] == "info" and "version" in r["targets"]]
    assert [(s["targets"]["roll"], s["targets"]["role"], s["detail"]["broker"]) for s in steps] == [
        (1, "controller", 0), (1, "controller", 2), (1, "controller", 1),
        (2, "broker", 0), (2, "broker", 2), (2, "broker", 1)]
    assert all(s["targets"]["inter_broker_protocol"] is None for s in steps)  # KRaft has no protocol to pin
    (bump,) = [r for r in journal if r["type"] == "info" and "level" in r["targets"]]
    assert bump["targets"] == {"metadata_version": "3.9-IV0", "level": 21, "down": False, "nodes": ["az2-node"]}
    assert (bump["detail"]["before"], bump["detail"]["finalized"]) == ("3.7-IV4", "3.9-IV0")
    assert bump["time_ns"] > max(s["detail"]["started_ns"] for s in steps)  # a separate step, after every roll
    assert ["upgrade", "--feature", "metadata.version=21"] in tool.calls
    for node in cluster.nodes:
        for role in ("controller", "broker"):
            process = runtime.process(f"{node.name}/{role}")
            assert process is not None and "/fake/kafka-3.9.1/libs/*" in process.argv
        assert "inter.broker.protocol.version" not in cluster.node_folder(node).config("broker").read_text()
    over_time = versions_over_time(read_journal(cluster.folder.nemesis_journal), "3.7.2", 5)
    assert set(over_time) == {f"{n.name}{r}" for n in cluster.nodes for r in ("", "/controller")}
    assert all([v["version"] for v in lane] == ["3.7.2", "3.9.1"] for lane in over_time.values())
    assert upgraded(bump["targets"]) == "rolling upgrade: metadata.version raised to 3.9-IV0 (feature level 21)"
    assert "the controllers then the brokers" in upgraded(active.targets)


def test_without_bump_metadata_version_stays_and_a_downgrade_rolls_back_without_lowering_it(
        kraft_world: tuple[Nemesis, KafkaCluster, FakeRuntime, FeatureTool]) -> None:
    nem, cluster, runtime, tool = kraft_world
    nem.start({"fault": "rolling-upgrade", "to_version": "3.9.1", "bump": False}, "up")
    nem.stop("up")
    assert not [c for c in tool.calls if c[0] != "describe"] and tool.level == 19
    nem.start({"fault": "rolling-downgrade", "to_version": "3.7.2"}, "down")
    nem.stop("down")
    down = [r for r in rows(cluster) if r["fault"] == "rolling-downgrade" and r["type"] == "info"]
    assert down[0]["targets"]["level"] == 19 and down[0]["detail"]["before"] == "3.7-IV4"  # checked, not lowered
    assert tool.listed == [] and "snapshots" not in down[0]["detail"]  # nothing lowered: no snapshot to wait for
    assert [(s["targets"]["role"], s["targets"]["version"]) for s in down[1:]] == \
        [("broker", "3.7.2")] * 3 + [("controller", "3.7.2")] * 3  # the upgrade's order reversed
    assert all("/fake/kafka-3.7.2/libs/*" in runtime.process(f"{n.name}/{r}").argv  # type: ignore[union-attr]
               for n in cluster.nodes for r in ("controller", "broker"))


def test_a_kraft_downgrade_lowers_metadata_version_then_waits_for_every_snapshot_past_it(
        kraft_world: tuple[Nemesis, KafkaCluster, FakeRuntime, FeatureTool], monkeypatch: pytest.MonkeyPatch) -> None:
    nem, cluster, runtime, tool = kraft_world
    monkeypatch.setattr(nemesis.upgrade, "high_watermark", lambda cluster: 120)
    monkeypatch.setattr(snapshots, "POLL_S", 0.0)
    tool.snapshot_ends = [80] * 6 + [80, 130, 130, 130, 130, 130] + [130]  # one log behind on the second look
    nem.start({"fault": "rolling-upgrade", "to_version": "3.9.1"}, "up")
    nem.stop("up")
    assert tool.listed == []  # an upgrade waits for no snapshot
    nem.start({"fault": "rolling-downgrade", "to_version": "3.7.2"}, "down")
    nem.stop("down")
    assert ["downgrade", "--feature", "metadata.version=19"] in tool.calls and tool.level == 19
    down = [r for r in rows(cluster) if r["fault"] == "rolling-downgrade" and r["type"] == "info"]
    assert (down[0]["detail"]["before"], down[0]["detail"]["finalized"]) == ("3.9-IV0", "3.7-IV4")
    assert down[0]["time_ns"] < down[1]["detail"]["stop_ns"]  # lowered before the first broker went down
    logs = {f"{n.name}/{role}" for n in cluster.nodes for role in ("broker", "controller")}
    assert down[0]["detail"]["snapshot_past"] == 120 and down[0]["detail"]["snapshots"] == dict.fromkeys(logs, 130)
    assert len(tool.listed) == 18  # three looks at the six logs: the second found one still at 80
    first = kraft.kcfg.log_dir_names(cluster.settings)[0]
    assert runtime.host_path(cluster.nodes[0], cluster.node_folder(cluster.nodes[0]).data("broker") / first
                             / "__cluster_metadata-0") in tool.listed


def test_a_snapshot_that_never_comes_fails_the_downgrade_before_anything_rolls(
        kraft_world: tuple[Nemesis, KafkaCluster, FakeRuntime, FeatureTool], monkeypatch: pytest.MonkeyPatch) -> None:
    nem, cluster, runtime, tool = kraft_world
    monkeypatch.setattr(nemesis.upgrade, "high_watermark", lambda cluster: 120)
    monkeypatch.setattr(nemesis.upgrade, "SNAPSHOT_WAIT_S", 0.0)
    nem.start({"fault": "rolling-upgrade", "to_version": "3.9.1"}, "up")
    nem.stop("up")
    tool.snapshot_ends = [130, 130, 130, 130, 80, 130, 130]  # az2-node's controller never snapshots past the lowering
    nem.start({"fault": "rolling-downgrade", "to_version": "3.7.2"}, "down")
    with pytest.raises(FaultError, match=r"no metadata snapshot at or past offset 120 within 0 s on "
                                         r"az2-node/controller 80: a process started on the older release would "
                                         r"replay the raised metadata.version"):
        nem.stop("down")
    assert tool.level == 19  # lowered; then nothing rolled back onto 3.7.2
    assert all("/fake/kafka-3.9.1/libs/*" in runtime.process(f"{n.name}/{r}").argv  # type: ignore[union-attr]
               for n in cluster.nodes for r in ("controller", "broker"))


def test_a_downgrade_kafka_refuses_fails_the_operation_with_its_words_and_rolls_nothing(
        kraft_world: tuple[Nemesis, KafkaCluster, FakeRuntime, FeatureTool]) -> None:
    nem, cluster, runtime, tool = kraft_world
    tool.level = 23  # 4.0-IV1: changed the metadata's form
    nem.start({"fault": "rolling-downgrade", "to_version": "3.7.2"}, "down")
    with pytest.raises(FaultError, match="Refusing to perform the requested downgrade"):
        nem.stop("down")
    assert all("/fake/kafka-3.7.2/libs/*" in runtime.process(f"{n.name}/broker").argv  # type: ignore[union-attr]
               for n in cluster.nodes)  # never left: nothing was rolled
    assert not [r for r in rows(cluster) if r["type"] == "info" and "version" in r["targets"]]


def test_a_level_the_cluster_does_not_name_afterwards_fails_the_operation(
        kraft_world: tuple[Nemesis, KafkaCluster, FakeRuntime, FeatureTool]) -> None:
    nem, cluster, _, tool = kraft_world
    tool.deaf = True
    nem.start({"fault": "rolling-upgrade", "to_version": "3.9.1"}, "up")
    with pytest.raises(FaultError, match=r"metadata.version is 3.7-IV4 after asking Kafka for 3.9-IV0 "
                                         r"\(feature level 21\)"):
        nem.stop("up")
    (bump,) = [r for r in rows(cluster) if "level" in r["targets"]]
    assert bump["detail"]["finalized"] == "3.7-IV4"  # journaled before the failure


def test_a_zookeeper_downgrade_keeps_the_pins_in_force(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nem, cluster, runtime = make_world(tmp_path, monkeypatch, ClusterSettings())
    nem.start({"fault": "rolling-upgrade", "to_version": "3.9.1", "bump": False}, "up")
    nem.stop("up")
    active = nem.start({"fault": "rolling-downgrade", "to_version": "2.7.2"}, "down")
    nem.stop("down")
    assert active.targets["pinned"] == {"inter.broker.protocol.version": "2.7"} and active.targets["down"]
    steps = [r for r in rows(cluster) if r["fault"] == "rolling-downgrade" and r["type"] == "info"]
    assert [(s["targets"]["version"], s["targets"]["inter_broker_protocol"]) for s in steps] == [("2.7.2", "2.7")] * 3
    assert cluster.broker_versions == {n.name: "2.7.2" for n in cluster.nodes}
    assert "rolling downgrade of brokers" in upgraded(active.targets) and "kept" in upgraded(active.targets)
    nem.close()


def spec_with(nemesis: list[dict[str, Any]], **cluster: Any) -> dict[str, Any]:
    raw = yaml.safe_load((ROOT / "scenarios" / "rolling-restart.yaml").read_text())
    raw.pop("configurations")
    raw["cluster"].update(cluster)
    raw["nemesis"] = [*({"at": 10 + 100 * i, "name": f"op{i}", **f} for i, f in enumerate(nemesis)),
                      *({"at": 90 + 100 * i, "stop": f"op{i}"} for i in range(len(nemesis)))]
    return raw


KRAFT = {"kafka_version": "3.7.2", "metadata": "kraft"}


@pytest.mark.parametrize(("nemesis", "cluster", "message"), [
    ([{"fault": "rolling-downgrade", "to_version": "2.6.3"}], {},
     r"nemesis\[0\].to_version: a downgrade from 2.7.2 to 2.6.3 with inter.broker.protocol.version 2.7 and "
     r"log.message.format.version 2.7 in force: Kafka allows a downgrade only while the protocol and message format "
     r"are pinned at or below the older version's 2.6 \(a rolling-upgrade with bump: false before it\)"),
    ([{"fault": "rolling-upgrade", "to_version": "3.9.1"}, {"fault": "rolling-downgrade", "to_version": "2.7.2"}],
     {}, r"nemesis\[1\].to_version: a downgrade from 3.9.1 to 2.7.2 with inter.broker.protocol.version 3.9 and "
         r"log.message.format.version 3.0 in force"),
    ([{"fault": "rolling-downgrade", "to_version": "3.9.1"}], {},
     r"nemesis\[0\].to_version: 3.9.1 is not older than the brokers' 2.7.2 then \(use rolling-upgrade"),
    ([{"fault": "rolling-upgrade", "to_version": "4.1.1"}, {"fault": "rolling-downgrade", "to_version": "3.7.2"}],
     KRAFT, r"nemesis\[1\].to_version: a KRaft downgrade from 4.1.1 to 3.7.2 needs metadata.version at 3.7-IV4 or "
            r"below: metadata.version 4.1-IV1 cannot be lowered to 3.7-IV4: 4.0-IV1 changed the metadata's form"),
    # measured: 3.9.1 -> 3.7.2, the controller lowered the level, the first 3.7.2 broker exited at its start
    ([{"fault": "rolling-downgrade", "to_version": "3.7.2"}], {"kafka_version": "3.9.1", "metadata": "kraft"},
     r"nemesis\[0\].to_version: a KRaft downgrade to 3.7.2 on nodes formatted by Kafka 3.9.1: their "
     r"bootstrap.checkpoint holds metadata.version 3.9-IV0, which every start reads and Kafka 3.7.2 does not know "
     r"\(\"No MetadataVersion with metadata version 21\"\)"),
    ([{"fault": "rolling-upgrade", "to_version": "4.1.1"}, {"fault": "rolling-downgrade", "to_version": "3.9.1"}],
     KRAFT, r"nemesis\[1\].to_version: a KRaft downgrade from 4.1.1 to 3.9.1 needs metadata.version at 3.9-IV0"),
    ([{"fault": "rolling-upgrade", "to_version": "3.7.2"}], KRAFT,
     r"nemesis\[0\].to_version: 3.7.2 is the version the brokers run then: a rolling-upgrade needs another"),
    ([{"fault": "rolling-downgrade", "to_version": "3.2.3"}], {"kafka_version": "3.3.2", "metadata": "kraft"},
     r"nemesis\[0\].to_version: Kafka 3.2.3 has no KRaft metadata.version \(KRaft from 3.3\)"),
    ([{"fault": "rolling-upgrade", "to_version": "4.1.1"}], {"kafka_version": "3.7.2", "metadata": "kraft",
                                                             "runtime": "docker"},
     r"nemesis\[0\].fault: rolling-upgrade on KRaft on the docker runtime is not built"),
])
def test_a_version_change_the_notes_forbid_is_refused_in_one_line(nemesis: list[dict[str, Any]],
                                                                  cluster: dict[str, Any], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        parse_spec(spec_with(nemesis, **cluster))


@pytest.mark.parametrize(("nemesis", "cluster"), [
    ([{"fault": "rolling-upgrade", "to_version": "3.9.1", "bump": False},
      {"fault": "rolling-downgrade", "to_version": "3.7.2"}], KRAFT),  # metadata.version never left 3.7-IV4
    # Kafka lowers 3.9-IV0 to 3.7-IV4 (no level between changed the form); the roll then waits for the snapshots
    ([{"fault": "rolling-upgrade", "to_version": "3.9.1"}, {"fault": "rolling-downgrade", "to_version": "3.7.2"}],
     KRAFT),
    ([{"fault": "rolling-upgrade", "to_version": "3.9.1", "bump": False},
      {"fault": "rolling-downgrade", "to_version": "2.7.2"}], {}),
    ([{"fault": "rolling-downgrade", "to_version": "2.6.3"}],
     {"broker_overrides": {"inter.broker.protocol.version": "2.6", "log.message.format.version": "2.6"}}),
])
def test_a_version_change_the_notes_allow_passes(nemesis: list[dict[str, Any]], cluster: dict[str, Any]) -> None:
    spec = parse_spec(spec_with(nemesis, **cluster))
    assert spec.cluster.upgrade_versions == tuple(dict.fromkeys(f["to_version"] for f in nemesis))
    kraft_down = spec.cluster.kraft and any(f["fault"] == "rolling-downgrade" for f in nemesis)
    assert spec.cluster.metadata_snapshot_interval_ms == (5000 if kraft_down else None)


def test_a_kraft_cluster_with_a_downgrade_ahead_snapshots_every_5_s_and_no_other(tmp_path: Path) -> None:
    down = parse_spec(spec_with([{"fault": "rolling-upgrade", "to_version": "3.9.1"},
                                 {"fault": "rolling-downgrade", "to_version": "3.7.2"}], **KRAFT)).cluster
    plan = FakeRuntime().plan
    node = plan.nodes[0]
    for settings, want in ((down, "metadata.log.max.snapshot.interval.ms=5000"), (ClusterSettings(**KRAFT), None)):
        rendered = [config.controller_properties(plan, node, settings, "/data"),
                    "\n".join(f"{k}={v}" for k, v in config.kraft_broker_props(plan, node, settings).items())]
        assert all((want in text) if want else "snapshot" not in text for text in rendered)
    assert down.to_json()["metadata_snapshot_interval_ms"] == 5000
    assert "metadata_snapshot_interval_ms" not in ClusterSettings(**KRAFT).to_json()  # a run without one as it was


def test_the_levels_as_the_jars_have_them() -> None:
    assert [release_level(v).name for v in ("3.3.2", "3.7.2", "3.9.1", "4.0.0", "4.1.1")] == [
        "3.3-IV3", "3.7-IV4", "3.9-IV0", "4.0-IV3", "4.1-IV1"]
    three_nine, three_seven, three_six = named("3.9-IV0"), named("3.7-IV4"), named("3.6-IV2")
    assert three_nine and three_seven and three_six
    assert downgrade_problem(three_nine, three_seven) is None  # 3.9.1's checkIfMetadataChanged: false
    assert "3.7-IV0, 3.7-IV2" in (downgrade_problem(three_nine, three_six) or "")  # and true here


def test_a_restarted_controller_counts_as_caught_up_once_it_answers_and_the_leader_has_it_at_the_watermark(
        kraft_world: tuple[Nemesis, KafkaCluster, FakeRuntime, FeatureTool], monkeypatch: pytest.MonkeyPatch) -> None:
    _, cluster, _, _ = kraft_world
    node = cluster.nodes[0]  # controller 100
    leader = QuorumView(0, leader_id=101, leader_epoch=3, high_watermark=50, voters={100: 50, 101: 50, 102: 50})
    follower = QuorumView(6)  # NOT_LEADER: it answers, it does not lead
    answers: dict[str, QuorumView | None] = {"az1-node": None, "az2-node": leader, "az3-node": follower}
    monkeypatch.setattr(kraft, "quorum_views", lambda cluster, timeout=2.0: answers)
    assert kraft.controller_caught_up(cluster, node) is None  # the leader's figure is old: the process is not up
    answers["az1-node"] = follower
    leader.voters[100] = 49
    assert kraft.controller_caught_up(cluster, node) is None  # up, behind the watermark
    leader.voters[100] = 50
    assert kraft.controller_caught_up(cluster, node) == 1  # the active controller: broker 1's node


def test_a_kraft_nodes_logs_are_found_by_its_broker_id(
        kraft_world: tuple[Nemesis, KafkaCluster, FakeRuntime, FeatureTool]) -> None:
    """`expect.logs[].nodes: broker-N` on KRaft: its server.properties has node.id, not broker.id (the first KRaft
    upgrade run found "no log file in the run folder for broker-0")."""
    _, cluster, _, _ = kraft_world
    assert [broker_id(cluster.node_folder(n)) for n in cluster.nodes] == [0, 1, 2]


def test_a_kraft_cluster_that_never_rolls_needs_no_metadata_version_row() -> None:
    """4.4.0's levels are not in the table: a 4.4.0 spec without a roll still loads (the table is read only for a
    rolling-upgrade or -downgrade); one with a roll is refused in one line naming its fault."""
    spec = {"name": "k", "duration_s": 20, "cluster": {"kafka_version": "4.4.0"},
            "workloads": {"producers": [{"azs": ["az1"], "rate": 10}]}}
    assert parse_spec(spec).cluster.kafka_version == "4.4.0"
    with pytest.raises(SpecError, match=r"nemesis\[0\].fault: .*Kafka 4.4.0: faultline does not know its "
                                        r"metadata.version levels"):
        parse_spec({**spec, "nemesis": [{"at": 5, "fault": "rolling-upgrade", "to_version": "4.1.1"}]})
