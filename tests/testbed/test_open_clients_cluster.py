"""FaultlineCluster's guard on a real netns cluster (marker `extended`: `make test-extended`; ~40 s on 2 cores).

A producer left open at the block's end: the block raises ClusterError naming its connections, every namespace and
process of the run is gone, and the run's bridge stays with the route to the cluster's addresses, so the
producer's reconnects go to the bridge (nothing answers there) and never to the machine's default route. `clean`
then removes the bridge. The fast test is tests/testbed/test_open_clients.py.
"""

from __future__ import annotations

import json
import subprocess

import pytest
from confluent_kafka import Producer

from faultline.testing import FaultlineCluster
from testbed.errors import ClusterError
from testbed.runtime.netns import clean_leftovers, list_links, list_namespaces

pytestmark = [pytest.mark.cluster, pytest.mark.extended]


def route_to(address: str) -> str:
    """The device this machine would send a packet to `address` through."""
    out = subprocess.run(["ip", "-j", "route", "get", address], capture_output=True, text=True, check=True).stdout
    return str(json.loads(out)[0]["dev"])


def test_a_producer_left_open_keeps_its_reconnects_on_the_runs_bridge() -> None:
    cluster = FaultlineCluster(partitions=1, runtime="netns")
    producer = None
    with pytest.raises(ClusterError, match=r"connection\(s\) of this process to the cluster's network "
                                           r"198\.18\.0\.0/24 still open .* the network stays"), cluster as c:
        prefix, proxy = c.runtime.prefix, c.bootstrap("az1").split(":")[0]
        producer = Producer({"bootstrap.servers": c.bootstrap("az1"), "acks": "all"})
        producer.produce(c.topic, b"one")
        assert producer.flush(30) == 0
    try:
        assert any(a.startswith(proxy + ":") for a in cluster.left_open), cluster.left_open
        assert not [n for n in list_namespaces() if n.startswith(prefix + "-")]  # the hosts are gone
        assert route_to(proxy) == f"{prefix}-br"  # the proxy's address still routes to the run's own bridge
    finally:
        assert producer is not None
        producer.close()  # the forgotten client, closed before its bridge goes
        removed = clean_leftovers(prefix)
    assert f"link {prefix}-br" in removed and f"{prefix}-br" not in list_links()
