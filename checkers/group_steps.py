"""The offsets a group had committed past, as time steps cut into buckets: rewound's look-up table for Spark.

spec/history.md, contract v3, `rewound`: a group read at (t, p, o) is rewound when an acknowledged commit
of its group for (t, p) with an offset above o completed strictly before the read's poll. What a read at
time ``at`` must be compared with is the group's *passed* offset, the highest offset of its acknowledged
commits for (t, p) with ``complete_ns < at``: a step function of time per (group, topic, partition),
rising at the commits that raise it. It is known before any Spark job (the commits are loaded by
checkers.group_terms), so it enters the job as a small broadcast table, and each read finds its step by
an equality join on (group, topic, partition, bucket) and a range condition, with no shuffle and no sort
of the reads. A step covers the polls in ``(start, end]``; the buckets are ``at div width``, and a
read's bucket is capped at ``last`` (the bucket of the latest step's start), where each key's final step
(``end`` open) has a row.

Must never: start a Spark job or hold the reads.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

OPEN_END = (1 << 63) - 1  # a final step's end: no later commit raised the offset
ROWS_AIM = 200_000  # about how many rows the bucketed table may have (a broadcast table stays small)
MAX_BUCKETS = 2048  # buckets over the commits' span, fewer with many keys
KEYS = ["group", "topic", "partition"]
COLUMNS = (*KEYS, "bucket", "start", "end", "passed")


@dataclass(frozen=True)
class Steps:
    """The bucketed steps, a table of COLUMNS; a read's bucket is ``min(poll_ns div width, last)``."""

    rows: pa.Table
    width: int
    last: int


def passed_steps(acked: pa.Table) -> pd.DataFrame:
    """Per (group, topic, partition), the moments its passed offset rises: KEYS, ``start`` (the commit's
    complete_ns) and ``passed`` (the offset from then on), in time order per key. ``acked``: acknowledged
    commits (KEYS, offset, complete_ns); rows without a complete_ns never count; commits completed at
    the same moment count together."""
    done = acked.filter(pc.is_valid(acked.column("complete_ns"))).select([*KEYS, "complete_ns", "offset"])
    df = done.to_pandas().rename(columns={"complete_ns": "start"})
    df = df.sort_values([*KEYS, "start"], kind="stable")
    df["passed"] = df.groupby(KEYS, sort=False)["offset"].cummax().astype("Int64")
    df = df.drop_duplicates([*KEYS, "start"], keep="last")  # the last of equal times holds their maximum
    before = df.groupby(KEYS, sort=False)["passed"].shift(1)  # Int64: nanoseconds never pass through a float
    rises = before.isna() | (df["passed"] > before).fillna(False)
    return df[rises.astype(bool)][[*KEYS, "start", "passed"]].astype({"passed": "int64"}).reset_index(drop=True)


def bucketed(acked: pa.Table) -> Steps:
    """``acked``'s steps as the bucketed rows of Steps (see the module docstring)."""
    steps = passed_steps(acked)
    if steps.empty:
        return Steps(pa.table({c: pa.array([], pa.string() if c in KEYS[:2] else pa.int64()) for c in COLUMNS}),
                     1, 0)
    n_keys = len(steps.drop_duplicates(KEYS))
    low, high = int(steps["start"].min()), int(steps["start"].max())
    n = max(1, min(MAX_BUCKETS, ROWS_AIM // n_keys))
    width = max(1, -(-(high - low + 1) // n))
    last = high // width
    start = steps["start"].to_numpy(np.int64)
    nxt = steps.astype({"start": "Int64"}).groupby(KEYS, sort=False)["start"].shift(-1)
    end = nxt.fillna(OPEN_END).to_numpy(np.int64)
    # the polls in (start, end]: buckets (start + 1) div width to end div width, both capped at last (a final
    # step starting in the last bucket's last nanosecond still needs its row there)
    first = np.minimum((start + 1) // width, last)
    count = np.minimum(end // width, last) - first + 1
    at = np.repeat(np.arange(len(steps)), count)
    bucket = first[at] + (np.arange(len(at)) - np.repeat(np.cumsum(count) - count, count))
    rows = steps.iloc[at].reset_index(drop=True)
    rows["bucket"], rows["end"] = bucket, end[at]
    return Steps(pa.Table.from_pandas(rows[list(COLUMNS)], preserve_index=False), width, last)
