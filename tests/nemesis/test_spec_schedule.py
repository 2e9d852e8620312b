"""Fault specs and schedules: validation with key paths, timelines, seeded random chaos (pure)."""

from __future__ import annotations

import pytest

from nemesis.registry import fault_names, of_category
from nemesis.schedule import DEFAULT_CHAOS, HealEvent, StartEvent, StopEvent, parse_schedule
from nemesis.spec import parse_fault
from testbed.errors import SpecError


def test_parse_fault_fills_defaults() -> None:
    spec = parse_fault("f", {"fault": "isolate-az", "target": "leader"})
    assert (spec.fault, spec.targets, spec.partition, spec.scope) == ("isolate-az", ("leader",), 0, "all")
    spec = parse_fault(
        "f",
        {
            "fault": "cut-link",
            "between": ["follower", "controller"],
            "one_way": True,
            "ends": "node",
            "scope": "kafka",
            "partition": 2,
        },
    )
    assert spec.targets == ("follower", "controller") and spec.one_way and spec.ends == "node"
    assert spec.partition == 2 and spec.scope == "kafka"
    spec = parse_fault("f", {"fault": "power-off", "target": ["broker-0", "az2"]})
    assert spec.targets == ("broker-0", "az2")
    assert parse_fault("f", {"fault": "power-off", "target": "all"}).targets == ("all",)
    with pytest.raises(SpecError, match=r"^f\.target: 'all' is not a target"):
        parse_fault("f", {"fault": "isolate-az", "target": "all"})
    assert parse_fault("f", {"fault": "pause", "target": "leader", "role": "both"}).role == "both"
    assert parse_fault("f", {"fault": "majorities-ring"}).targets == ()


def test_parse_fault_alone_names_a_missing_fault() -> None:
    with pytest.raises(SpecError, match=r"^x\.fault: missing"):
        parse_fault("x", {"target": "leader"})
    with pytest.raises(SpecError, match=r"^x: expected a mapping"):
        parse_fault("x", "kill")


def test_every_default_chaos_fault_is_valid_and_every_kind_is_covered() -> None:
    kinds = {parse_fault(f"c[{i}]", f).fault for i, f in enumerate(DEFAULT_CHAOS)}
    # Degraded links are opt-in: a default draw must run on every runtime, and docker cannot delay. A stray
    # transactional produce too: on Kafka 2.7 it hangs a partition for good (unreadable), which no safe run allows.
    # Disk faults too (the ssh runtime cannot make them), and operations (a roll or a reassignment outlasts a
    # drawn duration: its stop waits for it to end), and clock faults (only netns can shift a clock).
    assert kinds == set(fault_names()) - {"split"} - {name for category in ("link", "workload", "client", "disk",
                                                                             "operation", "clock")
                                                       for name in of_category(category)}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ([], "nemesis[0]: expected a mapping"),
        ({"target": "leader"}, "nemesis[0]: expected exactly one of fault, stop, heal"),
        ({"fault": "explode"}, "nemesis[0].fault: unknown fault 'explode'"),
        ({"fault": "isolate-az"}, "nemesis[0].target: required"),
        ({"fault": "isolate-az", "target": "leeder"}, "nemesis[0].target: 'leeder' is not a target"),
        ({"fault": "isolate-az", "target": ["az1", "az2"]}, "nemesis[0].target: "),
        ({"fault": "isolate-az", "target": "az1", "scope": "udp"}, "nemesis[0].scope: 'udp' is not one of"),
        ({"fault": "isolate-az", "target": "az1", "role": "broker"}, "nemesis[0].role: unknown key"),
        ({"fault": "cut-link", "between": ["az1"]}, "nemesis[0].between: expected exactly 2"),
        ({"fault": "cut-link", "between": ["az1", "bogus"]}, "nemesis[0].between[1]: 'bogus'"),
        (
            {"fault": "cut-link", "between": ["az1", "az2"], "one_way": "yes"},
            "nemesis[0].one_way: expected true",
        ),
        ({"fault": "cut-link", "between": ["az1", "az2"], "ends": "rack"}, "nemesis[0].ends: 'rack'"),
        ({"fault": "kill", "target": "leader", "role": "both"}, "nemesis[0].role: 'both' is not one of"),
        ({"fault": "kill", "target": "leader", "partition": -1}, "nemesis[0].partition: expected"),
        ({"fault": "kill", "target": "leader", "partition": True}, "nemesis[0].partition: expected"),
        ({"fault": "pause", "target": []}, "nemesis[0].target: expected a target or a non-empty list"),
    ],
)
def test_bad_fault_specs_name_their_key_path(raw: object, message: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_schedule("nemesis", [{"at": 1, **raw} if isinstance(raw, dict) else raw])
    assert message in str(err.value)


def test_timeline_events_in_time_order_with_names() -> None:
    schedule = parse_schedule(
        "nemesis",
        [
            {"at": 40, "heal": "iso"},
            {"at": 10, "fault": "isolate-az", "target": "leader", "name": "iso"},
            {"at": 50, "fault": "kill", "target": "controller"},
            {"at": 60, "stop": "kill#2"},
            {"at": 70, "fault": "pause", "target": "az1"},
            {"at": 80, "heal": "all"},
        ],
    )
    events = schedule.timeline(seed=1)
    assert [type(e) for e in events] == [StartEvent, StopEvent, StartEvent, StopEvent, StartEvent, HealEvent]
    assert [e.at for e in events] == [10, 40, 50, 60, 70, 80]
    first = events[0]
    assert isinstance(first, StartEvent) and first.name == "iso" and first.fault.targets == ("leader",)
    assert isinstance(events[2], StartEvent) and events[2].name == "kill#2"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"nemesis": 1}, "nemesis: expected a list"),
        ([{"fault": "kill", "target": "leader"}], "nemesis[0].at: required"),
        ([{"at": -1, "fault": "kill", "target": "leader"}], "nemesis[0].at: expected a number"),
        ([{"at": 1, "stop": "x", "heal": "y"}], "nemesis[0]: expected exactly one of"),
        ([{"at": 1}], "nemesis[0]: expected exactly one of"),
        ([{"at": 1, "stop": "nope"}], "nemesis[0]: stops 'nope', which no earlier item starts"),
        (
            [{"at": 5, "fault": "kill", "target": "leader", "name": "k"}, {"at": 1, "stop": "k"}],
            "nemesis[1]: stops 'k', which no earlier item starts",
        ),
        (
            [
                {"at": 1, "fault": "kill", "target": "leader", "name": "k"},
                {"at": 2, "heal": "all"},
                {"at": 3, "stop": "k"},
            ],
            "nemesis[2]: stops 'k', which is already stopped",
        ),
        (
            [
                {"at": 1, "fault": "kill", "target": "leader", "name": "k"},
                {"at": 2, "fault": "kill", "target": "leader", "name": "k"},
            ],
            "nemesis[1].name: 'k' is already",
        ),
        ([{"at": 1, "fault": "kill", "target": "leader", "name": "all"}], "nemesis[0].name: expected"),
        ([{"at": 1, "stop": "x", "extra": 1}], "nemesis[0].extra: unknown key"),
        ([{"random-chaos": {"from": 10}}], "nemesis[0].random-chaos.until: required"),
        ([{"random-chaos": {"from": 10, "until": 5}}], "nemesis[0].random-chaos.until: 5 must be after"),
        (
            [{"random-chaos": {"until": 50, "faults": [{"fault": "kill"}]}}],
            "nemesis[0].random-chaos.faults[0].target: required",
        ),
        (
            [{"random-chaos": {"until": 50, "interval": [3]}}],
            "nemesis[0].random-chaos.interval: expected [low",
        ),
        ([{"random-chaos": {"until": 50, "seed": "x"}}], "nemesis[0].random-chaos.seed: expected an integer"),
        ([{"random-chaos": {"until": 50}, "at": 3}], "nemesis[0].at: a random-chaos item takes no other key"),
    ],
)
def test_bad_schedules_name_their_key_path(raw: object, message: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_schedule("nemesis", raw)
    assert message in str(err.value)


def test_random_chaos_is_reproducible_sequential_and_bounded() -> None:
    raw = [{"random-chaos": {"from": 10, "until": 300, "duration": [5, 10], "interval": [2, 4]}}]
    schedule = parse_schedule("nemesis", raw)
    a, b, c = schedule.timeline(seed=7), schedule.timeline(seed=7), schedule.timeline(seed=8)
    assert a == b and a != c
    assert len(a) >= 2 * 15
    assert all(10 <= e.at <= 300 for e in a)
    starts = [e for e in a if isinstance(e, StartEvent)]
    stops = [e for e in a if isinstance(e, StopEvent)]
    assert len(starts) == len(stops) and all(e.optional for e in starts + stops)
    for start, stop in zip(starts, stops, strict=True):  # one at a time: each stops before the next starts
        assert start.name == stop.name and start.at < stop.at
    for stop, nxt in zip(stops, starts[1:], strict=False):
        assert stop.at < nxt.at
    assert len({s.fault.fault for s in starts}) > 4


def test_random_chaos_own_seed_wins_and_mixes_with_a_timeline() -> None:
    schedule = parse_schedule(
        "nemesis",
        [
            {"random-chaos": {"until": 100, "seed": 3, "faults": [{"fault": "kill", "target": "random"}]}},
            {"at": 0, "fault": "pause", "target": "az1", "name": "p"},
            {"at": 200, "stop": "p"},
        ],
    )
    assert schedule.timeline(seed=1) == schedule.timeline(seed=2)
    events = schedule.timeline(seed=1)
    assert events[0] == StartEvent(0.0, "p", events[0].fault)  # type: ignore[union-attr]
    assert isinstance(events[-1], StopEvent) and events[-1].name == "p"
    assert {e.fault.fault for e in events if isinstance(e, StartEvent) and e.optional} == {"kill"}


def test_empty_schedule() -> None:
    assert parse_schedule("nemesis", None).empty
    assert parse_schedule("nemesis", []).timeline(seed=1) == []
