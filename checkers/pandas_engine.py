"""The pandas engine: the single-process reference implementation.

Loads `writes` and `reads` whole (validated by checkers.tables) and computes
each anomaly of spec/history.md as directly as the definitions read. It is
the oracle the Spark engine is tested against, so clarity wins over speed.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from checkers import anomalies as a
from checkers import txn_pandas
from checkers.classify import ClientConfig, Rule, rules
from checkers.engine import Analysis, Evidence, Position
from checkers.sources import TableSource
from checkers.tables import load_table

POS = ["topic", "partition", "offset"]
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


def is_error(rule: Rule, process: pd.Series) -> pd.Series:
    """The rule applied to each instance attributed to ``process``."""
    if rule.kind != "by-process":
        return pd.Series(rule.kind == "error", index=process.index)
    return ~process.isin(rule.info_processes) | process.isna()


class PandasEngine:
    """Reference engine; see the module docstring and checkers.engine.Engine."""

    name = "pandas"

    def __init__(self) -> None:
        self.writes = pd.DataFrame()
        self.reads = pd.DataFrame()

    def analyse(self, sources: dict[str, TableSource], configs: dict[str, ClientConfig]) -> Analysis:
        w = to_frame(load_table(sources["writes"]))
        r = to_frame(load_table(sources["reads"]))
        self.writes, self.reads = w, r
        terms = txn_pandas.prepare(sources, w, configs)  # contract v2 (None: no transactions, no sources)
        counts, errors, instances = {}, {}, {}
        for name, top in classified_instances(w, r, configs, terms).items():
            counts[name] = len(top)
            errors[name] = int(top["is_error"].sum())
            cols = [c for c in (*a.INSTANCE_COLUMNS, "is_error") if c in top.columns]
            instances[name] = records(top.iloc[a.example_positions(errors[name], counts[name])][cols])
        return Analysis(stats={**_stats(w, r), **txn_pandas.stats(terms, r)}, counts=counts, errors=errors, instances=instances)

    def evidence(self, values: Collection[str], positions: Collection[Position]) -> Evidence:
        def pick(frame: pd.DataFrame) -> pd.DataFrame:
            mask = frame["value"].isin(list(values))
            if positions:
                near = frame[frame["offset"].isin([p[2] for p in positions])]
                keys = list(zip(near["topic"], near["partition"], near["offset"], strict=True))
                at = pd.Series([k in set(positions) for k in keys], index=near.index, dtype=bool)
                mask = mask | at.reindex(frame.index, fill_value=False)
            return frame[mask]

        return Evidence(writes=records(pick(self.writes)), reads=records(pick(self.reads)))


def classified_instances(w: pd.DataFrame, r: pd.DataFrame, configs: dict[str, ClientConfig],
                         terms: txn_pandas.Terms | None = None) -> dict[str, pd.DataFrame]:
    """Every instance of every anomaly, classified (``is_error``), errors first then by the anomaly's sort key."""
    final, live = r[r["phase"] == "final"], r[r["phase"] == "live"]
    groups = r.loc[r["group"].notna(), "process"].unique().tolist()
    table = rules(configs, groups)
    found = {
        **_value_anomalies(w, r, final, live),
        a.DIVERGENCE: _divergence(w, r),
        a.REORDERED: _reordered(w, final),
        **_poll_anomalies(live, final),
    }
    found.update(txn_pandas.instances(terms, w, r, table))  # contract v2: new anomalies, restated v1 ones
    out = {}
    for name in a.ANOMALIES:
        frame = found[name].copy()
        frame["is_error"] = is_error(table[name], frame["process"]).astype(bool)
        keys = ["is_error", *a.SORT_KEYS[name]]
        out[name] = frame.sort_values(keys, ascending=[False] + [True] * (len(keys) - 1), kind="stable")
    return out


def all_instances(sources: dict[str, TableSource], configs: dict[str, ClientConfig]
                  ) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, pd.DataFrame]]:
    """(writes, reads, every instance of every anomaly): for readers that want all of them, not examples."""
    w = to_frame(load_table(sources["writes"]))
    r = to_frame(load_table(sources["reads"]))
    return w, r, classified_instances(w, r, configs, txn_pandas.prepare(sources, w, configs))


def _stats(w: pd.DataFrame, r: pd.DataFrame) -> dict[str, int]:
    status = w["status"].value_counts()
    phase = r["phase"].value_counts()
    return {
        "writes": len(w),
        "ok": int(status.get("ok", 0)),
        "fail": int(status.get("fail", 0)),
        "info": int(status.get("info", 0)),
        "reads": len(r),
        "live_reads": int(phase.get("live", 0)),
        "final_reads": int(phase.get("final", 0)),
    }


def _value_anomalies(
    w: pd.DataFrame, r: pd.DataFrame, final: pd.DataFrame, live: pd.DataFrame
) -> dict[str, pd.DataFrame]:
    in_final = isin(w["value"], final["value"])
    in_reads = isin(w["value"], r["value"])
    positions = final[["value", *POS]].drop_duplicates().groupby("value").size()
    duplicated = positions[positions >= 2].index
    writer = w.set_index("value")["process"]
    dup = pd.DataFrame({"value": duplicated.astype(str)})
    dup["process"] = dup["value"].map(writer)
    read_values = pd.Series(r["value"].unique())
    phantom = pd.DataFrame({"value": read_values[~isin(read_values, w["value"])]})
    live_values = pd.Series(live["value"].unique())
    vanished = pd.DataFrame({"value": live_values[~isin(live_values, final["value"])]})
    write_cols = ["value", "process", "invoke_ns"]
    return {
        a.LOST: w.loc[(w["status"] == "ok") & ~in_final, write_cols],
        a.DUPLICATE: dup,
        a.PHANTOM: phantom.assign(process=None),
        a.VANISHED_READ: vanished.assign(process=None),
        a.FAILED_PRESENT: w.loc[(w["status"] == "fail") & in_reads, write_cols],
        a.RECOVERED: w.loc[(w["status"] == "info") & in_final, write_cols],
    }


def _divergence(w: pd.DataFrame, r: pd.DataFrame) -> pd.DataFrame:
    acked = w[(w["status"] == "ok") & w["partition"].notna() & w["offset"].notna()]
    evidence = pd.concat([acked[[*POS, "value"]], r[[*POS, "value"]]]).drop_duplicates()
    values = evidence.groupby(POS).size()
    return values[values >= 2].reset_index()[POS].assign(process=None)


def _reordered(w: pd.DataFrame, final: pd.DataFrame) -> pd.DataFrame:
    placed = final.groupby("value")["offset"].min()
    ok = w[(w["status"] == "ok") & w["partition"].notna()].copy()
    ok["placed"] = ok["value"].map(placed)
    ok = ok[ok["placed"].notna()].sort_values([*PAIR_GROUP, "op_id", "value"], kind="stable")
    prev = ok.groupby(PAIR_GROUP, sort=False)[["placed", "value", "op_id"]].shift(1)
    flagged = prev["placed"].notna() & (ok["placed"] < prev["placed"])
    out = ok.loc[flagged, ["process", "topic", "partition", "op_id", "value", "placed"]]
    out = out.rename(columns={"placed": "offset"})
    out["prev_value"] = prev.loc[flagged, "value"]
    out["prev_offset"] = prev.loc[flagged, "placed"]
    out["prev_op_id"] = prev.loc[flagged, "op_id"]
    return out


def _poll_anomalies(live: pd.DataFrame, final: pd.DataFrame) -> dict[str, pd.DataFrame]:
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
