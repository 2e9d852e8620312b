"""KRaft without a cluster: the version table's metadata modes, the configs, DescribeQuorum's bytes, the spec."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from harness.spec import load_spec_file, load_specs, merge, parse_spec
from testbed.addressing import make_plan
from testbed.dist.versions import check_metadata, default_metadata, release
from testbed.errors import ClusterError, DistributionError, SpecError
from testbed.kafka import config as kcfg
from testbed.kafka import kraft
from testbed.kafka.kraft import active_controller, new_cluster_id
from testbed.kafka.quorum import (
    DESCRIBE_QUORUM_KEY,
    METADATA_TOPIC,
    QuorumView,
    describe_quorum_request,
    parse_describe_quorum,
)
from testbed.kafka.wire_codec import uvarint
from workloads.config import ObserverConfig, config_to_json, parse_config

REPO = Path(__file__).resolve().parents[2]
PLAN = make_plan("198.18.0.0/24", 3)


def _props(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))


@pytest.mark.parametrize(("version", "modes", "default"), [
    ("3.2.3", ("zookeeper",), "zookeeper"), ("3.3.2", ("zookeeper", "kraft"), "zookeeper"),
    ("3.9.1", ("zookeeper", "kraft"), "zookeeper"), ("4.0.0", ("kraft",), "kraft"), ("4.4.0", ("kraft",), "kraft"),
])
def test_metadata_modes_follow_the_version_table(version: str, modes: tuple[str, ...], default: str) -> None:
    assert release(version).metadata_modes == modes and default_metadata(version) == default
    assert release(version).java == 17 or version < "4"
    for mode in ("zookeeper", "kraft"):
        if mode in modes:
            check_metadata(version, mode)
        else:
            with pytest.raises(DistributionError) as exc:
                check_metadata(version, mode)
            assert "\n" not in str(exc.value) and version in str(exc.value)


def test_a_kraft_broker_has_no_zookeeper_keys_and_maps_the_session_timeout_to_fencing() -> None:
    settings = kcfg.ClusterSettings(kafka_version="4.1.1", metadata="kraft", zookeeper_session_timeout_ms=6000,
                                    broker_overrides={"num.io.threads": "3"})
    props = _props(kcfg.server_properties(PLAN, PLAN.nodes[1], settings, "/k"))
    assert not [k for k in props if k.startswith("zookeeper.")] and "broker.id" not in props
    assert props["process.roles"] == "broker" and props["node.id"] == "1"
    assert props["controller.quorum.voters"] == ",".join(f"{100 + n.broker_id}@{n.address}:9093" for n in PLAN.nodes)
    assert props["broker.session.timeout.ms"] == "6000" and props["broker.heartbeat.interval.ms"] == "2000"
    assert props["listeners"] == f"PLAINTEXT://{PLAN.nodes[1].address}:9092" and props["num.io.threads"] == "3"
    assert props["controller.listener.names"] == "CONTROLLER" and props["log.dirs"] == "/k"
    controller = _props(kcfg.controller_properties(PLAN, PLAN.nodes[1], settings, "/c"))
    assert controller["process.roles"] == "controller" and controller["node.id"] == "101"
    assert controller["listeners"] == f"CONTROLLER://{PLAN.nodes[1].address}:9093"
    assert controller["broker.session.timeout.ms"] == "6000" and controller["min.insync.replicas"] == "2"
    assert settings.roles == ("controller", "broker") and settings.quorum_role == "controller"
    zk = _props(kcfg.server_properties(PLAN, PLAN.nodes[1], kcfg.ClusterSettings(kafka_version="3.9.1"), "/k"))
    assert zk["broker.id"] == "1" and "zookeeper.connect" in zk and "process.roles" not in zk


def test_combined_kraft_nodes_are_one_jvm_with_both_listeners() -> None:
    settings = kcfg.ClusterSettings(kafka_version="3.9.1", metadata="kraft", kraft_controllers="combined")
    props = _props(kcfg.server_properties(PLAN, PLAN.nodes[0], settings, "/k"))
    assert props["process.roles"] == "broker,controller" and props["node.id"] == "0"
    address = PLAN.nodes[0].address
    assert props["listeners"] == f"PLAINTEXT://{address}:9092,CONTROLLER://{address}:9093"
    assert props["advertised.listeners"] == f"PLAINTEXT://{address}:9092"
    assert props["controller.quorum.voters"].startswith(f"0@{address}:9093,1@")
    assert settings.roles == ("broker",) and settings.quorum_role is None
    assert kcfg.broker_of_controller(settings, 2) == 2 and kcfg.controller_id(settings, 2) == 2


def test_cluster_ids_are_22_base64url_characters_never_led_by_a_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    ids = {new_cluster_id() for _ in range(20)}
    assert len(ids) == 20 and all(len(i) == 22 and "=" not in i and "/" not in i and "+" not in i for i in ids)
    draws = iter([b"\xf8" + bytes(15), b"\x01" + bytes(15)])  # the first encodes as "-A...": StorageTool's option
    monkeypatch.setattr(kraft.uuid, "uuid4", lambda: type("U", (), {"bytes": next(draws)})())
    assert new_cluster_id() == "AQAAAAAAAAAAAAAAAAAAAA"


def _tagged_response(body: bytes) -> bytes:
    return struct.pack(">i", 7) + b"\x00" + body  # correlation id, header tagged fields


def _leader_answer(leader: int, epoch: int, voters: dict[int, int], error: int = 0) -> bytes:
    topic = METADATA_TOPIC.encode()
    part = struct.pack(">ihiiq", 0, error, leader, epoch, 42)
    part += uvarint(len(voters) + 1) + b"".join(struct.pack(">iq", v, e) + b"\x00" for v, e in voters.items())
    part += uvarint(1) + b"\x00"  # no observers; the partition's tagged fields
    body = struct.pack(">h", 0) + uvarint(2) + uvarint(len(topic) + 1) + topic + uvarint(2) + part
    return _tagged_response(body + b"\x00" + b"\x00")


def test_describe_quorum_v0_bytes_both_ways() -> None:
    request = describe_quorum_request(5)
    size, key, version, correlation = struct.unpack_from(">ihhi", request)
    assert size == len(request) - 4 and (key, version, correlation) == (DESCRIBE_QUORUM_KEY, 0, 5)
    assert METADATA_TOPIC.encode() in request and request.endswith(b"\x00\x00\x00\x00\x00\x00\x00")
    view = parse_describe_quorum(_leader_answer(102, 3, {100: 40, 101: 42, 102: 42}))
    assert view == QuorumView(0, 102, 3, 42, {100: 40, 101: 42, 102: 42}) and view.leading
    follower = parse_describe_quorum(_leader_answer(-1, -1, {}, error=6))
    assert follower.error == 6 and not follower.leading


def test_the_active_controller_is_the_newest_epochs_leader_as_a_broker_id() -> None:
    settings = kcfg.ClusterSettings(metadata="kraft", kafka_version="4.1.1")
    stale, new = QuorumView(0, 100, 1, 5, {}), QuorumView(0, 101, 2, 9, {})
    assert active_controller(settings, {"a": stale, "b": new, "c": QuorumView(6)}) == 1
    assert active_controller(settings, {"a": None, "b": QuorumView(6)}) is None


def test_observers_carry_the_controller_port_on_kraft() -> None:
    config = ObserverConfig(process="observer-broker-1", role="observer", az="az2", journal=Path("/j.jsonl"),
                            topic="t", bootstrap="", broker_id=1, broker_host="198.18.0.12", broker_port=9092,
                            controller_port=9093, controller_id_base=100)
    assert parse_config(config_to_json(config)) == config


def _smoke(**cluster: str) -> dict[str, object]:
    return merge(load_spec_file(REPO / "scenarios" / "smoke.yaml"), {"cluster": cluster})


def test_the_spec_takes_kraft_from_3_3_and_refuses_it_before_in_one_line() -> None:
    assert parse_spec(_smoke(kafka_version="3.9.1", metadata="kraft")).cluster.kraft
    assert parse_spec(_smoke(kafka_version="3.3.2", metadata="kraft", kraft_controllers="combined")).cluster.kraft
    with pytest.raises(SpecError, match=r"^cluster\.metadata: Kafka 2\.7\.2 has no production KRaft"):
        parse_spec(_smoke(metadata="kraft"))
    with pytest.raises(SpecError, match=r"^cluster\.metadata: unknown metadata mode .etcd."):
        parse_spec(_smoke(metadata="etcd"))


def test_zookeeper_only_stories_are_refused_on_kraft_and_the_rest_load() -> None:
    refused = set()
    for path in sorted((REPO / "scenarios").glob("*.yaml")):
        if path.stem == "rolling-upgrade":  # its versions are the story: on 3.9.1 it is no upgrade, refused
            with pytest.raises(SpecError, match=r"to_version: 3\.9\.1 is the version the brokers run then"):
                load_specs(path, kafka_version="3.9.1")
        else:
            assert load_specs(path, kafka_version="3.9.1")  # every other story runs on ZooKeeper
        raw = load_spec_file(path)
        for version, metadata in (("4.1.1", None), ("3.9.1", "kraft")):
            try:
                load_specs(path, kafka_version=version, metadata=metadata)
            except SpecError as exc:
                assert "zookeeper_only: a ZooKeeper-only story, refused on KRaft" in str(exc)
                assert "\n" not in str(exc) and raw.get("zookeeper_only")
                refused.add(path.stem)
            else:
                assert not raw.get("zookeeper_only")
    assert refused == {"link-broker-controller", "isolate-az-controller", "isolate-az-controller-leader",
                       "unclean-election", "power-off-mid-replication", "rolling-upgrade"}


def test_combined_kraft_refuses_a_fault_on_the_quorum_process_alone() -> None:
    raw = merge(_smoke(kafka_version="4.1.1", kraft_controllers="combined"),
                {"nemesis": [{"at": 2, "fault": "kill", "target": "az1", "role": "zookeeper"}]})
    with pytest.raises(SpecError, match=r"^nemesis\[0\]\.role: zookeeper: combined KRaft nodes"):
        parse_spec(raw)
    raw["cluster"]["kraft_controllers"] = "separate"  # type: ignore[index]
    assert parse_spec(raw).cluster.quorum_role == "controller"


class _SteeredCluster:
    """What start_quorum asks of a cluster: its nodes and roles, start and kill (recorded)."""

    def __init__(self) -> None:
        self.nodes = make_plan("198.18.0.0/24", 3).nodes
        self.roles = ("controller", "broker")
        self.calls: list[tuple[str, int]] = []

    def node(self, broker_id: int) -> object:
        return next(n for n in self.nodes if n.broker_id == broker_id)

    def start(self, node: object, role: str) -> None:
        self.calls.append(("start", node.broker_id))  # type: ignore[attr-defined]

    def kill(self, node: object, role: str) -> None:
        self.calls.append(("kill", node.broker_id))  # type: ignore[attr-defined]


def test_a_wrong_winner_has_every_controller_but_the_wanted_one_restarted(monkeypatch: pytest.MonkeyPatch) -> None:
    winners = iter([1, 0, 2])
    monkeypatch.setattr(kraft, "quorum_ready", lambda cluster: next(winners))
    monkeypatch.setattr(kraft.time, "sleep", lambda s: None)
    cluster = _SteeredCluster()
    assert kraft.start_quorum(cluster, 2, float("inf"), 0.0) == 2  # type: ignore[arg-type]
    assert cluster.calls == [("start", 2), ("start", 0), ("start", 1),  # the wanted one first
                             ("kill", 0), ("kill", 1), ("start", 0), ("start", 1),  # 1 won: all but 2 again
                             ("kill", 0), ("kill", 1), ("start", 0), ("start", 1)]  # 0 won: the same


def test_a_wanted_controller_that_never_wins_is_one_error_after_three_rounds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kraft, "quorum_ready", lambda cluster: 0)
    monkeypatch.setattr(kraft.time, "sleep", lambda s: None)
    cluster = _SteeredCluster()
    with pytest.raises(ClusterError, match=r"broker 2's node did not become the active controller \(broker 0's did"):
        kraft.start_quorum(cluster, 2, float("inf"), 0.0)  # type: ignore[arg-type]
    assert cluster.calls.count(("kill", 2)) == 0 and cluster.calls.count(("kill", 0)) == kraft.STEER_ATTEMPTS


def test_several_log_dirs_list_each_inside_the_nodes_kafka_data_on_zookeeper_and_kraft() -> None:
    for settings in (kcfg.ClusterSettings(log_dirs=2), kcfg.ClusterSettings(kafka_version="4.1.1", metadata="kraft",
                                                                            log_dirs=2)):
        props = _props(kcfg.server_properties(PLAN, PLAN.nodes[0], settings, "/k"))
        assert props["log.dirs"] == "/k/dir-0,/k/dir-1"
    assert _props(kcfg.server_properties(PLAN, PLAN.nodes[0], kcfg.ClusterSettings(), "/k"))["log.dirs"] == "/k"
