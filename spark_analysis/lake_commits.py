"""The lake's `commits` rows of one run (contract v3): the history's `commits` columns as they are, placed in
the run's time and among its faults.

Each row keeps its contract columns (spark_analysis.lake_tables.COMMITS) and gains `invoke_s` and `complete_s`
(seconds since the run's first write), `latency_ms` (invocation to outcome; null: no outcome arrived) and
`faults` (the labels of the fault windows active at any time between its invocation and its outcome,
comma-separated; null: none). The fault windows come labelled from the caller (spark_analysis.extract), so
this module needs nothing of it.
Must never: read files, or judge a commit (the checker's verdict counts the anomalies).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from spark_analysis import lake_tables as s

NS = 1_000_000_000

# A fault window as the lake names it: (start_ns, stop_ns or None while never stopped, label).
LabelledWindow = tuple[int, int | None, str]


def _seconds(ns: int | None, t0: int) -> float | None:
    return None if ns is None else round((ns - t0) / NS, 3)


def commit_rows(key: dict[str, Any], commits: pa.Table, windows: Sequence[LabelledWindow],
                t0: int) -> list[dict[str, Any]]:
    """Every `commits` row of the history, in its order, with its times and the faults active during it."""
    columns = [f.name for f in s.COMMITS if f.name in commits.column_names]
    ordered = sorted(windows, key=lambda w: (w[0], w[2]))
    rows = []
    for c in commits.select(columns).to_pylist():
        begin, done = c["invoke_ns"], c.get("complete_ns")
        until = done if done is not None else begin
        active = [label for start, stop, label in ordered if start <= until and (stop is None or stop >= begin)]
        rows.append({**key, **c, "invoke_s": _seconds(begin, t0), "complete_s": _seconds(done, t0),
                     "latency_ms": None if done is None else round((done - begin) / 1e6, 3),
                     "faults": ",".join(active) or None})
    return rows
