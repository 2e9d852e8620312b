"""Partition faults' shapes and journal targets, the journal, and the schedule thread, without a cluster."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from nemesis import shapes
from nemesis.faults import PartitionFault
from nemesis.journal import NemesisJournal, read_journal
from nemesis.nemesis import ScheduleRun
from nemesis.registry import fault_for
from nemesis.schedule import parse_schedule
from nemesis.spec import parse_fault
from nemesis.targets import ClusterFacts, PartitionFacts, Resolver
from testbed.addressing import make_plan
from testbed.errors import FaultError

PLAN = make_plan("198.18.2.0/24", 3)
# Partition 0 led by broker 0 (az1); broker 1 (az2) is the controller.
FACTS = ClusterFacts(1, {0: PartitionFacts(0, (0, 1, 2))})


def shape(raw: dict[str, Any]) -> tuple[shapes.Grudge, dict[str, Any]]:
    spec = parse_fault("f", raw)
    fault = fault_for(spec)
    assert isinstance(fault, PartitionFault)
    return fault.cut(spec, Resolver(PLAN, random.Random(1), spec.partition, lambda: FACTS), PLAN)


def test_isolate_az_of_the_leader() -> None:
    grudge, targets = shape({"fault": "isolate-az", "target": "leader"})
    assert grudge == shapes.isolate_az(PLAN, "az1")
    assert targets == {"az": "az1", "brokers": [0]}


def test_cut_link_between_azs_or_nodes() -> None:
    grudge, targets = shape({"fault": "cut-link", "between": ["controller", "leader"], "one_way": True})
    assert grudge == shapes.cut_link(PLAN, "az2", "az1", one_way=True)
    assert targets == {"link": ["az2", "az1"], "one_way": True, "brokers": [0, 1]}
    grudge, targets = shape({"fault": "cut-link", "between": ["broker-2", "controller"], "ends": "node"})
    assert shapes.cut_pairs(grudge) == [("az2-node", "az3-node"), ("az3-node", "az2-node")]
    assert targets["link"] == ["az3-node", "az2-node"] and targets["brokers"] == [1, 2]
    with pytest.raises(FaultError, match="both are az1"):
        shape({"fault": "cut-link", "between": ["leader", "az1-node"]})


def test_split_bridge_and_ring_targets() -> None:
    grudge, targets = shape({"fault": "split", "minority": ["controller"]})
    assert grudge == shapes.isolate_az(PLAN, "az2")
    assert targets == {"minority": ["az2"], "majority": ["az1", "az3"], "brokers": [1]}
    with pytest.raises(FaultError, match="not a minority"):
        shape({"fault": "split", "minority": ["az1", "az2"]})
    grudge, targets = shape({"fault": "bridge", "middle": "leader"})
    assert grudge == shapes.bridge(PLAN, "az1") and targets == {"bridge": "az1", "sides": [["az2"], ["az3"]]}
    assert shape({"fault": "bridge"})[1]["bridge"] == "az2"
    grudge, targets = shape({"fault": "majorities-ring"})
    assert grudge == shapes.majorities_ring(PLAN) and targets == {"ring": ["az1", "az2", "az3"]}


def test_journal_rows_follow_the_contract(tmp_path: Path) -> None:
    journal = NemesisJournal(tmp_path / "j" / "nemesis.jsonl")
    row = journal.write("start", "isolate-az", {"az": "az1"}, {"name": "x"}, time_ns=5)
    assert row == {
        "time_ns": 5,
        "type": "start",
        "fault": "isolate-az",
        "targets": '{"az": "az1"}',
        "detail": '{"name": "x"}',
    }
    journal.write("stop", "isolate-az", {"az": "az1"}, {"name": "x"})
    assert [r["type"] for r in read_journal(journal.path)] == ["start", "stop"]  # flushed, readable at once
    journal.close()


class FakeNemesis:
    """What a ScheduleRun uses of a Nemesis, recording calls instead of touching a cluster."""

    def __init__(self, failing: set[str] | None = None) -> None:
        self.seed = 3
        self.calls: list[tuple[str, str, float]] = []
        self.active: dict[str, bool] = {}
        self.failing = failing or set()
        self.t0 = 0.0

    def start(self, spec: Any, name: str, **detail: Any) -> None:
        if name in self.failing or spec.targets == ("az9",):
            raise FaultError(f"cannot start {name}")
        self.active[name] = True
        self.calls.append(("start", name, time.monotonic() - self.t0))

    def find(self, name: str) -> bool | None:
        return self.active.get(name)

    def stop(self, name: str, by: str = "call", **detail: Any) -> None:
        del self.active[name]
        self.calls.append(("stop", name, time.monotonic() - self.t0))

    def stop_all(self, by: str = "call") -> list[str]:
        names = list(self.active)[::-1]
        for name in names:
            self.stop(name, by)
        return names


def run(fake: FakeNemesis, raw: list[Any], stop: threading.Event | None = None) -> ScheduleRun:
    fake.t0 = time.monotonic()
    r = ScheduleRun(fake, parse_schedule("nemesis", raw), fake.t0, stop or threading.Event())  # type: ignore[arg-type]
    r.thread.start()
    return r


def test_schedule_fires_each_event_on_time_in_order() -> None:
    fake = FakeNemesis()
    r = run(
        fake,
        [
            {"at": 0.1, "fault": "kill", "target": "leader", "name": "k"},
            {"at": 0.3, "fault": "pause", "target": "az1", "name": "p"},
            {"at": 0.2, "stop": "k"},
            {"at": 0.4, "heal": "all"},
        ],
    )
    r.join(timeout=5)
    assert [(c[0], c[1]) for c in fake.calls] == [
        ("start", "k"),
        ("stop", "k"),
        ("start", "p"),
        ("stop", "p"),
    ]
    assert [round(c[2], 1) for c in fake.calls] == [0.1, 0.2, 0.3, 0.4]


def test_schedule_error_reraises_on_join_and_stops_the_thread() -> None:
    fake = FakeNemesis()
    r = run(
        fake,
        [
            {"at": 0.05, "fault": "kill", "target": "az9", "name": "bad"},
            {"at": 0.1, "fault": "kill", "target": "leader"},
        ],
    )
    with pytest.raises(FaultError, match="cannot start bad"):
        r.join(timeout=5)
    assert fake.calls == []
    assert isinstance(r.error, FaultError)


def test_random_chaos_skips_a_fault_that_cannot_start_and_its_stop() -> None:
    fake = FakeNemesis()
    raw = [
        {
            "random-chaos": {
                "until": 1.0,
                "duration": [0.05, 0.1],
                "interval": [0.05, 0.1],
                "faults": [{"fault": "kill", "target": "leader"}],
            }
        }
    ]
    names = [e.name for e in parse_schedule("nemesis", raw).timeline(3)][::2]
    fake.failing = {names[0]}
    r = run(fake, raw)
    r.join(timeout=5)
    assert [c[1] for c in fake.calls if c[0] == "start"] == names[1:]
    assert fake.active == {}


def test_stop_event_ends_the_schedule_between_events() -> None:
    fake = FakeNemesis()
    stop = threading.Event()
    r = run(
        fake, [{"at": 0.05, "fault": "kill", "target": "leader", "name": "k"}, {"at": 30, "stop": "k"}], stop
    )
    time.sleep(0.3)
    stop.set()
    r.join(timeout=2)
    assert [c[:2] for c in fake.calls] == [("start", "k")] and r.done
    r2 = run(FakeNemesis(), [{"at": 30, "fault": "kill", "target": "leader"}])
    r2.cancel()
    r2.join(timeout=2)
