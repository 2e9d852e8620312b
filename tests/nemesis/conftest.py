"""One real cluster per test module, for the nemesis's cluster tests.

Needs root (namespaces, iptables) and fails rather than skips without it.
The cluster's network is FAULTLINE_TEST_NETWORK (default 198.18.2.0/24), so
these tests can run beside another cluster on the machine.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from testbed.kafka.cluster import KafkaCluster
from testbed.kafka.config import ClusterSettings
from testbed.lifecycle import provision
from testbed.runtime.netns import NetnsRuntime

TEST_NETWORK = os.environ.get("FAULTLINE_TEST_NETWORK", "198.18.2.0/24")


@pytest.fixture(scope="module")
def live_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KafkaCluster, NetnsRuntime]]:
    if os.geteuid() != 0:
        pytest.fail("the nemesis cluster tests need root (network namespaces and iptables)")
    settings = ClusterSettings(network=TEST_NETWORK)
    with provision(settings, tmp_path_factory.mktemp("cluster")) as (cluster, runtime):
        yield cluster, runtime
