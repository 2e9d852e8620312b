"""Test helper (any runtime): a node powered off and on during a partition comes back still partitioned,
and the writes it had not fsynced are gone where the runtime drops them."""

from __future__ import annotations

from nemesis.nemesis import Nemesis
from testbed.addressing import Host
from testbed.kafka.cluster import KafkaCluster

# A TCP connect from inside a host: "open", "timeout" (dropped by a fault rule) or the error.
PROBE = """import socket, sys
s = socket.socket(); s.settimeout(float(sys.argv[3]))
try:
    s.connect((sys.argv[1], int(sys.argv[2]))); print("open")
except socket.timeout:
    print("timeout")
except OSError as e:
    print(f"error {e.errno}")
"""
ZOOKEEPER_PORT = 2181


def reach(cluster: KafkaCluster, source: Host, target: Host, port: int = ZOOKEEPER_PORT) -> str:
    """Whether `source` can open a connection to `target`'s port, tried from inside `source`."""
    argv = [*cluster.software(source).python, "-c", PROBE, target.address, str(port), "3"]
    return cluster.runtime.execute(source, argv, timeout=60).stdout.strip()


def write_unsynced_and_synced(cluster: KafkaCluster, node: Host) -> str:
    """Two files in the node's ZooKeeper data directory: `unsynced` never fsynced, `synced` fsynced; returns the
    directory as the host names it."""
    where = cluster.runtime.host_path(node, cluster.node_folder(node).data("zookeeper"))
    cluster.runtime.execute(node, ["sh", "-c", 'echo lost > "$1/unsynced" && echo kept > "$1/synced" && '
                                               'sync "$1/synced"', "write", where])
    return where


def read(cluster: KafkaCluster, node: Host, path: str) -> str:
    return cluster.runtime.execute(node, ["sh", "-c", 'cat "$1" 2>/dev/null || true', "read", path]).stdout.strip()


def assert_partition_survives_power_cycle(nemesis: Nemesis, lose_unsynced: bool) -> None:
    cluster = nemesis.cluster
    az1, az2, az3 = cluster.nodes
    cut = nemesis.start({"fault": "isolate-az", "target": "az1"}, name="cut")
    assert reach(cluster, az1, az2) == "timeout" and reach(cluster, az2, az3) == "open"
    where = write_unsynced_and_synced(cluster, az1)
    off = nemesis.start({"fault": "power-off", "target": ["az1-node"]}, name="off")
    assert off.injected.fault == ("power-cut" if lose_unsynced else "power-off")
    nemesis.stop(off)  # power back, processes started again: the partition must still hold
    assert None not in cluster.pids(az1).values()
    assert reach(cluster, az1, az2) == "timeout", "the node came back without its partition's rules"
    assert reach(cluster, az1, az3) == "timeout" and reach(cluster, az2, az3) == "open"
    assert read(cluster, az1, f"{where}/synced") == "kept"
    assert read(cluster, az1, f"{where}/unsynced") == ("" if lose_unsynced else "lost")
    nemesis.stop(cut)
    assert reach(cluster, az1, az2) == "open"
