"""Synthetic consumer-group histories (contract v3), for the differential tests and the benchmark.

`grouped` turns a history of checkers.synth (whose group consumers read each partition live) into one
with group commits: each consumer commits synchronously after every ``every`` reads of a partition (the
next offset, acknowledged a millisecond after the poll), and the final drain's committed offset of each
partition is the highest acknowledged one. Then the v3 anomalies are planted (``plant``: anomaly name to
how many): rewound, a group read of a record well below a commit, polled after it; lost-commit, a final
offset behind the highest acknowledged commit (the first one null); group-skip, group reads of records
below the final offset removed; redelivered, a record read again by another member. As in checkers.synth,
the counts are for the engines to find, not promised here (planted anomalies overlap with each other and
with synth's own rewinds and skips). The same seed gives the same history.

Must never: read or write files (checkers.synth.write_history writes them).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa

from checkers import anomalies as a
from checkers.schema import arrow_schema

MS = 1_000_000
V3 = (a.GROUP_SKIP, a.REDELIVERED, a.REWOUND, a.LOST_COMMIT)


def _table(frame: pd.DataFrame, name: str) -> pa.Table:
    schema = arrow_schema(name)
    return pa.Table.from_pandas(frame[schema.names], schema=schema, preserve_index=False)


def grouped(tables: dict[str, pa.Table], seed: int = 0, every: int = 5,
            plant: dict[str, int] | None = None) -> dict[str, pa.Table]:
    """``tables`` (checkers.synth.generate's) with commits, members' commit modes and planted v3 anomalies.

    An odd seed makes every member commit `after` (group-skip an error), an even one makes the first `before`.
    """
    plant = dict.fromkeys(V3, 3) if plant is None else plant
    rng = np.random.default_rng(seed)
    r = tables["reads"].to_pandas()
    live = r[(r["phase"] == "live") & r["group"].notna()].sort_values(["process", "partition", "seq"])
    final = r[r["phase"] == "final"].drop_duplicates(["topic", "partition", "offset"])
    drop = _planted_skips(live, final, plant.get(a.GROUP_SKIP, 0), rng)
    live = live.drop(index=drop)
    extra = _planted_reads(live, final, plant, rng)
    commits = _commits(live, every)
    finals = _finals(commits, plant.get(a.LOST_COMMIT, 0), rng)
    reads = pd.concat([r.drop(index=drop), extra], ignore_index=True)
    out = dict(tables)
    out["reads"] = _table(reads, "reads")
    out["commits"] = _table(pd.concat([commits, finals], ignore_index=True), "commits")
    out["processes"] = _members(tables["processes"].to_pandas(), set(live["process"]), seed)
    return out


def _planted_skips(live: pd.DataFrame, final: pd.DataFrame, k: int, rng: np.random.Generator) -> list[int]:
    """Row labels of group reads to remove: a member never handed them, so the group skipped them."""
    if not k or live.empty:
        return []
    inner = live.groupby(["process", "partition"]).cumcount() > 0  # above the group's lowest read
    picked = rng.choice(np.flatnonzero(inner.to_numpy()), size=min(k, int(inner.sum())), replace=False)
    return list(live.index[np.sort(picked)])


def _planted_reads(live: pd.DataFrame, final: pd.DataFrame, plant: dict[str, int],
                   rng: np.random.Generator) -> pd.DataFrame:
    """Group reads added at the end of a member's reads: rewound (well below what it committed, after the commit)
    and redelivered (a record another member read, once more)."""
    rows: list[pd.Series] = []
    last = live.groupby("process").tail(1)
    seq_end = live.groupby("process")["seq"].max()
    for kind, k in ((a.REWOUND, plant.get(a.REWOUND, 0)), (a.REDELIVERED, plant.get(a.REDELIVERED, 0))):
        for i in rng.choice(len(live), size=min(k, len(live)), replace=False) if k and len(live) else []:
            src = live.iloc[int(i)]
            reader = last.iloc[int(rng.integers(0, len(last)))]
            row = src.copy()
            row["process"], row["az"] = reader["process"], reader["az"]
            row["seq"] = int(seq_end[reader["process"]]) + len(rows) + 1
            # rewound: long after every commit; redelivered: just after the original poll (nothing passed it yet)
            row["poll_ns"] = int(live["poll_ns"].max()) + (len(rows) + 1) * MS if kind == a.REWOUND \
                else int(src["poll_ns"])
            rows.append(row)
    return pd.DataFrame(rows, columns=live.columns)


def _commits(live: pd.DataFrame, every: int) -> pd.DataFrame:
    """A synchronous commit of the next offset after every ``every`` reads of a partition, and after its last."""
    n = live.groupby(["process", "partition"]).cumcount()
    last = ~live.duplicated(["process", "partition"], keep="last")
    at = live[((n + 1) % every == 0) | last]
    return pd.DataFrame({
        "process": at["process"].to_numpy(), "group": at["group"].to_numpy(),
        "kind": "sync", "topic": at["topic"].to_numpy(), "partition": at["partition"].to_numpy(),
        "offset": at["offset"].to_numpy() + 1, "status": "ok", "error": None,
        "invoke_ns": at["poll_ns"].to_numpy() + MS // 2, "complete_ns": at["poll_ns"].to_numpy() + MS,
        "az": at["az"].to_numpy()})


def _finals(commits: pd.DataFrame, lost: int, rng: np.random.Generator) -> pd.DataFrame:
    """Per (group, topic, partition): the highest acknowledged offset; ``lost`` of them behind it (the first
    null: no committed offset at all)."""
    high = commits.groupby(["group", "topic", "partition"], as_index=False)["offset"].max()
    offsets = high["offset"].astype("Int64")
    for n, i in enumerate(rng.choice(len(high), size=min(lost, len(high)), replace=False) if lost else []):
        offsets.iloc[int(i)] = pd.NA if n == 0 else max(int(offsets.iloc[int(i)]) - 3, 0)
    end = int(commits["complete_ns"].max()) + 1_000 * MS if len(commits) else 0
    return high.assign(offset=offsets, process="drain-az1", kind="final", status="ok", error=None, invoke_ns=end,
                       complete_ns=end + MS, az="az1")


def _members(processes: pd.DataFrame, members: set[str], seed: int) -> pa.Table:
    """The processes table with the members' commit modes and group settings (contract v3)."""
    names = sorted(members)
    modes = {p: ("before" if seed % 2 == 0 and i == 0 else "after") for i, p in enumerate(names)}
    processes = processes.copy()
    processes["commit"] = processes["process"].map(modes)
    config = {"group.id": "faultline-consumers", "auto.offset.reset": "earliest", "enable.auto.commit": False}
    processes.loc[processes["process"].isin(names), "config"] = json.dumps(config)
    return _table(processes, "processes")
