"""Link faults through the nemesis on a fake runtime: rules and shaping follow the union of active faults."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import nemesis.nemesis
from nemesis import links
from nemesis.journal import read_journal
from nemesis.links import Degradation
from nemesis.nemesis import Nemesis
from testbed.addressing import Host
from testbed.errors import FaultError
from testbed.kafka.cluster import KafkaCluster
from testbed.kafka.config import ClusterSettings
from testbed.runfolder import RunFolder
from testbed.runtime.base import LinkShaper, LinkShaping
from tests.fakes import FakeRuntime


class ShapingRuntime(FakeRuntime):
    """A fake runtime that can also shape links: records each host's shaping."""

    def __init__(self) -> None:
        super().__init__()
        self.shaping: dict[str, LinkShaping] = {}
        self.shape_calls: list[tuple[str, LinkShaping | None]] = []

    def shape_links(self, host: Host, shaping: LinkShaping) -> None:
        self._maybe_fail("shape_links", host.name)
        self.shaping[host.name] = shaping
        self.shape_calls.append((host.name, shaping))

    def clear_links(self, host: Host) -> None:
        self.shaping[host.name] = LinkShaping()
        self.shape_calls.append((host.name, None))


def make_world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runtime: FakeRuntime) -> tuple[Nemesis, KafkaCluster]:
    monkeypatch.setattr(nemesis.nemesis, "observe", lambda cluster: pytest.fail("explicit targets only"))
    runtime.create()
    cluster = KafkaCluster(runtime, ClusterSettings(), RunFolder(tmp_path).make())
    cluster.write_configs()
    cluster.power_on_all()
    return Nemesis(cluster, runtime, cluster.folder.nemesis_journal, seed=1), cluster


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Nemesis, KafkaCluster, ShapingRuntime]]:
    runtime = ShapingRuntime()
    assert isinstance(runtime, LinkShaper)
    nem, cluster = make_world(tmp_path, monkeypatch, runtime)
    yield nem, cluster, runtime
    nem.close()


def shaped(runtime: ShapingRuntime) -> dict[str, LinkShaping]:
    return {h: s for h, s in runtime.shaping.items() if not s.empty}


def test_a_slow_az_delays_every_link_of_the_az_and_stop_undoes_it(
        world: tuple[Nemesis, KafkaCluster, ShapingRuntime]) -> None:
    nem, cluster, runtime = world
    plan = runtime.plan
    active = nem.start({"fault": "slow-link", "target": "az1", "delay_ms": 200}, name="slow")
    pairs = links.degrade_rest(plan, ["az1-client", "az1-node"], Degradation(delay_ms=200), Degradation(delay_ms=200))
    assert runtime.rules == {h: links.link_rules(plan, pairs)[h] for h in runtime.rules}
    assert shaped(runtime) == {h.name: LinkShaping(delays=((1, 200.0, 0.0),)) for h in plan.hosts}
    assert active.targets == {"link": ["az1", "rest"], "delay_ms": 200.0, "brokers": [0]}
    nem.stop("slow")
    assert all(r == "" for r in runtime.rules.values()) and shaped(runtime) == {}
    start, stop = read_journal(cluster.folder.nemesis_journal)
    assert (start["fault"], stop["type"]) == ("slow-link", "stop")
    assert start["detail"]["pairs"] == [list(p) for p in sorted(pairs)]


def test_overlapping_link_faults_and_cuts_install_their_union(
        world: tuple[Nemesis, KafkaCluster, ShapingRuntime]) -> None:
    nem, _, runtime = world
    plan = runtime.plan
    nem.start({"fault": "lossy-link", "between": ["az1", "az2"], "ends": "node", "loss": 0.5}, name="a")
    nem.start({"fault": "lossy-link", "between": ["az2", "az1"], "ends": "node", "loss": [0.5, 0]}, name="b")
    nem.start({"fault": "cut-link", "between": ["az3", "az1"]}, name="cut")
    n1, n2 = plan.host("az1-node").address, plan.host("az2-node").address
    assert f"-s {n2}/32 -m statistic --mode random --probability 0.75 -j DROP" in runtime.rules["az1-node"]
    assert f"-s {n1}/32 -m statistic --mode random --probability 0.5 -j DROP" in runtime.rules["az2-node"]
    assert "-j DROP" in runtime.rules["az3-node"] and shaped(runtime) == {}
    nem.stop("b")
    assert "--probability 0.5 -j DROP" in runtime.rules["az1-node"]
    nem.heal_all()
    assert all(r == "" for r in runtime.rules.values()) and shaped(runtime) == {}
    assert {h for h, s in runtime.shape_calls if s is None} == {h.name for h in plan.hosts}


def test_a_failed_shaping_leaves_no_rule_and_no_active_fault(
        world: tuple[Nemesis, KafkaCluster, ShapingRuntime]) -> None:
    nem, _, runtime = world
    runtime.break_once("shape_links", "az2-node")
    with pytest.raises(FaultError, match="az2-node"):
        nem.start({"fault": "throttle-link", "between": ["az1", "az2"], "ends": "node", "rate_kbit": 800}, name="t")
    assert nem.active_names() == [] and all(r == "" for r in runtime.rules.values())
    assert shaped(runtime) == {}


def test_a_runtime_that_cannot_shape_refuses_delay_but_drops_packets(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runtime = FakeRuntime()
    nem, _ = make_world(tmp_path, monkeypatch, runtime)
    try:
        with pytest.raises(FaultError, match="fake runtime cannot delay or throttle"):
            nem.start({"fault": "slow-link", "target": "az1", "delay_ms": 50})
        assert all(not r for r in runtime.rules.values())
        nem.start({"fault": "lossy-link", "target": "az1-node", "ends": "node", "loss": 0.3}, name="lossy")
        assert "statistic" in runtime.rules["az2-node"]
    finally:
        nem.close()


