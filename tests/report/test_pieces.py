"""The report's pure parts on small hand-made tables: fault windows, leadership views, formats."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pandas as pd

from checkers.leadership import controller_views, disagreements, natural_key, partition_views
from report import fmt
from report.faults import fault_events, fault_windows, relation
from report.figures import fault_colors
from report.page import flatten

S = fmt.NS


def nemesis(rows: list[tuple[int, str, str, object]]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "time_ns": pd.array([r[0] for r in rows], dtype="Int64"),
            "type": pd.Series([r[1] for r in rows], dtype=object),
            "fault": pd.Series([r[2] for r in rows], dtype=object),
            "targets": pd.Series([r[3] for r in rows], dtype=object),
            "detail": pd.Series([None] * len(rows), dtype=object),
        }
    )


def test_fault_windows_pair_starts_and_stops_by_fault_and_targets() -> None:
    table = nemesis(
        [
            (1 * S, "start", "isolate-az", '{"az": "az1", "n": 1}'),
            (2 * S, "start", "kill", '["broker-2"]'),
            (3 * S, "stop", "isolate-az", '{"n": 1, "az": "az1"}'),  # the same targets, written otherwise
            (4 * S, "info", "leader-of", '"t/0"'),
            (5 * S, "start", "kill", '["broker-1"]'),
            (6 * S, "stop", "kill", '["broker-1"]'),
            (7 * S, "stop", "pause", '["broker-0"]'),  # a stop with no start: ignored
        ]
    )
    windows = fault_windows(table)
    assert [(w.fault, w.start_ns, w.stop_ns) for w in windows] == [
        ("isolate-az", 1 * S, 3 * S),
        ("kill", 2 * S, None),
        ("kill", 5 * S, 6 * S),
    ]
    assert windows[0].label == "isolate-az az=az1; n=1"
    assert windows[1].end_ns(9 * S) == 9 * S
    assert [(e.fault, e.targets) for e in fault_events(table)] == [("leader-of", "t/0")]


def test_a_disk_fault_window_carries_its_stop_rows_counts() -> None:
    table = nemesis([(1 * S, "start", "disk-error", '{"nodes": ["az1-node"]}'),
                     (2 * S, "stop", "disk-error", '{"nodes": ["az1-node"]}')])
    counts = {"az1-node": {"path": "kafka-data", "counts": {"eio-write": 4}}}
    table["detail"] = ['{"name": "e"}', json.dumps({"name": "e", "counts": counts})]
    (window,) = fault_windows(table)
    assert window.detail == {"name": "e", "counts": counts}


def test_kill_and_power_cut_windows_are_told_apart() -> None:
    """A kill keeps the page cache, a power cut drops unsynced writes: the timeline names and colours each."""
    table = nemesis(
        [
            (1 * S, "start", "kill", '{"brokers": [1]}'),
            (2 * S, "stop", "kill", '{"brokers": [1]}'),
            (3 * S, "start", "power-cut", '{"brokers": [0, 1, 2]}'),
            (4 * S, "stop", "power-cut", '{"brokers": [0, 1, 2]}'),
        ]
    )
    windows = fault_windows(table)
    assert [w.label for w in windows] == ["kill brokers=1", "power-cut brokers=0, 1, 2"]
    colors = fault_colors(windows, [])
    assert colors["kill"] != colors["power-cut"]


def test_relation_of_a_fault_to_a_moment() -> None:
    assert relation(5 * S, 6 * S, 1 * S, 7 * S) == "during"
    assert relation(5 * S, 6 * S, 1 * S, 3 * S) == "ended 2.0 s before"
    assert relation(5 * S, 6 * S, 8 * S, None) == "began 2.0 s after"
    assert relation(5 * S, 6 * S, 1 * S, None) == "during"


Observation = tuple[float, str, int | None, int | None]


def observations(rows: Sequence[Observation]) -> pd.DataFrame:
    """Rows of (seconds, observer, leader of t/0, controller)."""
    return pd.DataFrame(
        {
            "time_ns": pd.array([int(r[0] * S) for r in rows], dtype="Int64"),
            "observer": pd.Series([r[1] for r in rows], dtype=object),
            "topic": pd.Series(["t"] * len(rows), dtype=object),
            "partition": pd.array([0] * len(rows), dtype="Int64"),
            "leader": pd.array([r[2] for r in rows], dtype="Int64"),
            "isr": pd.Series([json.dumps([0, 1])] * len(rows), dtype=object),
            "leader_epoch": pd.array([0] * len(rows), dtype="Int64"),
            "controller": pd.array([r[3] for r in rows], dtype="Int64"),
        }
    )


def test_views_become_segments_with_gaps_where_an_observer_fell_silent() -> None:
    table = observations([(t, "b0", 0, 2) for t in (0, 1, 2, 3)] + [(t, "b1", 0, 2) for t in (0, 1, 7, 8)])
    views = partition_views(table)[("t", 0)]
    b1 = [(s.start_ns, s.end_ns) for s in views if s.observer == "b1"]
    assert b1 == [(0, 2 * S), (7 * S, 9 * S)]  # silent from 1 s to 7 s: more than three periods
    assert [(s.observer, s.start_ns, s.end_ns, s.isr) for s in views if s.observer == "b0"] == [
        ("b0", 0, 4 * S, "[0, 1]")
    ]


def test_two_leaders_at_once_are_found_and_skew_is_not() -> None:
    rows: list[Observation] = []
    for t in range(10):
        rows.append((t, "broker-0", 0, 2))  # broker-0 never learns it was replaced
        rows.append((t + 0.01, "broker-1", 0 if t < 3 else 1, 2))
        rows.append((t + 0.02, "broker-2", 0 if t < 3 else 1, 2 if t < 6 else 1))
    table = observations(rows)
    found = disagreements(partition_views(table)[("t", 0)], shortest_ns=S)
    assert len(found) == 1
    split = found[0]
    assert split.brokers == (0, 1)
    assert (split.start_ns, split.end_ns) == (int(3.01 * S), 10 * S)
    assert dict(split.claims) == {0: ("broker-0",), 1: ("broker-1", "broker-2")}
    controllers = disagreements(controller_views(table), shortest_ns=S)
    assert [c.brokers for c in controllers] == [(1, 2)]
    assert disagreements(partition_views(table)[("t", 0)], shortest_ns=8 * S) == []


def test_formats() -> None:
    t0 = 1_780_000_000 * S
    assert fmt.rel(t0 + 12_345_678_901, t0) == "+12.346 s"
    assert fmt.rel(t0 - S // 2, t0) == "−0.500 s"
    assert fmt.utc(t0 + 5 * S + 123_456_789) == "2026-05-28 20:26:45.123 UTC"
    assert fmt.duration(7 * S) == "7.0 s" and fmt.duration(245 * S) == "4 min 05 s"
    assert fmt.targets({"az": "az1", "nodes": ["n1", "c1"]}) == "az=az1; nodes=n1, c1"
    assert sorted(["broker-10", "broker-9", "broker-1"], key=natural_key) == [
        "broker-1",
        "broker-9",
        "broker-10",
    ]


def test_spec_is_flattened_in_file_order() -> None:
    spec = {
        "scenario": "x",
        "topic": {"name": "t", "partitions": 2},
        "flags": [1, 2],
        "on": True,
        "schedule": [{"at_s": 5, "fault": "kill"}],
    }
    assert flatten(spec) == [
        ("scenario", "x"),
        ("topic.name", "t"),
        ("topic.partitions", "2"),
        ("flags", "1, 2"),
        ("on", "true"),
        ("schedule[0]", "at_s: 5 · fault: kill"),
    ]
