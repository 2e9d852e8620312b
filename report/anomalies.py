"""The verdict's anomaly examples, placed in time and among the faults.

Every example in verdict.json becomes one `Example`. Its time window comes
from the example's own fields where the checker put them (a write's
invoke..complete, a poll, a pair's two polls, a divergent position's
evidence), else from the history (the value's write or first read, or the
position's acknowledgement or read). The faults around it are the
example's own ``faults`` key where the checker wrote one, else the fault
windows of the ``nemesis`` table within AROUND_NS of its window.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from checkers.anomalies import REGISTRY, Registry
from report.faults import FaultWindow, relation, windows_around
from report.loaded_run import Run

# Shown in their own columns; everything else goes to "details".
MAIN_FIELDS = ("value", "topic", "partition", "offset", "process")
SPECIAL_FIELDS = ("faults", "leaders", "classified")

Position = tuple[str, int, int]


@dataclass(frozen=True)
class FaultRef:
    """A fault as seen from one example."""

    label: str
    start_ns: int
    stop_ns: int | None
    relation: str


@dataclass(frozen=True)
class Example:
    """One verdict example, placed in time."""

    anomaly: str
    number: int
    fields: dict[str, Any]
    classified: str
    window: tuple[int, int] | None
    faults: list[FaultRef] | None
    faults_from_checker: bool

    @property
    def time_ns(self) -> int | None:
        """When it happened, for the timeline: the end of its window (the ack, the poll that saw it)."""
        return self.window[1] if self.window else None

    @property
    def details(self) -> dict[str, Any]:
        return {k: v for k, v in sorted(self.fields.items()) if k not in MAIN_FIELDS + SPECIAL_FIELDS}

    @property
    def leaders(self) -> list[Any] | None:
        leaders = self.fields.get("leaders")
        return leaders if isinstance(leaders, list) else None


def anomaly_order(verdict: dict[str, Any] | None, registry: Registry = REGISTRY) -> list[str]:
    """The records' anomalies first, then any other name the verdict mentions, sorted."""
    extra: set[str] = set()
    for key in ("counts", "errors", "examples"):
        section = (verdict or {}).get(key)
        if isinstance(section, dict):
            extra.update(str(k) for k in section)
    return list(registry.names) + sorted(extra - set(registry.names))


def collect_examples(run: Run, windows: list[FaultWindow], registry: Registry = REGISTRY
                     ) -> dict[str, list[Example]]:
    """Every example of the verdict, per anomaly, in the verdict's order."""
    examples = (run.verdict or {}).get("examples")
    if not isinstance(examples, dict):
        return {}
    errors = (run.verdict or {}).get("errors") or {}
    lookup = _HistoryLookup(run, examples)
    out: dict[str, list[Example]] = {}
    for name in anomaly_order(run.verdict, registry):
        rows = [row for row in examples.get(name) or [] if isinstance(row, dict)]
        placed = []
        for number, row in enumerate(rows, 1):
            window = _own_window(row) or lookup.window(row)
            default_class = "error" if name in errors else "info"
            classified = str(row.get("classified") or default_class)
            faults, from_checker = _faults(row, window, windows)
            placed.append(Example(name, number, row, classified, window, faults, from_checker))
        if placed:
            out[name] = placed
    return out


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def _own_window(row: dict[str, Any]) -> tuple[int, int] | None:
    invoke, complete, poll = _int(row.get("invoke_ns")), _int(row.get("complete_ns")), _int(row.get("poll_ns"))
    if invoke is not None:
        end = complete if complete is not None else invoke
        return min(invoke, end), max(invoke, end)
    if poll is not None:
        previous = row.get("previous")
        before = _int(previous.get("poll_ns")) if isinstance(previous, dict) else None
        return (min(before, poll), max(before, poll)) if before is not None else (poll, poll)
    evidence = [e for e in row.get("evidence") or [] if isinstance(e, dict) and _int(e.get("time_ns")) is not None]
    if evidence:
        timed = [e for e in evidence if e.get("source") != "final"] or evidence
        times = [int(e["time_ns"]) for e in timed]
        return min(times), max(times)
    time_ns = _int(row.get("time_ns"))
    return (time_ns, time_ns) if time_ns is not None else None


class _HistoryLookup:
    """Times of the examples' values and positions, from the history (only the rows needed)."""

    def __init__(self, run: Run, examples: dict[str, Any]) -> None:
        rows = [r for v in examples.values() if isinstance(v, list) for r in v if isinstance(r, dict)]
        values = {r["value"] for r in rows if isinstance(r.get("value"), str)}
        writes, reads = run.table("writes"), run.table("reads")
        self.writes: dict[str, tuple[int, int]] = {}
        for value, invoke, complete in writes.loc[writes["value"].isin(values),
                                                  ["value", "invoke_ns", "complete_ns"]].itertuples(index=False):
            if not pd.isna(invoke):
                end = int(complete) if not pd.isna(complete) else int(invoke)
                self.writes[value] = (min(int(invoke), end), max(int(invoke), end))
        first_poll = reads.loc[reads["value"].isin(values)].dropna(subset=["poll_ns"]).groupby("value")["poll_ns"].min()
        self.reads = {str(v): int(t) for v, t in first_poll.items()}
        self.run = run

    def window(self, row: dict[str, Any]) -> tuple[int, int] | None:
        value = row.get("value")
        if isinstance(value, str) and value in self.writes:
            return self.writes[value]
        if isinstance(value, str) and value in self.reads:
            return self.reads[value], self.reads[value]
        return self._position_window(row)

    def _position_window(self, row: dict[str, Any]) -> tuple[int, int] | None:
        topic, partition, offset = row.get("topic"), _int(row.get("partition")), _int(row.get("offset"))
        if topic is None or partition is None or offset is None:
            return None
        times: list[int] = []
        writes = self.run.table("writes")
        at = writes[(writes["topic"] == topic) & (writes["partition"] == partition) & (writes["offset"] == offset)]
        times += [int(t) for t in at["complete_ns"].dropna()]
        reads = self.run.table("reads")
        at = reads[(reads["topic"] == topic) & (reads["partition"] == partition) & (reads["offset"] == offset)]
        times += [int(t) for t in at.loc[at["phase"] == "live", "poll_ns"].dropna()]
        return (min(times), max(times)) if times else None


def _faults(row: dict[str, Any], window: tuple[int, int] | None,
            windows: list[FaultWindow]) -> tuple[list[FaultRef] | None, bool]:
    own = row.get("faults")
    if isinstance(own, list):
        refs = []
        for item in own:
            if not isinstance(item, dict) or _int(item.get("start_ns")) is None:
                continue
            fault = FaultWindow(str(item.get("fault") or "fault"), item.get("targets"), int(item["start_ns"]),
                                _int(item.get("stop_ns")))
            rel = relation(*window, fault.start_ns, fault.stop_ns) if window else "during"
            refs.append(FaultRef(fault.label, fault.start_ns, fault.stop_ns, rel))
        return refs, True
    if window is None:
        return None, False
    return [FaultRef(w.label, w.start_ns, w.stop_ns, relation(*window, w.start_ns, w.stop_ns))
            for w in windows_around(windows, *window)], False
