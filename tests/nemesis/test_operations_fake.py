"""Operations as faults on a fake cluster: the rolling restart's order, steps, journal and waits; the spec's checks.

The reassignment speaks Kafka's wire protocol and is held on a real cluster (tests/nemesis/test_operations_cluster.py);
here its encoding is held against hand-made bytes.
"""

from __future__ import annotations

import struct
import threading
import time
from signal import SIGTERM
from typing import Any

import pytest

import nemesis.faults
import nemesis.nemesis
import nemesis.operations
import nemesis.reassign
from harness.spec import parse_spec
from nemesis.journal import read_journal
from nemesis.nemesis import Nemesis
from nemesis.operations import roll_order
from nemesis.spec import parse_fault
from testbed.addressing import make_plan
from testbed.errors import FaultError, SpecError
from testbed.kafka import reassign_wire
from testbed.kafka.cluster import KafkaCluster
from tests.fakes import FakeRuntime


@pytest.fixture
def world(fake_world: tuple[Nemesis, KafkaCluster, FakeRuntime]) -> tuple[Nemesis, KafkaCluster, FakeRuntime]:
    return fake_world  # tests/nemesis/conftest.py


def steps(cluster: KafkaCluster) -> list[dict[str, Any]]:
    return [r["detail"] for r in read_journal(cluster.folder.nemesis_journal)
            if r["type"] == "info" and r["fault"] == "rolling-restart"]


def test_roll_order_puts_the_controller_where_asked() -> None:
    nodes = list(make_plan(nodes=4).nodes)
    ids = lambda at: [n.broker_id for n in roll_order(nodes, 1, at)]  # noqa: E731
    assert ids("last") == [0, 2, 3, 1]
    assert ids("first") == [1, 0, 2, 3]
    assert ids(2) == [0, 2, 1, 3]
    assert ids(9) == [0, 2, 3, 1]
    assert [n.broker_id for n in roll_order(nodes, None, "last")] == [0, 1, 2, 3]  # no controller known: id order


def test_a_roll_stops_and_starts_each_broker_in_turn_controller_last(
        world: tuple[Nemesis, KafkaCluster, FakeRuntime], monkeypatch: pytest.MonkeyPatch) -> None:
    nem, cluster, runtime = world
    looks: list[float] = []
    monkeypatch.setattr(cluster, "settled", lambda: looks.append(time.monotonic()) or {})
    before = {n.broker_id: cluster.pids(n)["broker"] for n in cluster.nodes}
    old = {n.broker_id: runtime.process(f"{n.name}/broker") for n in cluster.nodes}
    active = nem.start({"fault": "rolling-restart"}, "roll")
    assert active.targets == {"brokers": [0, 2, 1], "controller": 1}
    nem.stop("roll")  # waits for the roll to end
    rows = steps(cluster)
    assert [r["broker"] for r in rows] == [0, 2, 1]
    for row in rows:
        assert row["stop_ns"] <= row["stopped_ns"] <= row["started_ns"] <= row["isr_full_ns"]
    assert rows[0]["isr_full_ns"] <= rows[1]["stop_ns"] and rows[1]["isr_full_ns"] <= rows[2]["stop_ns"]
    for n in cluster.nodes:  # each broker got a SIGTERM (a clean shutdown), and runs again as a new process
        assert [s for s, _ in old[n.broker_id].signals] == [SIGTERM]
        assert cluster.pids(n)["broker"] not in (None, before[n.broker_id])
    assert len(looks) >= 3
    stop_row = [r for r in read_journal(cluster.folder.nemesis_journal) if r["type"] == "stop"]
    assert stop_row and stop_row[0]["time_ns"] >= rows[-1]["isr_full_ns"]


def test_the_start_returns_at_once_so_other_faults_run_during_the_roll(
        world: tuple[Nemesis, KafkaCluster, FakeRuntime], monkeypatch: pytest.MonkeyPatch) -> None:
    nem, cluster, _ = world
    gate = threading.Event()
    monkeypatch.setattr(cluster, "settled", lambda: {} if gate.is_set() else None)
    nem.start({"fault": "rolling-restart", "wait_s": 30}, "roll")
    nem.start({"fault": "pause", "target": "az3"}, "p")  # while the roll waits for the first broker's ISR
    assert len(steps(cluster)) == 0
    nem.stop("p")
    gate.set()
    nem.stop("roll")
    assert [r["broker"] for r in steps(cluster)] == [0, 2, 1]


def test_a_fixed_pause_between_brokers(world: tuple[Nemesis, KafkaCluster, FakeRuntime],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    nem, cluster, _ = world
    monkeypatch.setattr(cluster, "settled", lambda: pytest.fail("a fixed pause never looks at the ISR"))
    nem.start({"fault": "rolling-restart", "wait": 0.3, "controller_at": "first"}, "roll")
    nem.stop("roll")
    rows = steps(cluster)
    assert [r["broker"] for r in rows] == [1, 0, 2]
    assert all(r["paused_s"] == 0.3 for r in rows)
    assert rows[1]["stop_ns"] - rows[0]["started_ns"] >= 0.3e9


def test_an_isr_that_never_fills_stops_the_roll_there(world: tuple[Nemesis, KafkaCluster, FakeRuntime],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    nem, cluster, runtime = world
    cluster.unsettled = "test-0 leader 1, ISR [1, 2] of 3 replicas"
    monkeypatch.setattr(cluster, "settled", lambda: None)
    untouched = runtime.process("az3-node/broker")
    nem.start({"fault": "rolling-restart", "wait_s": 0.5}, "roll")
    nem.stop("roll")
    rows = steps(cluster)
    assert [r["broker"] for r in rows] == [0, 0]
    assert rows[0]["isr_full_ns"] is None and "ISR [1, 2]" in rows[0]["unsettled"]
    assert "not full 0.5 s after broker 0" in rows[1]["aborted"]
    assert untouched is not None and untouched.signals == []  # the rest of the roll never happened
    assert all(cluster.pids(n)["broker"] is not None for n in cluster.nodes)


def test_a_stop_past_the_bound_cancels_the_roll_and_leaves_every_broker_up(
        world: tuple[Nemesis, KafkaCluster, FakeRuntime], monkeypatch: pytest.MonkeyPatch) -> None:
    nem, cluster, _ = world
    monkeypatch.setattr(cluster, "settled", lambda: None)
    active = nem.start({"fault": "rolling-restart", "wait_s": 60}, "roll")
    running = nemesis.operations.ROLLING_RESTART._running["roll"]
    running.bound_s = 0.3
    nem.stop(active)
    rows = steps(cluster)
    assert rows[-1].get("cancelled") or rows[-1].get("isr_full_ns", 1) is None
    assert all(cluster.pids(n)["broker"] is not None for n in cluster.nodes)


def test_a_roll_refuses_to_start_with_a_broker_down(world: tuple[Nemesis, KafkaCluster, FakeRuntime]) -> None:
    nem, cluster, _ = world
    cluster.stop(cluster.nodes[2], "broker", 5)
    with pytest.raises(FaultError, match="az3-node/broker not running"):
        nem.start({"fault": "rolling-restart"}, "roll")


@pytest.mark.parametrize("fault, says", [
    ({"fault": "rolling-restart", "controller_at": "middle"}, "n.controller_at: expected last, first or a position"),
    ({"fault": "rolling-restart", "wait": "forever"}, "n.wait: expected a number >= 0"),
    ({"fault": "rolling-restart", "wait_s": 0}, "n.wait_s: expected a number > 0"),
    ({"fault": "reassign"}, "n.replicas: required for fault reassign"),
    ({"fault": "reassign", "replicas": [1, 1]}, "n.replicas: [1, 1] names a broker twice"),
    ({"fault": "reassign", "replicas": [1], "topic": "__consumer_offsets"}, "n.partitions: required with topic"),
    ({"fault": "reassign", "replicas": [1], "topic": "other"}, "n.topic: 'other' is not one of"),
    ({"fault": "reassign", "replicas": [1], "throttle_kbit": 0.5}, "n.throttle_kbit: expected a number >= 1"),
])
def test_bad_operation_keys_name_the_key(fault: dict[str, Any], says: str) -> None:
    with pytest.raises(SpecError, match=f"^{says.replace('[', '.').replace(']', '.')}"):
        parse_fault("n", fault)


def spec(nemesis: list[dict[str, Any]], **cluster: Any) -> dict[str, Any]:
    return {"name": "t", "duration_s": 10, "cluster": cluster,
            "workloads": {"producers": [{"azs": ["az1"], "rate": 10}]}, "nemesis": nemesis}


def test_the_spec_refuses_a_reassignment_the_cluster_cannot_do() -> None:
    with pytest.raises(SpecError, match=r"^nemesis\[0\].replicas: no broker 3 in a cluster of 3"):
        parse_spec(spec([{"at": 1, "fault": "reassign", "replicas": [1, 3]}]))
    with pytest.raises(SpecError, match=r"^nemesis\[0\].fault: reassign needs Kafka 2.4 or later; this spec runs 2.3.1"):
        parse_spec(spec([{"at": 1, "fault": "reassign", "replicas": [1, 2]}], kafka_version="2.3.1"))
    assert parse_spec(spec([{"at": 1, "fault": "reassign", "replicas": [1, 2]}])).nemesis


def test_the_reassignment_request_is_kafkas_flexible_encoding() -> None:
    sent: list[bytes] = []

    def answer(host: str, port: int, request: bytes, timeout: float) -> bytes:
        sent.append(request)
        # correlation id, no tags, throttle 0, error 0, null message, one topic "t" with partition 2: error 0
        return (struct.pack(">i", 1) + b"\x00" + struct.pack(">ih", 0, 0) + b"\x00" + b"\x02" + b"\x02t" + b"\x02"
                + struct.pack(">ih", 2, 0) + b"\x00" + b"\x00" + b"\x00" + b"\x00")

    with pytest.MonkeyPatch.context() as m:
        m.setattr(reassign_wire, "ask", answer)
        assert reassign_wire.alter_reassignments("h", 9092, "t", {2: [1, 0]}, 1000) == (0, {2: (0, None)})
    frame = sent[0]
    assert struct.unpack(">i", frame[:4])[0] == len(frame) - 4
    assert struct.unpack(">hh", frame[4:8]) == (45, 0)  # AlterPartitionReassignments v0
    client = reassign_wire.CLIENT_ID
    body = frame[12 + 2 + len(client) + 1:]  # past the header's tags
    assert body == (struct.pack(">i", 1000) + b"\x02" + b"\x02t" + b"\x02" + struct.pack(">i", 2) + b"\x03"
                    + struct.pack(">ii", 1, 0) + b"\x00" + b"\x00" + b"\x00")


def test_the_list_answer_is_read_with_adding_and_removing_replicas() -> None:
    ints = lambda *v: bytes([len(v) + 1]) + b"".join(struct.pack(">i", x) for x in v)  # noqa: E731
    answer = (struct.pack(">i", 1) + b"\x00" + struct.pack(">ih", 0, 0) + b"\x00" + b"\x02" + b"\x02t" + b"\x02"
              + struct.pack(">i", 0) + ints(1, 2, 0) + ints(2) + ints(0) + b"\x00" + b"\x00" + b"\x00")
    with pytest.MonkeyPatch.context() as m:
        m.setattr(reassign_wire, "ask", lambda *a: answer)
        error, moving = reassign_wire.list_reassignments("h", 9092, "t", [0])
    assert error == 0
    assert moving == {0: reassign_wire.Moving(0, (1, 2, 0), (2,), (0,))}


def test_a_throttle_a_broker_cut_off_from_zookeeper_cannot_take_is_set_on_the_others(
        world: tuple[Nemesis, KafkaCluster, FakeRuntime], monkeypatch: pytest.MonkeyPatch) -> None:
    _, cluster, _ = world
    asked: list[tuple[int, str, dict[str, str | None]]] = []

    def alter(host: str, port: int, kind: int, name: str, configs: dict[str, str | None],
              timeout: float = 10.0) -> tuple[int, str | None]:
        asked.append((kind, name, configs))
        if name == "2":
            raise TimeoutError("timed out")
        return 0, None

    monkeypatch.setattr(reassign_wire, "alter_configs", alter)
    monkeypatch.setattr(nemesis.reassign, "admin_node", lambda cluster: "198.18.0.11")
    done, refused = nemesis.reassign.REASSIGN._throttle(cluster, "faultline", 800)
    assert done == [0, 1] and refused == {"2": "timed out"}
    assert (reassign_wire.BROKER_RESOURCE, "0", {"leader.replication.throttled.rate": "100000",
                                                 "follower.replication.throttled.rate": "100000"}) in asked
    assert asked[-1] == (reassign_wire.TOPIC_RESOURCE, "faultline",
                         {"leader.replication.throttled.replicas": "*", "follower.replication.throttled.replicas": "*"})
    monkeypatch.setattr(reassign_wire, "alter_configs", lambda *a, **k: (_ for _ in ()).throw(TimeoutError("t")))
    with pytest.raises(FaultError, match="replication throttle not set"):
        nemesis.reassign.REASSIGN._throttle(cluster, "faultline", 800)


def test_a_move_onto_a_broker_waits_until_it_has_registered(
        world: tuple[Nemesis, KafkaCluster, FakeRuntime], monkeypatch: pytest.MonkeyPatch) -> None:
    """replace-broker's broker-3, started 8 s before its move, had not registered yet on a loaded machine (stability
    part 5, 2026-11-29 03:17: INVALID_REPLICA_ASSIGNMENT "not alive"): the move now waits for the metadata to list it."""
    _, cluster, _ = world
    answers = [[0, 1], [0, 1], [0, 1, 2]]  # broker-2 registers on the third look
    looks: list[str] = []

    def view(address: str, port: int, topics: list[str], timeout: float = 2.0) -> Any:
        looks.append(address)
        if address == cluster.nodes[0].address and len(looks) == 1:
            raise ConnectionError("refused")  # the first broker asked does not answer: the next one is asked
        return type("View", (), {"brokers": {b: "h:9092" for b in (answers.pop(0) if len(answers) > 1 else answers[0])}})
    monkeypatch.setattr(nemesis.reassign, "broker_view", view)
    monkeypatch.setattr(nemesis.reassign, "REGISTERED_POLL_S", 0.0)
    assert nemesis.reassign.REASSIGN._registered(cluster, [1, 2], "reassign") >= 0.0
    assert len(looks) == 4 and looks[:2] == [cluster.nodes[0].address, cluster.nodes[1].address]
    answers[:] = [[0, 1]]
    monkeypatch.setattr(nemesis.reassign, "ASK_S", 0.0)
    with pytest.raises(FaultError, match=r"^reassign: brokers \[2\] not registered within 0 s \(the cluster's "
                                         r"metadata lists \[0, 1\]\)$"):
        nemesis.reassign.REASSIGN._registered(cluster, [1, 2], "reassign")
