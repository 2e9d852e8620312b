"""One real cluster per test module, for the nemesis's cluster tests.

Needs root (namespaces, iptables) and fails rather than skips without it.
The cluster's network is FAULTLINE_TEST_NETWORK (default 198.18.2.0/24), so
these tests can run beside another cluster on the machine.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import nemesis.faults
import nemesis.nemesis
from nemesis.nemesis import Nemesis
from nemesis.targets import ClusterFacts
from testbed.kafka.cluster import KafkaCluster
from testbed.kafka.config import ClusterSettings
from testbed.lifecycle import provision
from testbed.runfolder import RunFolder
from testbed.runtime.netns import NetnsRuntime
from tests.fakes import FakeRuntime

TEST_NETWORK = os.environ.get("FAULTLINE_TEST_NETWORK", "198.18.2.0/24")


@pytest.fixture(scope="module")
def live_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KafkaCluster, NetnsRuntime]]:
    if os.geteuid() != 0:
        pytest.fail("the nemesis cluster tests need root (network namespaces and iptables)")
    settings = ClusterSettings(network=TEST_NETWORK)
    with provision(settings, tmp_path_factory.mktemp("cluster")) as (cluster, runtime):
        yield cluster, runtime


@pytest.fixture
def fake_world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Nemesis, KafkaCluster, FakeRuntime]]:
    """The operations' fast tests: a Nemesis over the fake runtime's cluster, with no Kafka to ask (no leaders, no
    controller known; broker 1 observed as controller) and no wait for ZooKeeper to drop a stopped broker."""
    monkeypatch.setattr(nemesis.faults, "_wait_unregistered", lambda cluster, node: None)
    monkeypatch.setattr(nemesis.nemesis, "observe", lambda cluster: ClusterFacts(controller=1))
    runtime = FakeRuntime()
    runtime.create()
    cluster = KafkaCluster(runtime, ClusterSettings(), RunFolder(tmp_path).make())
    cluster.write_configs()
    cluster.power_on_all()
    monkeypatch.setattr(cluster, "views", lambda: {})
    nem = Nemesis(cluster, runtime, cluster.folder.nemesis_journal, seed=1)
    yield nem, cluster, runtime
    nem.close()
