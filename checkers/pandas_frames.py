"""pandas helpers both pandas modules of the checker use (checkers.pandas_engine, checkers.txn_pandas).

Arrow tables as pandas frames with exact integers, rows as plain Python values, a fast ``isin`` for
text columns, and the live poll pairs (nonmonotonic-poll and poll-skip), which contract v2 runs again
per isolation level. A base module: it imports no other module of the checker that uses pandas.
Must never: import checkers.pandas_engine or checkers.txn_pandas (they import it).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from checkers import anomalies as a

PAIR_GROUP = ["process", "topic", "partition"]


def to_frame(table: pa.Table) -> pd.DataFrame:
    """Arrow to pandas keeping integers exact (nullable Int64, never float)."""
    return table.to_pandas(types_mapper={pa.int64(): pd.Int64Dtype()}.get)


def plain(value: Any) -> Any:
    """A pandas/numpy scalar as a plain Python value (NA as None)."""
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as dicts of plain Python values."""
    return [{k: plain(v) for k, v in row.items()} for row in frame.to_dict("records")]


def isin(series: pd.Series, values: pd.Series) -> pd.Series:
    """``series.isin(values)`` for text columns, through Arrow: pandas 3 checks Arrow-backed strings one
    Python object at a time (1.5 s for 100k values), Arrow hashes them (milliseconds). Null is never in."""
    if series.empty:
        return pd.Series(False, index=series.index, dtype=bool)
    found = pc.is_in(pa.array(series, type=pa.string()), value_set=pa.array(values, type=pa.string()).unique())
    return pd.Series(found.fill_null(False).to_numpy(zero_copy_only=False), index=series.index, dtype=bool)


def poll_anomalies(live: pd.DataFrame, final: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """nonmonotonic-poll and poll-skip: adjacent live reads of one process and partition whose offset did not
    advance, or advanced past an offset ``final`` holds."""
    cols = ["process", "topic", "partition", "seq", "offset", "value", "poll_ns"]
    reads = live[cols].sort_values(["process", "topic", "partition", "seq", "offset", "value"], kind="stable")
    prev = reads.groupby(PAIR_GROUP, sort=False)[["offset", "value", "seq", "poll_ns"]].shift(1)
    pairs = reads.assign(
        prev_offset=prev["offset"],
        prev_value=prev["value"],
        prev_seq=prev["seq"],
        prev_poll_ns=prev["poll_ns"],
    )
    pairs = pairs[pairs["prev_offset"].notna()]
    nonmonotonic = pairs[pairs["offset"] <= pairs["prev_offset"]]
    gaps = pairs[pairs["offset"] > pairs["prev_offset"] + 1]
    skipped = np.zeros(len(gaps), dtype=bool)
    held = final.groupby(["topic", "partition"])["offset"].unique()
    for key, group in gaps.groupby(["topic", "partition"], sort=False).indices.items():
        if key not in held.index:
            continue
        offsets = np.sort(np.asarray(held[key], dtype=np.int64))
        lo = gaps["prev_offset"].to_numpy(dtype=np.int64)[group]
        hi = gaps["offset"].to_numpy(dtype=np.int64)[group]
        nxt = np.searchsorted(offsets, lo, side="right")
        has = nxt < len(offsets)
        has[has] = offsets[nxt[has]] < hi[has]
        skipped[group] = has
    return {a.NONMONOTONIC_POLL: nonmonotonic, a.POLL_SKIP: gaps[skipped]}
