"""Pure pieces of the foundation: the address plan, generated configs, the metadata wire parser."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from testbed.addressing import make_plan
from testbed.errors import UsageError
from testbed.kafka.config import ClusterSettings, server_properties, zoo_cfg
from testbed.kafka.wire import _parse_metadata


def test_plan_puts_a_node_and_a_client_host_in_every_az() -> None:
    plan = make_plan("198.18.0.0/24", 3)
    assert plan.control == "198.18.0.1"
    assert [(h.name, h.address) for h in plan.nodes] == [
        ("az1-node", "198.18.0.11"),
        ("az2-node", "198.18.0.12"),
        ("az3-node", "198.18.0.13"),
    ]
    assert [h.address for h in plan.clients] == ["198.18.0.21", "198.18.0.22", "198.18.0.23"]
    assert [n.broker_id for n in plan.nodes] == [0, 1, 2]


@pytest.mark.parametrize(
    "network, nodes, says",
    [
        ("198.18.0.0/24", 2, "at least 3 nodes"),
        ("198.18.0.0/29", 3, "too small"),
        ("banana", 3, "not an IPv4"),
    ],
)
def test_bad_plans_are_refused(network: str, nodes: int, says: str) -> None:
    with pytest.raises(UsageError, match=says):
        make_plan(network, nodes)


def test_server_properties_carry_the_rack_and_the_spec_settings() -> None:
    plan = make_plan("198.18.0.0/24", 3)
    settings = ClusterSettings(
        min_insync_replicas=1,
        unclean_leader_election=True,
        replica_lag_time_max_ms=5000,
        zookeeper_session_timeout_ms=6000,
        broker_overrides={"log.flush.interval.messages": "1"},
    )
    props = dict(
        line.split("=", 1)
        for line in server_properties(plan, plan.nodes[1], settings, Path("/d")).splitlines()
        if "=" in line
    )
    assert props["broker.id"] == "1" and props["broker.rack"] == "az2"
    assert props["listeners"] == "PLAINTEXT://198.18.0.12:9092"
    assert props["zookeeper.connect"] == "198.18.0.11:2181,198.18.0.12:2181,198.18.0.13:2181"
    assert props["min.insync.replicas"] == "1" and props["unclean.leader.election.enable"] == "true"
    assert props["replica.lag.time.max.ms"] == "5000" and props["zookeeper.session.timeout.ms"] == "6000"
    assert props["auto.create.topics.enable"] == "false" and props["log.flush.interval.messages"] == "1"
    cfg = zoo_cfg(plan, plan.nodes[0], Path("/z"))
    assert "server.3=198.18.0.13:2888:3888" in cfg and "admin.enableServer=false" in cfg


def _s(text: str) -> bytes:
    return struct.pack(">h", len(text)) + text.encode()


def test_metadata_v7_response_is_parsed_into_one_brokers_view() -> None:
    body = struct.pack(">ii", 1, 0)  # correlation id, throttle
    body += (
        struct.pack(">i", 2) + struct.pack(">i", 0) + _s("198.18.0.11") + struct.pack(">i", 9092) + _s("az1")
    )
    body += struct.pack(">i", 1) + _s("198.18.0.12") + struct.pack(">i", 9092) + struct.pack(">h", -1)
    body += _s("cluster") + struct.pack(">i", 1)  # cluster id, controller
    body += struct.pack(">i", 1) + struct.pack(">h", 0) + _s("faultline") + b"\x00"
    body += struct.pack(">i", 1) + struct.pack(">hiii", 0, 0, 1, 7)
    body += struct.pack(">iii", 2, 1, 0) + struct.pack(">ii", 1, 1) + struct.pack(">i", 0)
    view = _parse_metadata(body, "198.18.0.12:9092")
    assert view.broker == 1 and view.controller == 1
    assert view.brokers == {0: "198.18.0.11:9092", 1: "198.18.0.12:9092"}
    (p,) = view.partitions["faultline"]
    assert (p.partition, p.leader, p.leader_epoch, p.replicas, p.isr) == (0, 1, 7, [1, 0], [1])


def test_flush_settings_reach_the_broker_the_topic_and_zookeeper() -> None:
    from testbed.kafka.config import flush_configs

    plan = make_plan("198.18.0.0/24", 3)
    default = ClusterSettings()
    props = server_properties(plan, plan.nodes[0], default, "/k")
    assert "log.flush.interval" not in props and flush_configs(default) == {}
    assert "forceSync=yes" in zoo_cfg(plan, plan.nodes[0], "/z")
    fsync = ClusterSettings(flush_messages=1, flush_ms=200, zookeeper_force_sync=False)
    props = server_properties(plan, plan.nodes[0], fsync, "/k")
    assert "log.flush.interval.messages=1\n" in props and "log.flush.interval.ms=200\n" in props
    assert "log.flush.scheduler.interval.ms=200\n" in props
    assert flush_configs(fsync) == {"flush.messages": "1", "flush.ms": "200"}
    assert "forceSync=no" in zoo_cfg(plan, plan.nodes[0], "/z", force_sync=False)
