"""Who each observer believed led each partition, and who it believed was controller, over time.

From the ``observations`` table: each observer's row holds from its time to
its next row. Observers poll on a period; where one falls silent for more
than GAP_FACTOR periods its view is shown as unknown in between, not
stretched. A *disagreement* is a stretch of time in which the observers'
views in effect name two or more different brokers: two leaders at once
(or two controllers), the split brain the report must make stand out.

Which disagreements count as a scenario's observed facts is decided once, in
``checkers.facts``; the report and the verdict both read them from there.
Must never: read files (it works on the table it is handed) or import the
report.
"""

from __future__ import annotations

import json
import re
import statistics
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import pandas as pd

GAP_FACTOR = 3
DEFAULT_PERIOD_NS = 1_000_000_000  # one second, where no observer polled twice


@dataclass(frozen=True)
class Segment:
    """One observer's unchanged view from ``start_ns`` to ``end_ns``."""

    observer: str
    start_ns: int
    end_ns: int
    broker: int | None
    epoch: int | None = None
    isr: str = ""


@dataclass(frozen=True)
class Disagreement:
    """A stretch in which observers named different brokers.

    ``claims`` maps each broker named to the observers naming it, as they stood for the longest unchanged part
    of the stretch (``longest_ns``).
    """

    start_ns: int
    end_ns: int
    claims: tuple[tuple[int, tuple[str, ...]], ...]
    longest_ns: int = 0

    @property
    def brokers(self) -> tuple[int, ...]:
        return tuple(b for b, _ in self.claims)


def natural_key(text: str) -> tuple[Any, ...]:
    """"broker-10" after "broker-9"."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text))


def observation_period(observations: pd.DataFrame) -> int:
    """The observers' usual polling period: the median gap between one observer's rows."""
    gaps: list[int] = []
    for _, times in observations.dropna(subset=["time_ns"]).groupby("observer")["time_ns"]:
        unique = sorted({int(t) for t in times})
        gaps += [b - a for a, b in zip(unique, unique[1:], strict=False) if b > a]
    return int(statistics.median(gaps)) if gaps else DEFAULT_PERIOD_NS


def _optional_int(value: Any) -> int | None:
    return None if value is None or pd.isna(value) else int(value)


def _segments(observer: str, rows: list[tuple[int, int | None, int | None, str]], period: int) -> list[Segment]:
    """Rows (time, broker, epoch, isr) of one observer, sorted, as merged segments."""
    out: list[Segment] = []
    for i, (time_ns, broker, epoch, isr) in enumerate(rows):
        following = rows[i + 1][0] if i + 1 < len(rows) else None
        end = following if following is not None and following - time_ns <= GAP_FACTOR * period else time_ns + period
        last = out[-1] if out else None
        if last and last.end_ns == time_ns and (last.broker, last.epoch, last.isr) == (broker, epoch, isr):
            out[-1] = Segment(observer, last.start_ns, end, broker, epoch, isr)
        else:
            out.append(Segment(observer, time_ns, end, broker, epoch, isr))
    return out


def _isr_text(value: Any) -> str:
    """The ISR as "[0, 1, 2]", whether the cell holds a list or its JSON text (report tables keep it as text)."""
    parsed = value
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
    if isinstance(parsed, list):
        return "[" + ", ".join(str(v) for v in parsed) + "]"
    return "" if parsed is None else str(parsed)


def partition_views(observations: pd.DataFrame) -> dict[tuple[str, int], list[Segment]]:
    """Per (topic, partition): every observer's leader view as segments, observers in natural order."""
    period = observation_period(observations)
    frame = observations.dropna(subset=["time_ns", "topic", "partition", "observer"])
    rows: dict[tuple[str, int], dict[str, list[tuple[int, int | None, int | None, str]]]] = defaultdict(
        lambda: defaultdict(list))
    for t, observer, topic, partition, leader, epoch, isr in frame[
        ["time_ns", "observer", "topic", "partition", "leader", "leader_epoch", "isr"]
    ].itertuples(index=False):
        rows[(str(topic), int(partition))][str(observer)].append(
            (int(t), _optional_int(leader), _optional_int(epoch), _isr_text(isr)))
    views: dict[tuple[str, int], list[Segment]] = {}
    for key in sorted(rows, key=lambda k: (natural_key(k[0]), k[1])):
        views[key] = [
            seg
            for observer in sorted(rows[key], key=natural_key)
            for seg in _segments(observer, sorted(set(rows[key][observer]), key=_row_order), period)
        ]
    return views


def _row_order(row: tuple[int, int | None, int | None, str]) -> tuple[int, int, int, str]:
    return row[0], -1 if row[1] is None else row[1], -1 if row[2] is None else row[2], row[3]


def controller_views(observations: pd.DataFrame) -> list[Segment]:
    """Every observer's controller view as segments (one row per observer and time: the first non-null)."""
    period = observation_period(observations)
    frame = observations.dropna(subset=["time_ns", "observer"])
    latest: dict[str, dict[int, int | None]] = defaultdict(dict)
    for t, observer, controller in frame[["time_ns", "observer", "controller"]].itertuples(index=False):
        seen = latest[str(observer)]
        value = _optional_int(controller)
        if seen.get(int(t)) is None:
            seen[int(t)] = value
    return [
        seg
        for observer in sorted(latest, key=natural_key)
        for seg in _segments(observer, [(t, c, None, "") for t, c in sorted(latest[observer].items())], period)
    ]


def disagreements(segments: list[Segment], shortest_ns: int = 0) -> list[Disagreement]:
    """Stretches where the views in effect name two or more brokers, merged where contiguous and alike.

    Stretches shorter than ``shortest_ns`` are left out: observers poll at slightly different moments, so
    every change of leader shows as a disagreement of a few milliseconds that nobody needs to see.
    """
    events = sorted({s.start_ns for s in segments} | {s.end_ns for s in segments})
    ordered = sorted(segments, key=lambda s: s.start_ns)
    out: list[Disagreement] = []
    active: list[Segment] = []
    index = 0
    for lo, hi in zip(events, events[1:], strict=False):
        active = [s for s in active if s.end_ns > lo]
        while index < len(ordered) and ordered[index].start_ns <= lo:
            if ordered[index].end_ns > lo:
                active.append(ordered[index])
            index += 1
        claims: dict[int, set[str]] = defaultdict(set)
        for seg in active:
            if seg.broker is not None:
                claims[seg.broker].add(seg.observer)
        if len(claims) < 2:
            continue
        shaped = tuple((b, tuple(sorted(claims[b], key=natural_key))) for b in sorted(claims))
        last = out[-1] if out else None
        if last and last.end_ns == lo and last.brokers == tuple(sorted(claims)):
            # Who believed what: as it stood for the longest part of the stretch, not every passing view.
            longest = last.claims if last.longest_ns >= hi - lo else shaped
            out[-1] = Disagreement(last.start_ns, hi, longest, max(last.longest_ns, hi - lo))
        else:
            out.append(Disagreement(lo, hi, shaped, hi - lo))
    return [d for d in out if d.end_ns - d.start_ns >= shortest_ns]
