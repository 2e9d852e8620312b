"""Pieces of the report's views: faults in words, errors by code, ISR windows, log excerpts."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from report.errorcodes import NO_CODE, error_breakdown
from report.faultwords import describe, how, sentences
from report.figures import Frame
from report.health import isr_views
from report.logexcerpts import (
    MAX_CHARS,
    MAX_EXCERPTS,
    MAX_LINE_CHARS,
    MIN_LINES,
    Excerpts,
    parse_stamp,
)
from tests.report.runfolder import T0, log_line

NS = 1_000_000_000

# Each fault kind with targets as nemesis/faults.py journals them, and what the report says.
KINDS = {
    "isolate-az": ({"az": "az1", "brokers": [0], "scope": "all"}, "az1 cut off from every other AZ; broker 0 inside"),
    "cut-link": (
        {"link": ["az1", "az2"], "one_way": False, "brokers": [0, 1], "scope": "kafka"},
        "link between az1 and az2 cut both ways (Kafka traffic only); brokers 0 and 1 at either end",
    ),
    "split": (
        {"minority": ["az1"], "majority": ["az2", "az3"], "brokers": [0], "scope": "zookeeper"},
        "minority az1 cut off from majority az2 and az3 (ZooKeeper traffic only); broker 0 in the minority",
    ),
    "bridge": (
        {"bridge": "az2", "sides": [["az1"], ["az3"]], "scope": "all"},
        "az1 and az3 cut from each other; only az2 hears both",
    ),
    "majorities-ring": (
        {"ring": ["az1", "az2", "az3"], "scope": "all"},
        "majorities ring over az1, az2 and az3: every AZ hears a majority, no two the same one",
    ),
    "kill": (
        {"nodes": ["az3-node"], "brokers": [2], "processes": ["broker-2"]},
        "SIGKILL to broker-2, restarted when it stops",
    ),
    "power-off": (
        {"nodes": ["az1-node"], "brokers": [0], "processes": ["broker-0", "zookeeper-0"]},
        "power cut to broker-0 and zookeeper-0: every process died at once, restarted when it stops",
    ),
    "pause": (
        {"nodes": ["az2-node"], "brokers": [1], "processes": ["zookeeper-1"]},
        "SIGSTOP to zookeeper-1, SIGCONT when it stops",
    ),
    "graceful-stop": (
        {"nodes": ["az1-node"], "brokers": [0], "processes": ["broker-0"]},
        "clean shutdown of broker-0, restarted when it stops",
    ),
    "rolling-restart": (
        {"brokers": [0, 2, 1], "controller": 1},
        "rolling restart of brokers 0, 2 then 1 (controller 1), each stopped cleanly and started again",
    ),
    "rolling-upgrade": (
        {"brokers": [0, 2, 1], "controller": 1, "from_version": "2.7.2", "to_version": "3.9.1",
         "pinned": {"inter.broker.protocol.version": "2.7"}, "bumped_to": "3.9"},
        "rolling upgrade of brokers 0, 2 then 1 (controller 1) from Kafka 2.7.2 to 3.9.1: each stopped cleanly and "
        "started on the new version with inter.broker.protocol.version 2.7, then a second roll bumping "
        "inter.broker.protocol.version to 3.9",
    ),
    "rolling-downgrade": (
        {"brokers": [0, 2, 1], "controller": 1, "from_version": "3.9.1", "to_version": "3.7.2", "down": True,
         "metadata_version": "3.7-IV4"},
        "rolling downgrade of brokers 0, 2 then 1 (controller 1) from Kafka 3.9.1 to 3.7.2: the brokers then the "
        "controllers stopped cleanly and started on the older version, metadata.version first lowered to 3.7-IV4",
    ),
    "reassign": (
        {"topic": "test", "partitions": [0], "replicas": [1, 2]},
        "partition 0 of test reassigned to brokers 1 and 2",
    ),
    "remove-controller": (
        {"nodes": ["az1-node"], "controller": 100, "directory_id": "AAAAAAAAAAAAAAAAAAAAAQ", "was_leader": True},
        "KRaft controller 100 of az1-node (the active one) removed from the voters",
    ),
    "add-controller": (
        {"nodes": ["az1-node"], "controller": 100},
        "KRaft controller 100 of az1-node formatted afresh and added to the voters",
    ),
    "zk-to-kraft": (
        {"brokers": [0, 2, 1], "controller": 1, "version": "3.9.1", "phases": ["controllers", "migrating"]},
        "migration from ZooKeeper to KRaft of brokers 0, 2 then 1 (Kafka 3.9.1, ZooKeeper's controller 1): KRaft "
        "controllers started, the brokers rolled into migration, then into KRaft, the controllers finalized",
    ),
    "heal-all": ({"resumed": ["broker-1"], "restarted": []}, "healed everything: resumed broker-1"),
    "disk-error": (
        {"nodes": ["az1-node"], "brokers": [0], "path": "partition", "paths": {"az1-node": "kafka-data/faultline-0"}},
        "EIO on az1-node's kafka-data/faultline-0",
    ),
    "disk-full": (
        {"nodes": ["az1-node", "az2-node"], "brokers": [0, 1], "path": "log-dir",
         "paths": {"az1-node": "kafka-data", "az2-node": "kafka-data"}},
        "disk full under az1-node's kafka-data and az2-node's kafka-data",
    ),
    "slow-disk": (
        {"nodes": ["az2-node"], "brokers": [1], "path": "quorum", "paths": {"az2-node": "zookeeper-data"}},
        "slow fsync on az2-node's zookeeper-data",
    ),
    "clock-skew": (
        {"nodes": ["az1-node"], "brokers": [0], "processes": ["az1-node/broker"], "offset_ms": 5000},
        "clock of az1-node/broker skewed by +5 s, back to true time when it stops",
    ),
    "clock-jump": (
        {"nodes": ["az2-node"], "brokers": [1], "processes": ["az2-node/broker", "az2-node/zookeeper"],
         "offset_ms": -30000},
        "clock of az2-node/broker and az2-node/zookeeper stepped by -30 s",
    ),
    "clock-strobe": (
        {"nodes": ["az1-node"], "brokers": [0], "processes": ["az1-node/broker"], "offset_ms": -1500, "rate": 0.5},
        "clock of az1-node/broker strobed by -1.5 s, on and off until it stops",
    ),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_fault_kind_in_words(kind: str) -> None:
    targets, words = KINDS[kind]
    assert describe(kind, targets, {"name": "x"}) == words


def test_every_kind_the_report_knows_is_tested() -> None:
    assert set(sentences()) == set(KINDS)


def test_unknown_kinds_failures_and_odd_rows_still_read_as_words() -> None:
    assert describe("melt-disk", {"nodes": ["az1-node"], "ms": 200}) == "melt-disk ms 200; nodes az1-node"
    assert describe("leader-of", ["t/1"], "broker-2") == "leader-of t/1: broker-2"
    assert describe("kill", {}, {"error": "broker-9 is not running"}) == (
        "SIGKILL to nothing, restarted when it stops; failed: broker-9 is not running"
    )
    assert describe("isolate-az", ["not", "a", "mapping"]) == "isolate-az not, a and mapping"
    for text in (describe(k, t) for k, (t, _) in KINDS.items()):
        assert not any(c in text for c in '{}[]"'), text


def test_how_the_nemesis_did_it() -> None:
    detail = {"name": "isolate-leader", "at_s": 5.0, "spec": {"fault": "isolate-az", "target": "leader"},
              "cut": [["a", "b"]] * 16, "took_ms": 18.95, "invoked_ns": 1}
    assert how(detail) == ("isolate-leader, scheduled at +5 s; target was the leader; 16 one-way host pairs dropped; "
                           "took 18.95 ms")
    assert how({"pids": {"broker-2": 4242}}) == "pid 4242 (broker-2)"
    assert how("SIGKILL") == "" and how(None) == ""
    counts = {"az1-node": {"path": "kafka-data/faultline-0", "counts": {"eio-write": 12, "eio-fsync": 3}},
              "az2-node": {"path": "kafka-data/faultline-0", "counts": {}}}
    assert how({"counts": counts}) == ("az1-node kafka-data/faultline-0: eio-fsync 3, eio-write 12; "
                                       "az2-node kafka-data/faultline-0: no call failed or delayed")
    clocks = {"offsets": {"az1-node/broker": -30000.0}, "offsets_at_stop": {"az1-node/broker": 0.0}, "flips": 7}
    assert how(clocks) == "clock offsets then az1-node/broker -30 s; at the stop az1-node/broker +0 s; 7 flips"


def test_errors_by_code() -> None:
    writes = pd.DataFrame({
        "status": ["ok", "fail", "fail", "info", "info", "fail"],
        "error": [None, "NOT_ENOUGH_REPLICAS", "NOT_ENOUGH_REPLICAS", "_MSG_TIMED_OUT", "NOT_ENOUGH_REPLICAS", None],
        "invoke_ns": [1, 2, 3, 4, 5, 6],
        "complete_ns": [10, 20, 30, None, 50, 60],
    })
    azs = pd.Series(["az1", "az1", "az2", "az10", "az2", "az1"])
    breakdown = error_breakdown(writes, azs)
    assert breakdown.azs == ("az1", "az2", "az10")
    assert [(r.code, r.total, r.fail, r.info, r.per_az, r.first_ns, r.last_ns) for r in breakdown.rows] == [
        ("NOT_ENOUGH_REPLICAS", 3, 2, 1, (1, 2, 0), 20, 50),
        ("_MSG_TIMED_OUT", 1, 0, 1, (0, 0, 1), 4, 4),  # no completion: its send time
        (NO_CODE, 1, 1, 0, (1, 0, 0), 60, 60),
    ]
    assert breakdown.total == 5
    assert error_breakdown(writes[writes["status"] == "ok"], azs).rows == ()


def test_under_min_isr_windows_follow_most_observers() -> None:
    rows = []
    for second in range(10):
        for observer in ("broker-0", "broker-1", "broker-2"):
            isr = [0, 1, 2]
            if 3 <= second < 6 and observer != "broker-0":  # broker-0 is cut off and still sees the old ISR
                isr = [1]
            rows.append({"time_ns": T0 + second * NS, "observer": observer, "topic": "t", "partition": 0,
                         "isr": json.dumps(isr)})
    views = isr_views(pd.DataFrame(rows), Frame(T0, T0 + 10 * NS), 2)
    (view,) = views
    assert view.under == [(3.0, 6.0)]
    assert view.observers["broker-1"] == [(0.0, 3), (3.0, 1), (6.0, 3), (9.0, 3)]
    assert view.observers["broker-0"] == [(0.0, 3), (9.0, 3)]
    assert isr_views(pd.DataFrame(rows), Frame(T0, T0 + 10 * NS), 1)[0].under == []


def test_log_excerpts_are_shared_between_nearby_moments_and_bounded(tmp_path: Path) -> None:
    assert parse_stamp("[2026-05-28 20:26:41,250] INFO x") == T0 + NS + 250_000_000
    assert parse_stamp("\tat kafka.Foo(Foo.scala:1)") is None
    node = tmp_path / "nodes" / "az1-node"
    (node / "config").mkdir(parents=True)
    (node / "config" / "server.properties").write_text("broker.id=0\n")
    (node / "logs" / "broker").mkdir(parents=True)
    (node / "logs" / "broker" / "server.log").write_text(
        "".join(log_line(T0 + i * NS // 10, f"INFO line {i}") for i in range(600)))
    excerpts = Excerpts(tmp_path)
    first = excerpts.around(T0 + 10 * NS, T0 + 10 * NS, [0])
    again = excerpts.around(T0 + 14 * NS, T0 + 14 * NS, [7])  # no log of broker 7: every node's
    far = excerpts.around(T0 + 40 * NS, T0 + 40 * NS)
    assert first == again and first != far
    (shared, apart) = excerpts.cut_all()
    assert (shared.lo_ns, shared.hi_ns) == (T0 + 7 * NS, T0 + 16 * NS)
    assert len(shared.lines) == 41 and shared.left_out == 91 - 40
    assert shared.lines[0].endswith("INFO line 70") and shared.lines[-1].endswith("INFO line 160")
    assert apart.anchor == "log-2"


def test_an_ssh_hosts_log_is_cut_on_the_harnesss_clock(tmp_path: Path) -> None:
    node = tmp_path / "nodes" / "az1-node"
    (node / "config").mkdir(parents=True)
    (node / "config" / "server.properties").write_text("broker.id=0\n")
    (node / "logs" / "broker").mkdir(parents=True)
    (node / "logs" / "broker" / "server.log").write_text(
        "".join(log_line(T0 + i * NS, f"INFO second {i}") for i in range(60)))
    (tmp_path / "clocks.json").write_text(json.dumps({"start": {"az1-node": {"offset_s": 20.0, "bound_s": 0.001}},
                                                      "large_s": 0.01}))  # its clock 20 s ahead of the harness's
    excerpts = Excerpts(tmp_path)
    excerpts.around(T0 + 10 * NS, T0 + 10 * NS)
    (excerpt,) = excerpts.cut_all()
    assert excerpt.lines[0].endswith("INFO second 27") and excerpt.lines[-1].endswith("INFO second 32")


def test_many_long_excerpts_keep_fewer_lines_each(tmp_path: Path) -> None:
    for broker in range(3):
        node = tmp_path / "nodes" / f"az{broker + 1}-node"
        (node / "config").mkdir(parents=True)
        (node / "config" / "server.properties").write_text(f"broker.id={broker}\n")
        (node / "logs" / "broker").mkdir(parents=True)
        (node / "logs" / "broker" / "server.log").write_text(
            "".join(log_line(T0 + i * NS // 10, "WARN " + "x" * 300) for i in range(3000)))
    excerpts = Excerpts(tmp_path)
    for second in range(0, 300, 20):
        excerpts.around(T0 + second * NS, T0 + second * NS)
    made = excerpts.cut_all()
    assert len(made) == MAX_EXCERPTS
    assert sum(len(line) for e in made for line in e.lines) <= MAX_CHARS
    assert all(len(e.lines) >= MIN_LINES and e.left_out > 0 for e in made)
    assert all(len(line) <= MAX_LINE_CHARS for e in made for line in e.lines)


def test_a_silent_observer_leaves_a_gap_and_no_vote() -> None:
    rows = [{"time_ns": T0 + second * NS, "observer": observer, "topic": "t", "partition": 0,
             "isr": json.dumps([0, 1, 2] if observer == "broker-0" else [1])}
            for second in range(10) for observer in ("broker-0", "broker-1", "broker-2")
            if not (observer != "broker-0" and 2 <= second < 8)]  # brokers 1 and 2 powered off from 2 to 8 s
    (view,) = isr_views(pd.DataFrame(rows), Frame(T0, T0 + 10 * NS), 2)
    assert view.observers["broker-1"] == [(0.0, 1), (1.0, 1), (1.0, None), (8.0, 1), (9.0, 1)]
    # Under until 5 s: then brokers 1 and 2 have been silent over GAP_S (since 1 s) and broker-0 alone decides.
    assert view.under == [(0.0, 5.0), (8.0, 10.0)]
