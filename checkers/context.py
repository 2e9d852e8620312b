"""What was going on around an anomaly: active faults and claimed leaders (and the small tables' other facts).

Built from the small optional tables (`processes`, `nemesis`,
`observations`), loaded whole into this process and shared by both engines,
so examples come out identical whichever engine found them.

A fault is active from its `start` row to the next `stop` row with the same
fault name and targets (first started, first stopped); one never stopped is
active to the end. A broker "claims" leadership of a partition in a window
when some observer's view in effect during the window names it as leader:
the observer's rows inside the window plus its last row before it.
"""

from __future__ import annotations

import json
from bisect import bisect_left, bisect_right
from collections import defaultdict, deque
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

import pyarrow as pa

from checkers import group_terms
from checkers.classify import ClientConfig, known_configs
from checkers.sources import TableSource
from checkers.tables import load_table
from checkers.txn_terms import load_transactions

Payload = TypeVar("Payload")


def _canonical(text: str | None) -> tuple[str, Any]:
    """(matching key, value to report) of a targets cell."""
    if text is None:
        return "null", None
    try:
        parsed = json.loads(text)
    except ValueError:
        return text, text
    return json.dumps(parsed, sort_keys=True), parsed


@dataclass(frozen=True)
class FaultWindow:
    """One fault from its start to its stop (None: never stopped)."""

    fault: str | None
    targets: Any
    key: str
    start_ns: int
    stop_ns: int | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "fault": self.fault,
            "targets": self.targets,
            "start_ns": self.start_ns,
            "stop_ns": self.stop_ns,
        }


def pair_faults(
    events: Iterable[tuple[int, str | None, Hashable, Payload]],
) -> list[tuple[int, int | None, Payload]]:
    """Windows (start_ns, stop_ns, the start's payload) from `nemesis` rows (time_ns, type, key, payload).

    The one pairing rule (the report uses it too): rows in time order; a `stop` closes the earliest
    open `start` with the same key (fault and targets), a `stop` with none open is ignored, and a
    start never stopped gets stop_ns None. Closed windows come first, each in stop order.
    """
    open_starts: dict[Hashable, deque[tuple[int, Payload]]] = defaultdict(deque)
    windows: list[tuple[int, int | None, Payload]] = []
    for time_ns, kind, key, payload in events:
        if kind == "start":
            open_starts[key].append((time_ns, payload))
        elif kind == "stop" and open_starts[key]:
            start_ns, started = open_starts[key].popleft()
            windows.append((start_ns, time_ns, started))
    windows += [(start_ns, None, started) for starts in open_starts.values() for start_ns, started in starts]
    return windows


class FaultTimeline:
    """The faults of a `nemesis` table as windows."""

    def __init__(self, table: pa.Table) -> None:
        rows = sorted(
            zip(
                table.column("time_ns").to_pylist(),
                range(table.num_rows),
                table.column("type").to_pylist(),
                table.column("fault").to_pylist(),
                table.column("targets").to_pylist(),
                strict=True,
            )
        )
        events = []
        for time_ns, _, kind, fault, targets in rows:
            key, shown = _canonical(targets)
            events.append((time_ns, kind, (fault, key), (fault, shown, key)))
        windows = [FaultWindow(fault, shown, key, start_ns, stop_ns)
                   for start_ns, stop_ns, (fault, shown, key) in pair_faults(events)]
        self.windows = sorted(windows, key=lambda w: (w.start_ns, w.fault or "", w.key, w.stop_ns or -1))

    def active(self, lo: int, hi: int) -> list[dict[str, Any]]:
        """Faults active at some time in [lo, hi], in start order."""
        return [
            w.as_dict() for w in self.windows if w.start_ns <= hi and (w.stop_ns is None or w.stop_ns >= lo)
        ]


class LeaderTimeline:
    """Each observer's view of each partition's leader over time."""

    def __init__(self, table: pa.Table) -> None:
        views: dict[tuple[str, int], dict[str, list[tuple[int, int | None]]]] = defaultdict(
            lambda: defaultdict(list)
        )
        for time_ns, observer, topic, partition, leader in zip(
            table.column("time_ns").to_pylist(),
            table.column("observer").to_pylist(),
            table.column("topic").to_pylist(),
            table.column("partition").to_pylist(),
            table.column("leader").to_pylist(),
            strict=True,
        ):
            if topic is not None and partition is not None:
                views[(topic, partition)][observer].append((time_ns, leader))
        self._views: dict[tuple[str, int], list[tuple[list[int], list[int | None]]]] = {}
        for key, by_observer in views.items():
            series = []
            for rows in by_observer.values():
                rows.sort(key=lambda r: (r[0], -1 if r[1] is None else r[1]))
                series.append(([t for t, _ in rows], [leader for _, leader in rows]))
            self._views[key] = series

    def claims(self, topic: str | None, partition: int | None, lo: int, hi: int) -> list[int]:
        """Distinct leaders any observer's view named for the partition during [lo, hi]."""
        leaders: set[int] = set()
        if topic is None or partition is None:
            return []
        for times, named in self._views.get((topic, partition), []):
            start = max(bisect_left(times, lo) - 1, 0)
            end = bisect_right(times, hi)
            leaders.update(leader for leader in named[start:end] if leader is not None)
        return sorted(leaders)


@dataclass
class Context:
    """The small tables, loaded: configs, fault windows, leader views and transactions."""

    configs: dict[str, ClientConfig]
    faults: FaultTimeline | None
    leaders: LeaderTimeline | None
    transactions: pa.Table | None = None  # contract v2, validated (checkers.txn_terms)
    groups: group_terms.GroupTerms | None = None  # contract v3, validated (None: no group commits)


def load_context(sources: dict[str, TableSource]) -> Context:
    """Load and validate the optional tables (HistoryError on bad input)."""
    configs: dict[str, ClientConfig] = {}
    if "processes" in sources:
        table = load_table(sources["processes"])
        configs = known_configs(zip(*(table.column(c).to_pylist() for c in ("process", "config", "commit")),
                                    strict=True))
    faults = FaultTimeline(load_table(sources["nemesis"])) if "nemesis" in sources else None
    leaders = LeaderTimeline(load_table(sources["observations"])) if "observations" in sources else None
    return Context(configs=configs, faults=faults, leaders=leaders, transactions=load_transactions(sources),
                   groups=group_terms.prepare(sources))
