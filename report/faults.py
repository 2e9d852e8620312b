"""Fault windows from the ``nemesis`` table, and which faults were around a moment.

A fault is active from its ``start`` row to the next ``stop`` row with the same
fault name and the same targets (compared as parsed JSON; first started,
first stopped): the checker's rule, ``checkers.context.pair_faults``, so an
example's faults and the report's agree. A start never stopped is active to
the end of the run. ``info`` rows are single moments.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pandas as pd

from checkers.context import pair_faults
from nemesis.registry import of_category
from report import fmt
from report.loaded_run import parse_json

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

    @property
    def degraded(self) -> bool:
        """A degraded link (lossy, slow, throttled): traffic still flows, unlike a clean cut."""
        return self.fault in of_category("link")

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
    events = [(time_ns, kind, _key(fault, targets), (fault, targets, detail))
              for time_ns, _, kind, fault, targets, detail in rows]
    # What a stop row adds to its window: the calls a disk fault failed or delayed, per node and path; the clock
    # offsets a clock fault left (and a strobe's flips).
    added: dict[tuple[int | None, Any], dict[str, Any]] = {
        (time_ns, detail.get("name")): {STOP_ADDS[k]: detail[k] for k in STOP_ADDS if k in detail}
        for time_ns, _, kind, _, _, detail in rows if kind == "stop" and isinstance(detail, dict)}
    windows = [FaultWindow(fault, targets, start_ns, stop_ns, _with(detail, added.get((stop_ns, name))))
               for start_ns, stop_ns, (fault, targets, detail) in pair_faults(events)
               for name in [detail.get("name") if isinstance(detail, dict) else None]]
    return sorted(windows, key=lambda w: (w.start_ns, w.fault, fmt.compact(w.targets), w.stop_ns or -1))


# A stop row's detail keys that join its window's detail, under these names.
STOP_ADDS = {"counts": "counts", "offsets": "offsets_at_stop", "flips": "flips"}


def _with(detail: Any, added: dict[str, Any] | None) -> Any:
    return {**detail, **added} if added and isinstance(detail, dict) else detail


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
