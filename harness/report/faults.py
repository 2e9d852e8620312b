"""Fault windows from the ``nemesis`` table, and which faults were around a moment.

A fault is active from its ``start`` row to the next ``stop`` row with the same
fault name and the same targets (compared as parsed JSON; first started,
first stopped), as the checker pairs them. A start never stopped is active
to the end of the run. ``info`` rows are single moments.
"""

from __future__ import annotations

import json
from collections import defaultdict, deque
from dataclasses import dataclass
from typing import Any

import pandas as pd

from harness.report import fmt
from harness.report.run import parse_json

# "Around" an anomaly: a fault that ended shortly before it may well be its cause.
AROUND_NS = 5 * fmt.NS


@dataclass(frozen=True)
class FaultWindow:
    """One fault from start to stop (``stop_ns`` None: never stopped)."""

    fault: str
    targets: Any
    start_ns: int
    stop_ns: int | None
    detail: Any = None

    @property
    def label(self) -> str:
        shown = fmt.targets(self.targets)
        return f"{self.fault} {shown}" if shown else self.fault

    def end_ns(self, run_end_ns: int) -> int:
        return self.stop_ns if self.stop_ns is not None else max(run_end_ns, self.start_ns)


@dataclass(frozen=True)
class FaultEvent:
    """A nemesis ``info`` row: something the nemesis noted at one moment."""

    time_ns: int
    fault: str
    targets: Any
    detail: Any


def _key(fault: str, targets: Any) -> tuple[str, str]:
    return fault, json.dumps(targets, sort_keys=True)


def fault_windows(nemesis: pd.DataFrame) -> list[FaultWindow]:
    """The table's start/stop rows paired into windows, in start order."""
    rows = sorted(
        (int(t), i, kind, fault or "fault", parse_json(targets), parse_json(detail))
        for i, (t, kind, fault, targets, detail) in enumerate(
            zip(nemesis["time_ns"], nemesis["type"], nemesis["fault"], nemesis["targets"], nemesis["detail"],
                strict=True)
        )
        if not pd.isna(t)
    )
    open_starts: dict[tuple[str, str], deque[tuple[int, Any, Any]]] = defaultdict(deque)
    windows: list[FaultWindow] = []
    for time_ns, _, kind, fault, targets, detail in rows:
        key = _key(fault, targets)
        if kind == "start":
            open_starts[key].append((time_ns, targets, detail))
        elif kind == "stop" and open_starts[key]:
            start_ns, shown, start_detail = open_starts[key].popleft()
            windows.append(FaultWindow(fault, shown, start_ns, time_ns, start_detail))
    for (fault, _), starts in open_starts.items():
        windows.extend(FaultWindow(fault, shown, start_ns, None, detail) for start_ns, shown, detail in starts)
    return sorted(windows, key=lambda w: (w.start_ns, w.fault, fmt.compact(w.targets), w.stop_ns or -1))


def fault_events(nemesis: pd.DataFrame) -> list[FaultEvent]:
    """The table's ``info`` rows, in time order."""
    events = [
        FaultEvent(int(t), fault or "nemesis", parse_json(targets), parse_json(detail))
        for t, kind, fault, targets, detail in zip(
            nemesis["time_ns"], nemesis["type"], nemesis["fault"], nemesis["targets"], nemesis["detail"], strict=True
        )
        if kind == "info" and not pd.isna(t)
    ]
    return sorted(events, key=lambda e: (e.time_ns, e.fault, fmt.compact(e.targets), fmt.compact(e.detail)))


def relation(lo: int, hi: int, start_ns: int, stop_ns: int | None) -> str:
    """How a fault window stands to the moment [lo, hi]: "during", "ended 2.1 s before", "began 0.4 s after"."""
    if start_ns > hi:
        return f"began {(start_ns - hi) / fmt.NS:.1f} s after"
    if stop_ns is not None and stop_ns < lo:
        return f"ended {(lo - stop_ns) / fmt.NS:.1f} s before"
    return "during"


def windows_around(windows: list[FaultWindow], lo: int, hi: int, margin_ns: int = AROUND_NS) -> list[FaultWindow]:
    """The windows active at some time in [lo - margin, hi + margin]."""
    return [
        w for w in windows
        if w.start_ns <= hi + margin_ns and (w.stop_ns is None or w.stop_ns >= lo - margin_ns)
    ]
