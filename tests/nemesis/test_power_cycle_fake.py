"""A node back from a power cut gets the fault rules and link shaping the nemesis believes are in place, before
any of its processes starts (a restarted container comes back in a fresh network namespace without them)."""

from __future__ import annotations

from pathlib import Path

import pytest

import nemesis.faults
import nemesis.nemesis
from nemesis.nemesis import Nemesis
from testbed.addressing import Host
from testbed.kafka.cluster import KafkaCluster
from testbed.kafka.config import ClusterSettings
from testbed.runfolder import RunFolder
from testbed.runtime.base import LinkShaping, PowerCycled
from tests.nemesis.test_links_fake import ShapingRuntime


class PowerCycledRuntime(ShapingRuntime):
    """A fake whose power-off loses the host's fault rules and shaping, as a docker container's restart does;
    it records, per power-on, what the host held when its first process started."""

    def __init__(self) -> None:
        super().__init__()
        self.powered: list[tuple[str, str]] = []
        self.held_at_start: dict[str, tuple[str, LinkShaping]] = {}

    def power_off(self, host: Host) -> None:
        self.powered.append(("off", host.name))
        self.rules.pop(host.name, None)
        self.shaping.pop(host.name, None)

    def power_on(self, host: Host) -> None:
        self.powered.append(("on", host.name))

    def spawn(self, host, name, argv, log, env=None):
        self.held_at_start.setdefault(name, (self.rules.get(host.name, "<none>"),
                                             self.shaping.get(host.name, LinkShaping())))
        return super().spawn(host, name, argv, log, env)


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Nemesis, KafkaCluster, PowerCycledRuntime]:
    monkeypatch.setattr(nemesis.nemesis, "observe", lambda cluster: pytest.fail("explicit targets only"))
    monkeypatch.setattr(nemesis.faults, "_wait_unregistered", lambda cluster, node: None)
    runtime = PowerCycledRuntime()
    assert isinstance(runtime, PowerCycled)
    runtime.create()
    cluster = KafkaCluster(runtime, ClusterSettings(), RunFolder(tmp_path).make())
    cluster.write_configs()
    cluster.power_on_all()
    return Nemesis(cluster, runtime, cluster.folder.nemesis_journal, seed=1), cluster, runtime


def test_a_partitioned_node_that_loses_power_comes_back_still_partitioned(
        world: tuple[Nemesis, KafkaCluster, PowerCycledRuntime]) -> None:
    nem, cluster, runtime = world
    nem.start({"fault": "isolate-az", "target": "az1"}, name="cut")
    held = runtime.rules["az1-node"]
    assert "DROP" in held
    runtime.held_at_start.clear()
    nem.start({"fault": "power-off", "target": "az1"}, name="power")
    assert "az1-node" not in runtime.rules  # the power cut took them
    nem.stop("power")
    assert runtime.rules["az1-node"] == held
    # every process of the node started on a host that already held the partition's rules
    assert runtime.held_at_start["az1-node/zookeeper"][0] == held
    assert runtime.held_at_start["az1-node/broker"][0] == held
    nem.stop("cut")
    assert runtime.rules["az1-node"] == ""


def test_a_slowed_node_gets_its_delay_queues_and_rates_back(
        world: tuple[Nemesis, KafkaCluster, PowerCycledRuntime]) -> None:
    nem, cluster, runtime = world
    nem.start({"fault": "slow-link", "between": ["az1", "az2"], "delay_ms": 50}, name="slow")
    nem.start({"fault": "throttle-link", "between": ["az1", "az3"], "rate_kbit": 800}, name="thin")
    shaping, rules = runtime.shaping["az1-node"], runtime.rules["az1-node"]
    assert not shaping.empty and "NFQUEUE" in rules
    runtime.held_at_start.clear()
    nem.start({"fault": "power-off", "target": "az1"}, name="power")
    nem.stop("power")
    assert runtime.held_at_start["az1-node/zookeeper"] == (rules, shaping)
    assert (runtime.rules["az1-node"], runtime.shaping["az1-node"]) == (rules, shaping)


def test_a_node_without_faults_is_given_nothing_but_its_empty_chains(
        world: tuple[Nemesis, KafkaCluster, PowerCycledRuntime]) -> None:
    nem, cluster, runtime = world
    calls = len(runtime.firewall_calls)
    nem.start({"fault": "power-off", "target": "az2"}, name="power")
    nem.stop("power")
    assert all(rules == "" for _, _, rules in runtime.firewall_calls[calls:])
    assert runtime.shaping.get("az2-node", LinkShaping()).empty
