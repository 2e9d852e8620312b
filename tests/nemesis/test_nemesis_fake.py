"""The nemesis on a fake cluster: every partition shape's rules on every host, process faults, heal-all."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from signal import SIGKILL, SIGSTOP, SIGTERM
from typing import Any

import pytest

import nemesis.faults
import nemesis.nemesis
from nemesis import shapes
from nemesis.journal import read_journal
from nemesis.nemesis import Nemesis
from testbed.addressing import make_plan
from testbed.errors import FaultError
from testbed.kafka.cluster import KafkaCluster
from testbed.kafka.config import ClusterSettings
from testbed.runfolder import RunFolder
from tests.fakes import FakeProcess, FakeRuntime

PLAN = make_plan()  # FakeRuntime's default plan


@pytest.fixture
def unregistered(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """No ZooKeeper to ask: a broker counts as de-registered at once; the nodes asked about, in order."""
    asked: list[str] = []
    monkeypatch.setattr(nemesis.faults, "_wait_unregistered", lambda cluster, node: asked.append(node.name))
    return asked


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
          unregistered: list[str]) -> Iterator[tuple[Nemesis, KafkaCluster, FakeRuntime]]:
    def no_live_state(cluster: KafkaCluster) -> Any:
        raise AssertionError("explicit targets must not need the cluster's live state")

    monkeypatch.setattr(nemesis.nemesis, "observe", no_live_state)
    runtime = FakeRuntime()
    runtime.create()
    cluster = KafkaCluster(runtime, ClusterSettings(), RunFolder(tmp_path).make())
    cluster.write_configs()
    cluster.power_on_all()
    nem = Nemesis(cluster, runtime, cluster.folder.nemesis_journal, seed=1)
    yield nem, cluster, runtime
    nem.close()


def journal(cluster: KafkaCluster) -> list[dict[str, Any]]:
    return read_journal(cluster.folder.nemesis_journal)


def proc(runtime: FakeRuntime, node: str, role: str) -> FakeProcess:
    found = runtime.process(f"{node}/{role}")
    assert found is not None
    return found


# (fault spec, the grudge it must install). Scopes come from the spec.
PARTITIONS: list[tuple[dict[str, Any], shapes.Grudge]] = [
    ({"fault": "isolate-az", "target": "az2"}, shapes.isolate_az(PLAN, "az2")),
    ({"fault": "isolate-az", "target": "az1-node", "scope": "kafka"}, shapes.isolate_az(PLAN, "az1")),
    ({"fault": "isolate-az", "target": "broker-2", "scope": "zookeeper"}, shapes.isolate_az(PLAN, "az3")),
    ({"fault": "cut-link", "between": ["az1", "az3"]}, shapes.cut_link(PLAN, "az1", "az3")),
    ({"fault": "cut-link", "between": ["az3", "az1"], "one_way": True},
     shapes.cut_link(PLAN, "az3", "az1", one_way=True)),
    ({"fault": "cut-link", "between": ["az2", "az3"], "ends": "node", "scope": "kafka"},
     shapes.cut_hosts(["az2-node"], ["az3-node"])),
    ({"fault": "cut-link", "between": ["az2", "az1"], "ends": "node", "one_way": True},
     shapes.cut_hosts(["az2-node"], ["az1-node"], one_way=True)),
    ({"fault": "split", "minority": ["az3"]}, shapes.split_minority(PLAN, ["az3"])),
    ({"fault": "bridge", "middle": "az1"}, shapes.bridge(PLAN, "az1")),
    ({"fault": "bridge"}, shapes.bridge(PLAN, "az2")),
    ({"fault": "majorities-ring"}, shapes.majorities_ring(PLAN)),
    ({"fault": "majorities-ring", "scope": "zookeeper"}, shapes.majorities_ring(PLAN)),
]


@pytest.mark.parametrize(("spec", "grudge"), PARTITIONS, ids=[str(sorted(s.items())) for s, _ in PARTITIONS])
def test_each_partition_shape_puts_its_rules_on_every_host_and_stop_empties_them(
        world: tuple[Nemesis, KafkaCluster, FakeRuntime], spec: dict[str, Any], grudge: shapes.Grudge) -> None:
    nem, cluster, runtime = world
    scope = spec.get("scope", "all")
    expected = shapes.firewall_rules(runtime.plan, [(grudge, scope)])
    assert any(expected.values()), "a shape that cuts nothing tests nothing"
    active = nem.start(spec, name="cut")
    assert runtime.rules == expected
    assert active.targets["scope"] == scope
    nem.stop("cut")
    assert set(runtime.rules) == {h.name for h in runtime.plan.hosts}
    assert all(rules == "" for rules in runtime.rules.values())
    start, stop = journal(cluster)
    assert (start["type"], start["fault"], stop["type"], stop["fault"]) == ("start", spec["fault"], "stop", spec["fault"])
    assert start["targets"] == stop["targets"] == active.targets
    assert start["detail"]["cut"] == [list(p) for p in shapes.cut_pairs(grudge)]
    assert nem.active_names() == []


def test_overlapping_cuts_install_their_union_and_stopping_one_leaves_the_other(
        world: tuple[Nemesis, KafkaCluster, FakeRuntime]) -> None:
    nem, _, runtime = world
    iso = shapes.isolate_az(runtime.plan, "az1")
    link = shapes.cut_link(runtime.plan, "az2", "az3", one_way=True)
    nem.start({"fault": "isolate-az", "target": "az1"}, name="iso")
    nem.start({"fault": "cut-link", "between": ["az2", "az3"], "one_way": True, "scope": "kafka"}, name="link")
    assert runtime.rules == shapes.firewall_rules(runtime.plan, [(iso, "all"), (link, "kafka")])
    nem.stop("iso")
    assert runtime.rules == shapes.firewall_rules(runtime.plan, [(link, "kafka")])


def test_heal_all_clears_every_hosts_firewall_and_journals_what_it_stopped(
        world: tuple[Nemesis, KafkaCluster, FakeRuntime]) -> None:
    nem, cluster, runtime = world
    nem.start({"fault": "split", "minority": ["az1"]}, name="split")
    report = nem.heal_all()
    assert report.stopped == ["split"]
    assert runtime.cleared_last() == sorted(h.name for h in runtime.plan.hosts)
    assert all(rules == "" for rules in runtime.rules.values())
    rows = journal(cluster)
    assert [(r["type"], r["fault"]) for r in rows] == [("start", "split"), ("stop", "split"), ("info", "heal-all")]
    assert rows[1]["detail"]["by"] == "heal-all" and rows[2]["detail"]["stopped"] == ["split"]


def test_a_failed_install_is_a_fault_error_journaled_as_info_and_nothing_stays_active(
        world: tuple[Nemesis, KafkaCluster, FakeRuntime]) -> None:
    nem, cluster, runtime = world
    runtime.break_once("set_firewall", "az2-client")
    with pytest.raises(FaultError, match="az2-client"):
        nem.start({"fault": "isolate-az", "target": "az2"}, name="iso")
    assert nem.active_names() == []
    (row,) = journal(cluster)
    assert row["type"] == "info" and "az2-client" in row["detail"]["error"]
    nem.heal_all()
    assert all(rules == "" for rules in runtime.rules.values())


# -- process faults -------------------------------------------------------------------
@pytest.mark.parametrize(("spec", "hit", "signum"), [
    ({"fault": "kill", "target": "az2"}, ["az2-node/broker"], SIGKILL),
    ({"fault": "kill", "target": ["az1-node", "az3"], "role": "zookeeper"},
     ["az1-node/zookeeper", "az3-node/zookeeper"], SIGKILL),
    ({"fault": "power-off", "target": "broker-0"}, ["az1-node/zookeeper", "az1-node/broker"], SIGKILL),
    ({"fault": "graceful-stop", "target": "az3-node"}, ["az3-node/broker"], SIGTERM),
], ids=["kill", "kill-zookeepers", "power-off", "graceful-stop"])
def test_a_process_fault_ends_its_targets_and_its_stop_starts_them_again(
        world: tuple[Nemesis, KafkaCluster, FakeRuntime], unregistered: list[str],
        spec: dict[str, Any], hit: list[str], signum: int) -> None:
    nem, cluster, runtime = world
    before = {name: runtime.processes[name] for name in runtime.process_names()}
    active = nem.start(spec, name="f")
    for name in hit:
        assert [s for s, _ in before[name].signals] == [signum] and not before[name].alive()
    untouched = [p for n, p in before.items() if n not in hit]
    assert all(p.alive() and not p.signals for p in untouched)
    assert active.targets["processes"] == hit
    nem.stop("f")
    for name in hit:
        again = runtime.processes[name]
        assert again is not before[name] and again.alive()
    brokers = sorted(n.split("/")[0] for n in hit if n.endswith("/broker"))
    assert sorted(unregistered) == brokers, "a broker starts again only once ZooKeeper has let it go"
    start, stop = journal(cluster)
    assert (start["type"], stop["type"]) == ("start", "stop")
    assert start["targets"]["processes"] == stop["targets"]["processes"] == hit
    assert start["detail"]["pids"] == {name: before[name].pid for name in hit}
    assert len(runtime.alive()) == 6, "the whole cluster runs again"


def test_pause_freezes_the_process_and_stop_resumes_the_same_one(
        world: tuple[Nemesis, KafkaCluster, FakeRuntime]) -> None:
    nem, cluster, runtime = world
    broker, zk = proc(runtime, "az1-node", "broker"), proc(runtime, "az1-node", "zookeeper")
    nem.start({"fault": "pause", "target": "az1", "role": "both"}, name="p")
    assert broker.paused() and zk.paused() and broker.alive()
    assert [s for s, _ in broker.signals] == [SIGSTOP]
    nem.stop("p")
    assert not broker.paused() and not zk.paused()
    assert runtime.process("az1-node/broker") is broker, "a resumed process is the same process"
    assert [r["type"] for r in journal(cluster)] == ["start", "stop"]
    assert journal(cluster)[0]["targets"]["processes"] == ["az1-node/zookeeper", "az1-node/broker"]


def test_a_fault_on_a_process_that_is_not_running_is_refused_before_touching_anything(
        world: tuple[Nemesis, KafkaCluster, FakeRuntime]) -> None:
    nem, cluster, runtime = world
    proc(runtime, "az2-node", "broker").die(1)
    zk = proc(runtime, "az2-node", "zookeeper")
    with pytest.raises(FaultError, match="az2-node/broker: it is not running"):
        nem.start({"fault": "power-off", "target": "az2"})
    assert zk.alive() and not zk.signals
    assert [r["type"] for r in journal(cluster)] == ["info"]


def test_heal_all_resumes_paused_restarts_the_dead_and_journals_it(
        world: tuple[Nemesis, KafkaCluster, FakeRuntime], unregistered: list[str]) -> None:
    nem, cluster, runtime = world
    nem.start({"fault": "pause", "target": "az2"}, name="pause")
    nem.start({"fault": "kill", "target": "az1", "role": "zookeeper"}, name="kill")
    proc(runtime, "az3-node", "broker").die(1)  # on its own: no fault knows of it
    cluster.pause(runtime.plan.node_of_az("az3"), "zookeeper")  # paused behind the nemesis's back
    paused_broker = proc(runtime, "az2-node", "broker")
    report = nem.heal_all()
    assert sorted(report.stopped) == ["kill", "pause"]
    assert report.resumed == ["az3-node/zookeeper"]
    assert report.restarted == ["az3-node/broker"]
    assert not paused_broker.paused() and runtime.process("az2-node/broker") is paused_broker
    assert len(runtime.alive()) == 6 and not any(p.paused() for p in runtime.spawned)
    assert unregistered == ["az3-node"]
    rows = journal(cluster)
    info = rows[-1]
    assert (info["type"], info["fault"]) == ("info", "heal-all")
    assert info["targets"] == {"resumed": ["az3-node/zookeeper"], "restarted": ["az3-node/broker"]}
    assert sorted(info["detail"]["stopped"]) == ["kill", "pause"] and info["detail"]["errors"] == []
    assert nem.heal_all().changed is False, "a second heal-all finds nothing to do"
    assert len(journal(cluster)) == len(rows), "and journals nothing"


def test_heal_all_reports_a_host_it_could_not_clear_after_trying_everything(
        world: tuple[Nemesis, KafkaCluster, FakeRuntime]) -> None:
    nem, cluster, runtime = world
    nem.start({"fault": "kill", "target": "az2"}, name="kill")
    runtime.break_once("clear_firewall", "az1-client")
    with pytest.raises(FaultError, match="az1-client"):
        nem.heal_all()
    assert proc(runtime, "az2-node", "broker").alive(), "the processes were restored all the same"
    assert set(runtime.cleared_last()) == {h.name for h in runtime.plan.hosts} - {"az1-client"}
    info = journal(cluster)[-1]
    assert info["fault"] == "heal-all" and "az1-client" in info["detail"]["errors"][0]


@pytest.fixture
def kraft_world(tmp_path: Path, unregistered: list[str]) -> Iterator[tuple[Nemesis, KafkaCluster, FakeRuntime]]:
    runtime = FakeRuntime()
    runtime.create()
    cluster = KafkaCluster(runtime, ClusterSettings(kafka_version="4.1.1", metadata="kraft"),
                           RunFolder(tmp_path).make())
    cluster.write_configs()  # formats every process's storage: one StorageTool per process, on its host
    cluster.power_on_all()
    nem = Nemesis(cluster, runtime, cluster.folder.nemesis_journal, seed=1)
    yield nem, cluster, runtime
    nem.close()


def test_on_kraft_role_zookeeper_hits_the_controller_and_a_broker_starts_again_at_once(
        kraft_world: tuple[Nemesis, KafkaCluster, FakeRuntime], unregistered: list[str]) -> None:
    nem, cluster, runtime = kraft_world
    formats = [argv for _, argv in runtime.commands if "kafka.tools.StorageTool" in argv]
    assert len(formats) == 6 and all(argv[argv.index("-t") + 1] == formats[0][formats[0].index("-t") + 1]
                                     for argv in formats), "every process formatted with one cluster id"
    synced = sorted(argv[1] for _, argv in runtime.commands if argv[:1] == ["find"] and "sync" in argv)
    assert synced == sorted(str(cluster.node_folder(n).data(r)) for n in cluster.nodes
                            for r in ("controller", "broker")), "and what it wrote fsynced"
    assert sorted(runtime.process_names()) == sorted(f"az{i}-node/{r}" for i in (1, 2, 3)
                                                    for r in ("controller", "broker"))
    controller = proc(runtime, "az1-node", "controller")
    assert controller.argv[-1].endswith("controller.properties") and "kafka.Kafka" in controller.argv
    active = nem.start({"fault": "kill", "target": "az1", "role": "zookeeper"}, name="k")
    assert active.targets["processes"] == ["az1-node/controller"] and not controller.alive()
    nem.start({"fault": "power-off", "target": "az2"}, name="p")
    assert not proc(runtime, "az2-node", "broker").alive() and not proc(runtime, "az2-node", "controller").alive()
    nem.stop("k")
    nem.stop("p")
    assert len(runtime.alive()) == 6
    assert unregistered == ["az2-node"]  # asked, and a KRaft cluster answers at once (`registered` is False)
    assert cluster.registered(runtime.plan.node_of_az("az2")) is False
