"""Availability per fault and AZ, from the history alone: how long each AZ's writes went unacknowledged.

For each fault window (checkers.context's pairing of `nemesis` start and stop
rows) and each AZ that wrote, from the acknowledgements (`writes` rows with
status `ok`, at their `complete_ns`) of that AZ's producers:

- `first_ack_after_start_s`: from the fault's start to the AZ's first acknowledgement at or after it
  (null: none ever came);
- `longest_gap_s`: the longest stretch inside the window (start and stop included) with no
  acknowledgement for that AZ: the whole window when none came during it;
- `first_ack_after_heal_s`: from the fault's stop to the AZ's first acknowledgement at or after it
  (null: the fault never stopped, or no acknowledgement came after);
- `acks_during`: acknowledgements inside the window; `targeted`: whether the fault's targets name the AZ
  (or one of its hosts).

Seconds are rounded to the millisecond, rows ordered by fault start then AZ, so the same
history always gives the same rows (they go into the verdict). A window never stopped ends
at the history's last time. Must never: read logs or anything outside the history directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from checkers.context import FaultTimeline, FaultWindow
from checkers.sources import TableSource, locate_history
from checkers.tables import load_table

NS = 1_000_000_000
WRITE_COLUMNS = ("az", "status", "complete_ns", "invoke_ns")


def _seconds(ns: int | None) -> float | None:
    return None if ns is None else round(ns / NS, 3)


def _names(targets: Any) -> set[str]:
    """Every string inside a fault's targets (nested lists and objects included)."""
    if isinstance(targets, str):
        return {targets}
    if isinstance(targets, dict):
        return set().union(*(_names(v) for v in targets.values())) if targets else set()
    if isinstance(targets, list | tuple):
        return set().union(*(_names(v) for v in targets)) if targets else set()
    return set()


def targets_az(targets: Any, az: str) -> bool:
    """Whether the targets name the AZ or one of its hosts (`az1`, `az1-node`)."""
    return any(name == az or name.startswith(f"{az}-") for name in _names(targets))


def ack_times(writes: pa.Table) -> dict[str, np.ndarray]:
    """Per AZ, the sorted times of its acknowledgements."""
    ok = writes.filter(pc.and_(pc.equal(writes.column("status"), "ok"), pc.is_valid(writes.column("complete_ns"))))
    azs = sorted(a for a in pc.unique(writes.column("az")).to_pylist() if a is not None)
    out: dict[str, np.ndarray] = {}
    for az in azs:
        mine = ok.filter(pc.equal(ok.column("az"), az)).column("complete_ns")
        out[az] = np.sort(mine.to_numpy().astype(np.int64)) if len(mine) else np.empty(0, dtype=np.int64)
    return out


def _row(window: FaultWindow, index: int, az: str, acks: np.ndarray, end_ns: int) -> dict[str, Any]:
    start, stop = window.start_ns, window.stop_ns
    close = stop if stop is not None else max(end_ns, start)
    first = int(np.searchsorted(acks, start, side="left"))
    inside = acks[first:int(np.searchsorted(acks, close, side="right"))]
    edges = np.concatenate(([start], inside, [close]))
    after_heal = int(np.searchsorted(acks, stop, side="left")) if stop is not None else len(acks)
    return {
        "fault_index": index,
        "fault": window.fault,
        "targets": window.targets,
        "start_ns": start,
        "stop_ns": stop,
        "az": az,
        "targeted": targets_az(window.targets, az),
        "acks_during": len(inside),
        "first_ack_after_start_s": _seconds(int(acks[first]) - start if first < len(acks) else None),
        "longest_gap_s": _seconds(int(np.max(np.diff(edges)))),
        "first_ack_after_heal_s": _seconds(int(acks[after_heal]) - stop if stop is not None and
                                           after_heal < len(acks) else None),
    }


def availability(writes: pa.Table, windows: list[FaultWindow]) -> list[dict[str, Any]]:
    """One row per fault window and AZ that wrote (see the module docstring)."""
    if not windows or writes.num_rows == 0:
        return []
    times = [pc.max(writes.column(c)).as_py() for c in ("complete_ns", "invoke_ns")]
    end_ns = max([t for t in times if t is not None] + [w.stop_ns or w.start_ns for w in windows])
    acks = ack_times(writes)
    ordered = sorted(windows, key=lambda w: (w.start_ns, w.fault or "", w.key))
    return [_row(w, i, az, acks[az], end_ns) for i, w in enumerate(ordered) for az in acks]


def writes_columns(source: TableSource) -> pa.Table:
    if source.format == "parquet":
        names = set(pq.read_schema(source.files[0]).names)
        table = pq.read_table(list(source.files), columns=[c for c in WRITE_COLUMNS if c in names])
        for col in WRITE_COLUMNS:
            if col not in table.column_names:
                table = table.append_column(col, pa.nulls(table.num_rows, pa.string() if col in ("az", "status")
                                                          else pa.int64()))
        return table.select(list(WRITE_COLUMNS))
    return load_table(source).select(list(WRITE_COLUMNS))


def availability_of(history_dir: str | Path) -> list[dict[str, Any]]:
    """The availability rows of the history in ``history_dir`` (none without a `nemesis` table)."""
    sources = locate_history(history_dir)
    if "nemesis" not in sources:
        return []
    windows = FaultTimeline(load_table(sources["nemesis"])).windows
    if not windows:
        return []
    return availability(writes_columns(sources["writes"]), windows)
