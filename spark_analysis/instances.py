"""Every anomaly instance of one run (not only the verdict's 20 examples), as rows of the lake's `anomalies`.

The instances are the pandas engine's (`checkers.pandas_engine.all_instances`, the
reference definitions of spec/history.md), in the checker's order: errors first, then
the anomaly's sort key. Each row gets a position (the acknowledged offset of its write,
else where the final log or a read held its value), a time (the send of its write, else
the poll that read it, else the first poll of its position) and the faults active then,
as the checker pairs them.
Must never: count differently from the checker (it only adds where and when).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from checkers.anomalies import ANOMALIES
from checkers.classify import ClientConfig
from checkers.context import FaultWindow
from checkers.pandas_engine import all_instances
from checkers.sources import TableSource
from spark_analysis.lake_tables import ANOMALY_ROWS

NS = 1_000_000_000
POS = ["topic", "partition", "offset"]


def _first_by_value(frame: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    return frame.dropna(subset=["value"]).drop_duplicates("value").set_index("value")[cols]


def _fill(out: pd.DataFrame, column: str, lookups: list[pd.Series]) -> None:
    values = out[column] if column in out.columns else pd.Series(pd.NA, index=out.index, dtype="object")
    for lookup in lookups:
        values = values.where(values.notna(), out["value"].map(lookup))
    out[column] = values


def _faults_at(times: pd.Series, windows: list[FaultWindow]) -> list[str]:
    """Per time, the JSON list of faults active at it (start <= t <= stop, never stopped: to the end)."""
    t = times.to_numpy(dtype="float64", na_value=np.nan)
    texts: list[list[str]] = [[] for _ in range(len(t))]
    for w in sorted(windows, key=lambda w: (w.start_ns, w.fault or "", w.key)):
        shown = json.dumps(w.as_dict(), sort_keys=True)
        stop = np.inf if w.stop_ns is None else w.stop_ns
        for i in np.flatnonzero((t >= w.start_ns) & (t <= stop)):
            texts[i].append(shown)
    return ["[" + ", ".join(x) + "]" for x in texts]


def _positions(w: pd.DataFrame, r: pd.DataFrame) -> tuple[list[pd.DataFrame], pd.Series, pd.Series]:
    acked = _first_by_value(w[(w["status"] == "ok") & w["offset"].notna()], POS)
    final = _first_by_value(r[r["phase"] == "final"].sort_values(POS, kind="stable"), POS)
    any_read = _first_by_value(r, POS)
    sent = _first_by_value(w, ["invoke_ns"])["invoke_ns"]
    polled = _first_by_value(r.sort_values("poll_ns", kind="stable"), ["poll_ns"])["poll_ns"]
    return [acked, final, any_read], sent, polled


def instance_rows(key: dict[str, Any], sources: dict[str, TableSource], configs: dict[str, ClientConfig],
                  windows: list[FaultWindow], t0: int) -> pa.Table:
    """Every instance of every anomaly of the run, one row each (schema.ANOMALY_ROWS)."""
    w, r, found = all_instances(sources, configs)
    if not any(len(f) for f in found.values()):
        return ANOMALY_ROWS.empty_table()
    places, sent, polled = _positions(w, r)
    position_poll: dict[Any, Any] | None = None  # first poll per position, built only if an instance needs it
    parts = []
    for name in ANOMALIES:
        frame = found[name]
        if frame.empty:
            continue
        out = frame.reset_index(drop=True).copy()
        if "value" not in out.columns:
            out["value"] = pd.Series([None] * len(out), dtype="object")
        for col in POS:
            _fill(out, col, [p[col] for p in places])
        when = out["invoke_ns"] if "invoke_ns" in out.columns else pd.Series(pd.NA, index=out.index)
        if "poll_ns" in out.columns:
            when = when.where(when.notna(), out["poll_ns"])
        when = when.where(when.notna(), out["value"].map(sent)).where(when.notna(), out["value"].map(polled))
        if when.isna().any():
            if position_poll is None:
                position_poll = r.groupby(POS)["poll_ns"].min().to_dict()
            at_position = pd.Series(list(zip(out["topic"], out["partition"], out["offset"], strict=True)),
                                    index=out.index).map(position_poll)
            when = when.where(when.notna(), at_position)
        parts.append(pd.DataFrame({
            "anomaly": name, "classified": np.where(out["is_error"], "error", "info"),
            "instance_index": np.arange(len(out), dtype=np.int64), "value": out["value"],
            "topic": out["topic"], "partition": out["partition"], "offset": out["offset"],
            "process": out["process"] if "process" in out.columns else None,
            "prev_value": out["prev_value"] if "prev_value" in out.columns else None,
            "prev_offset": out["prev_offset"] if "prev_offset" in out.columns else None,
            "time_ns": when.astype("Int64"),
            "t_s": ((when.astype("float64") - t0) / NS).round(3),
            "faults": _faults_at(when, windows),
        }))
    table = pd.concat(parts, ignore_index=True)
    for name, value in key.items():
        table[name] = value
    for col in ("partition", "offset", "prev_offset"):
        table[col] = table[col].astype("Int64")
    for col in ("value", "topic", "process", "prev_value"):
        table[col] = table[col].astype("object").where(table[col].notna(), None)
    return pa.Table.from_pandas(table, schema=ANOMALY_ROWS, preserve_index=False)
