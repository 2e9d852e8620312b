"""KRaft controller membership (KIP-853) without a cluster: the wire bytes, the dynamic quorum's configs and format,
the spec's refusals (one line, exit 3), and both faults' steps and journal over a fake quorum.

The real quorum is held by scenarios/operations/controller-membership.yaml on netns (docs/runtimes.md, KRaft).
"""

from __future__ import annotations

import base64
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path
from signal import SIGTERM
from typing import Any

import pytest
import yaml

import nemesis.controller_membership as membership
import nemesis.nemesis
from harness.spec import parse_spec
from nemesis.journal import read_journal
from nemesis.nemesis import Nemesis
from nemesis.targets import ClusterFacts
from testbed.addressing import make_plan
from testbed.errors import FaultError, SpecError
from testbed.kafka import config as kcfg
from testbed.kafka import voters_wire as wire
from testbed.kafka.cluster import KafkaCluster
from testbed.kafka.wire_codec import FlexReader, uvarint
from testbed.runfolder import RunFolder
from tests.conftest import faultline
from tests.fakes import FakeRuntime

PLAN = make_plan("198.18.0.0/24", 3)
DIRS = {100: "AAAAAAAAAAAAAAAAAAAAAQ", 101: "AAAAAAAAAAAAAAAAAAAAAg", 102: "AAAAAAAAAAAAAAAAAAAAAw"}
DYNAMIC: dict[str, Any] = {"metadata": "kraft", "kafka_version": "3.9.1", "kraft_quorum": "dynamic"}


def _cstr(s: str | None) -> bytes:
    return uvarint(0) if s is None else uvarint(len(s.encode()) + 1) + s.encode()


def _replica(node_id: int, directory: str, end: int) -> bytes:
    return struct.pack(">i", node_id) + wire.uuid_bytes(directory) + struct.pack(">qqq", end, -1, -1) + b"\x00"


def describe_v2_answer(leader: int, epoch: int, hw: int, voters: list[tuple[int, str, int]],
                       observers: list[tuple[int, str, int]], error: int = 0) -> bytes:
    """A DescribeQuorum v2 response body as a 3.9 controller sends it (after the size)."""
    part = struct.pack(">ih", 0, error) + _cstr(None) + struct.pack(">iiq", leader, epoch, hw)
    part += uvarint(len(voters) + 1) + b"".join(_replica(*v) for v in voters)
    part += uvarint(len(observers) + 1) + b"".join(_replica(*o) for o in observers) + b"\x00"
    topic = _cstr("__cluster_metadata") + uvarint(2) + part + b"\x00"
    nodes = b"".join(struct.pack(">i", n) + uvarint(2) + _cstr("CONTROLLER") + _cstr(f"198.18.0.{11 + n - 100}")
                     + struct.pack(">H", 9093) + b"\x00" + b"\x00" for n, _, _ in voters)
    return (struct.pack(">i", 1) + b"\x00" + struct.pack(">h", 0) + _cstr(None) + uvarint(2) + topic
            + uvarint(len(voters) + 1) + nodes + b"\x00")


def test_describe_quorum_v2_is_read_with_directory_ids_observers_and_endpoints() -> None:
    body = describe_v2_answer(101, 7, 420, [(101, DIRS[101], 420), (102, DIRS[102], 419)], [(100, DIRS[100], 300)])
    seen = wire.parse_describe_voters(body)
    assert seen.leading and (seen.leader_id, seen.leader_epoch, seen.high_watermark) == (101, 7, 420)
    assert seen.voter(102) == wire.Replica(102, DIRS[102], 419) and seen.voter(100) is None
    assert seen.observer(100, DIRS[100]) == wire.Replica(100, DIRS[100], 300)
    assert seen.endpoints == {101: ("198.18.0.12", 9093), 102: ("198.18.0.13", 9093)}
    assert seen.to_json()["voters"] == [{"id": 101, "directory_id": DIRS[101], "log_end_offset": 420},
                                        {"id": 102, "directory_id": DIRS[102], "log_end_offset": 419}]
    refused = describe_v2_answer(-1, 7, -1, [], [], error=6)
    assert not wire.parse_describe_voters(refused).leading and wire.parse_describe_voters(refused).error == 6


def test_the_requests_are_kafkas_flexible_encoding() -> None:
    r = FlexReader(wire.describe_voters_request(5)[4:])
    assert (r.take(">h"), r.take(">h"), r.take(">i")) == (55, 2, 5)
    r = FlexReader(wire.remove_voter_request(3, None, 100, DIRS[100])[4:])
    assert (r.take(">h"), r.take(">h"), r.take(">i")) == (81, 0, 3)
    r.string()  # client id
    r.skip_tags()  # the header's tags
    assert r.compact_string() is None and r.take(">i") == 100
    assert base64.urlsafe_b64encode(r.data[r.pos:r.pos + 16]).decode().rstrip("=") == DIRS[100]
    r = FlexReader(wire.add_voter_request(4, "cid", 14000, 100, DIRS[100], "198.18.0.11", 9093)[4:])
    assert (r.take(">h"), r.take(">h"), r.take(">i")) == (80, 0, 4)
    r.string()
    r.skip_tags()
    assert (r.compact_string(), r.take(">i"), r.take(">i")) == ("cid", 14000, 100)
    r.pos += 16
    assert r.uvarint() == 2 and (r.compact_string(), r.compact_string(), r.take(">H")) == \
        ("CONTROLLER", "198.18.0.11", 9093)
    answer = struct.pack(">i", 4) + b"\x00" + struct.pack(">ih", 0, 126) + _cstr("already a voter") + b"\x00"
    assert wire.parse_voter_change(answer) == (126, "already a voter")
    assert wire.error_name(127) == "VOTER_NOT_FOUND"


def test_a_dynamic_quorum_is_found_through_bootstrap_servers_never_a_voter_list() -> None:
    settings = kcfg.ClusterSettings(**DYNAMIC)
    for text in (kcfg.controller_properties(PLAN, PLAN.nodes[0], settings, "/d"),
                 kcfg.server_properties(PLAN, PLAN.nodes[0], settings, "/d")):
        assert "controller.quorum.voters" not in text
        assert "controller.quorum.bootstrap.servers=198.18.0.11:9093,198.18.0.12:9093,198.18.0.13:9093" in text
    assert settings.to_json()["kraft_quorum"] == "dynamic"
    assert "kraft_quorum" not in kcfg.ClusterSettings(metadata="kraft").to_json()  # a static run's manifest as was


def _spec(cluster: dict[str, Any], nemesis: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": "t", "duration_s": 60, "cluster": cluster, "nemesis": nemesis,
            "workloads": {"producers": [{"azs": ["az1"]}]}}


REFUSALS = [
    ({**DYNAMIC, "kafka_version": "3.7.2"}, [], "cluster.kraft_quorum: dynamic: needs Kafka 3.9 or later"),
    ({"kafka_version": "3.9.1", "kraft_quorum": "dynamic"}, [], "this cluster runs metadata zookeeper"),
    ({**DYNAMIC, "kraft_controllers": "combined"}, [], "built for separate controllers only"),
    ({"kafka_version": "3.9.1"}, [{"at": 5, "fault": "remove-controller", "target": "az1"}],
     "nemesis[0].fault: remove-controller: a ZooKeeper-mode cluster has no KRaft controller quorum"),
    ({"metadata": "kraft", "kafka_version": "3.9.1"}, [{"at": 5, "fault": "add-controller"}],
     "nemesis[0].fault: add-controller: the quorum is static"),
    ({"metadata": "kraft", "kafka_version": "3.7.2"}, [{"at": 5, "fault": "remove-controller", "target": "az1"}],
     "remove-controller needs Kafka 3.9 or later"),
    (DYNAMIC, [{"at": 5, "fault": "remove-controller", "target": "controller"},
               {"at": 9, "fault": "remove-controller", "target": "az2"},
               {"at": 12, "fault": "remove-controller", "target": "az3"}],
     "nemesis[2].target: remove-controller at 12 s would remove the last controller voter"),
    (DYNAMIC, [{"at": 5, "fault": "add-controller", "target": "az2"}],
     "add-controller at 5 s: every node's controller is a voter then (adding an existing voter)"),
    (DYNAMIC, [{"at": 5, "fault": "remove-controller", "target": "az1"},
               {"at": 9, "fault": "add-controller", "target": "broker-1"}],
     "nemesis[1].target: add-controller at 9 s: broker 1's controller is a voter then"),
    (DYNAMIC, [{"at": 5, "fault": "remove-controller", "target": "az1"},
               {"at": 9, "fault": "add-controller", "target": "controller"}],
     "target controller is the active controller, a voter already"),
    (DYNAMIC, [{"at": 5, "fault": "remove-controller", "target": "az1"},
               {"at": 6, "fault": "remove-controller", "target": "az1"}], "broker 0's controller is not a voter then"),
    (DYNAMIC, [{"random-chaos": {"from": 5, "until": 30, "faults": [{"fault": "remove-controller", "target": "az1"}]}}],
     "cannot be drawn by random chaos"),
]


@pytest.mark.parametrize(("cluster", "events", "says"), REFUSALS, ids=[r[2][:40] for r in REFUSALS])
def test_the_spec_refuses_what_the_quorum_cannot_take_in_one_line(cluster: dict[str, Any],
                                                                  events: list[dict[str, Any]], says: str) -> None:
    with pytest.raises(SpecError) as exc:
        parse_spec(_spec(cluster, events))
    assert says in str(exc.value) and "\n" not in str(exc.value)


def test_a_remove_and_add_back_story_loads() -> None:
    spec = parse_spec(_spec(DYNAMIC, [{"at": 5, "fault": "remove-controller", "target": "controller", "name": "r"},
                                      {"at": 9, "stop": "r"}, {"at": 10, "fault": "add-controller", "name": "a"},
                                      {"at": 20, "fault": "remove-controller", "target": "az2", "shutdown": "before"},
                                      {"at": 30, "fault": "add-controller", "target": "az2"}]))
    assert spec.cluster.kraft_quorum == "dynamic"
    with pytest.raises(SpecError, match="nemesis.0..shutdown: expected one of after, before, none"):
        parse_spec(_spec(DYNAMIC, [{"at": 5, "fault": "remove-controller", "target": "az1", "shutdown": "later"}]))


def test_removing_the_last_voter_exits_3_and_starts_nothing(tmp_path: Path) -> None:
    path = tmp_path / "last.yaml"
    path.write_text(yaml.safe_dump(_spec({**DYNAMIC, "nodes": 3}, [
        {"at": 5, "fault": "remove-controller", "target": "az1"}, {"at": 6, "fault": "remove-controller",
                                                                    "target": "az2"},
        {"at": 7, "fault": "remove-controller", "target": "az3"}])))
    proc = faultline("run", str(path), "--results", str(tmp_path / "run"))
    assert proc.returncode == 3, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "would remove the last controller voter" in lines[0], proc.stderr
    assert not (tmp_path / "run").exists()


class FakeQuorum:
    """A dynamic quorum as DescribeQuorum v2 and the voter changes see it: the leader answers, the others refuse."""

    def __init__(self) -> None:
        self.leader, self.epoch, self.hw = 100, 3, 500
        self.voters = {n: DIRS[n] for n in (100, 101, 102)}
        self.observers: dict[int, str] = {}
        self.asked: list[tuple[str, str, int, str]] = []

    def describe(self, host: str, port: int, timeout: float = 2.0) -> wire.VoterSet:
        if host != PLAN.nodes[self.leader - 100].address:
            return wire.VoterSet(6)
        return wire.VoterSet(0, self.leader, self.epoch, self.hw,
                             tuple(wire.Replica(n, d, self.hw) for n, d in sorted(self.voters.items())),
                             tuple(wire.Replica(n, d, self.hw) for n, d in sorted(self.observers.items())))

    def remove(self, host: str, port: int, node_id: int, directory: str, timeout: float = 15.0) -> tuple[int, None]:
        self.asked.append(("remove", host, node_id, directory))
        del self.voters[node_id]
        if node_id == self.leader:  # it resigns once the new set is committed; the rest elect one
            self.leader, self.epoch = min(self.voters), self.epoch + 1
        return 0, None

    def add(self, host: str, port: int, node_id: int, directory: str, endpoint: tuple[str, int],
            timeout: float = 15.0) -> tuple[int, None]:
        self.asked.append(("add", host, node_id, directory))
        self.voters[node_id] = self.observers.pop(node_id)
        return 0, None


@pytest.fixture
def quorum_world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Nemesis, KafkaCluster,
                                                                                  FakeRuntime, FakeQuorum]]:
    quorum = FakeQuorum()
    monkeypatch.setattr(wire, "describe_voters", quorum.describe)
    monkeypatch.setattr(wire, "remove_voter", quorum.remove)
    monkeypatch.setattr(wire, "add_voter", quorum.add)
    monkeypatch.setattr(membership, "POLL_S", 0.01)
    fresh = "AAAAAAAAAAAAAAAAAAAACQ"

    def meta(argv: list[str]) -> subprocess.CompletedProcess[str] | None:
        if argv[0] == "cat":
            return subprocess.CompletedProcess(argv, 0, f"cluster.id=CID\ndirectory.id={fresh}\n", "")
        if "--no-initial-controllers" in argv:  # the new replica, an observer once it starts
            quorum.observers[100] = fresh
        return None
    runtime = FakeRuntime()
    runtime.handler = lambda host, argv, text: meta(argv)
    runtime.create()
    monkeypatch.setattr(nemesis.nemesis, "observe", lambda cluster: ClusterFacts(controller=0))
    cluster = KafkaCluster(runtime, kcfg.ClusterSettings(**DYNAMIC), RunFolder(tmp_path).make())
    cluster.write_configs()
    cluster.power_on_all()
    monkeypatch.setattr(cluster, "views", lambda: {})
    nem = Nemesis(cluster, runtime, cluster.folder.nemesis_journal, seed=1)
    yield nem, cluster, runtime, quorum
    nem.close()


def _rows(cluster: KafkaCluster, fault: str) -> list[dict[str, Any]]:
    return [r["detail"] for r in read_journal(cluster.folder.nemesis_journal)
            if r["type"] == "info" and r["fault"] == fault]


def test_the_format_gives_every_controller_the_same_initial_voters(quorum_world: Any) -> None:
    _, _, runtime, _ = quorum_world
    formats = [argv for _, argv in runtime.commands if "format" in argv]
    controllers = [a for a in formats if a[a.index("-c") + 1].endswith("controller.properties")]
    brokers = [a for a in formats if a not in controllers]
    assert len(controllers) == 3 and len(brokers) == 3
    given = {a[a.index("--initial-controllers") + 1] for a in controllers}
    assert len(given) == 1 and [v.split("@")[0] for v in next(iter(given)).split(",")] == ["100", "101", "102"]
    assert not any("--initial-controllers" in a for a in brokers)


def test_removing_the_active_controller_then_adding_a_fresh_one_journals_each_voter_set(quorum_world: Any) -> None:
    nem, cluster, runtime, quorum = quorum_world
    az1 = cluster.nodes[0]
    old = runtime.process(f"{az1.name}/controller")
    active = nem.start({"fault": "remove-controller", "target": "az1"}, "remove")
    assert active.targets == {"nodes": [az1.name], "controller": 100, "directory_id": DIRS[100], "was_leader": True}
    nem.stop("remove")
    assert quorum.asked[0] == ("remove", az1.address, 100, DIRS[100])  # asked of the leader: itself
    rows = _rows(cluster, "remove-controller")
    assert [r["step"] for r in rows] == ["asked", "removed", "stopped"]
    assert [v["id"] for v in rows[1]["voters_after"]["voters"]] == [101, 102] and rows[1]["voters_after"]["leader"] == 101
    assert [s for s, _ in old.signals] == [SIGTERM] and cluster.pids(az1)["controller"] is None
    with pytest.raises(FaultError, match="is not a voter"):
        nem.start({"fault": "remove-controller", "target": "az1"}, "again")
    nem.start({"fault": "add-controller"}, "add")  # the one node whose controller is not a voter: az1
    nem.stop("add")
    rows = _rows(cluster, "add-controller")
    assert [r["step"] for r in rows] == ["observer", "caught-up", "asked", "added"]
    assert rows[0]["directory_id"] == "AAAAAAAAAAAAAAAAAAAACQ" != DIRS[100]
    assert quorum.asked[1] == ("add", PLAN.nodes[1].address, 100, "AAAAAAAAAAAAAAAAAAAACQ")  # the new leader, 101
    assert {v["id"]: v["directory_id"] for v in rows[-1]["voters_after"]["voters"]}[100] == "AAAAAAAAAAAAAAAAAAAACQ"
    assert cluster.pids(az1)["controller"] is not None
    wiped = [argv for host, argv in runtime.commands if host == az1.name and argv[:1] == ["find"] and "-delete" in argv]
    assert len(wiped) == 1 and wiped[0][1] == runtime.host_path(az1, cluster.node_folder(az1).data("controller"))
    with pytest.raises(FaultError, match="is a voter already"):
        nem.start({"fault": "add-controller", "target": "az2"}, "dup")


def test_the_last_voter_is_never_removed(quorum_world: Any) -> None:
    nem, _, _, quorum = quorum_world
    quorum.voters = {102: DIRS[102]}
    quorum.leader = 102
    with pytest.raises(FaultError, match="last voter"):
        nem.start({"fault": "remove-controller", "target": "az3"}, "last")
    assert quorum.asked == []
