"""The pandas engine: the single-process reference implementation.

Loads `writes` and `reads` whole (validated by checkers.tables) and computes
each anomaly of spec/history.md as directly as the definitions read. It is
the oracle the Spark engine is tested against, so clarity wins over speed.
Each v1 anomaly's logic is a finder in FINDERS (contract v2's: checkers.txn_pandas; v3's: checkers.groups_pandas); which anomalies
there are, how they are judged and ordered is their records' (checkers.anomalies).

Must never: name an anomaly's rule or sort key here (the record owns them), or skip a record: an
anomaly no finder finds is a CheckerError, not a zero.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

import pandas as pd

from checkers import anomalies as a
from checkers import group_terms, groups_pandas, txn_pandas
from checkers.classify import ClientConfig, Rule
from checkers.engine import Analysis, Evidence, Position
from checkers.errors import CheckerError
from checkers.pandas_frames import PAIR_GROUP, isin, poll_anomalies, records, to_frame
from checkers.sources import TableSource
from checkers.tables import load_table

POS = ["topic", "partition", "offset"]


def is_error(rule: Rule, process: pd.Series) -> pd.Series:
    """The rule applied to each instance attributed to ``process``."""
    if rule.kind != "by-process":
        return pd.Series(rule.kind == "error", index=process.index)
    return ~process.isin(rule.info_processes) | process.isna()


@dataclass(frozen=True)
class Logs:
    """What the v1 finders read: `writes`, `reads`, and the final and live reads apart."""

    w: pd.DataFrame
    r: pd.DataFrame
    final: pd.DataFrame
    live: pd.DataFrame


# One function per group of anomalies computed together: each returns frames of instances (unclassified, in
# the instance columns it needs, with `process`) by anomaly name. A new v1 anomaly adds its finder here.
Finder = Callable[[Logs], dict[str, pd.DataFrame]]


class PandasEngine:
    """Reference engine; see the module docstring and checkers.engine.Engine."""

    name = "pandas"

    def __init__(self, registry: a.Registry = a.REGISTRY, finders: tuple[Finder, ...] | None = None) -> None:
        self.writes = pd.DataFrame()
        self.reads = pd.DataFrame()
        self.registry = registry
        self.finders = FINDERS if finders is None else finders

    def analyse(self, sources: dict[str, TableSource], configs: dict[str, ClientConfig]) -> Analysis:
        w = to_frame(load_table(sources["writes"]))
        r = to_frame(load_table(sources["reads"]))
        self.writes, self.reads = w, r
        terms = txn_pandas.prepare(sources, w, configs)  # contract v2 (None: no transactions, no sources)
        groups = group_terms.prepare(sources)  # contract v3 (None: no group commits)
        counts, errors, instances = {}, {}, {}
        for name, top in classified_instances(w, r, configs, terms, self.registry, self.finders, groups).items():
            counts[name] = len(top)
            errors[name] = int(top["is_error"].sum())
            cols = [c for c in (*a.INSTANCE_COLUMNS, "is_error") if c in top.columns]
            instances[name] = records(top.iloc[a.example_positions(errors[name], counts[name])][cols])
        return Analysis(stats={**_stats(w, r), **txn_pandas.stats(terms, r), **group_terms.stats(sources)},
                        counts=counts, errors=errors, instances=instances)

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
                         terms: txn_pandas.Terms | None = None, registry: a.Registry = a.REGISTRY,
                         finders: tuple[Finder, ...] | None = None, group_commits: group_terms.GroupTerms | None = None
                         ) -> dict[str, pd.DataFrame]:
    """Every instance of every anomaly of ``registry``, classified (``is_error``), errors first then by the
    anomaly's sort key. CheckerError when no finder (``finders``, default FINDERS; contract v2: txn_pandas;
    v3: groups_pandas, given the history's ``group_commits``) finds an anomaly of the registry."""
    logs = Logs(w, r, r[r["phase"] == "final"], r[r["phase"] == "live"])
    groups = r.loc[r["group"].notna(), "process"].unique().tolist()
    table = group_terms.restate_rules(registry.rules(configs, groups), group_commits, configs, groups, registry)
    found: dict[str, pd.DataFrame] = {}
    for finder in FINDERS if finders is None else finders:
        found.update(finder(logs))
    found.update(txn_pandas.instances(terms, w, r, table))  # contract v2: new anomalies, restated v1 ones
    found.update(groups_pandas.instances(group_commits, r, configs))  # contract v3
    out = {}
    for record in registry:
        if record.name not in found:
            raise CheckerError(f"the pandas engine has no logic for the anomaly {record.name!r}")
        frame = found[record.name].copy()
        frame["is_error"] = is_error(table[record.name], frame["process"]).astype(bool)
        keys = ["is_error", *record.sort_key]
        # nulls first, as the Spark engine orders them (a sort key's columns are never null in an instance)
        out[record.name] = frame.sort_values(keys, ascending=[False] + [True] * (len(keys) - 1), kind="stable",
                                             na_position="first")
    return out


def all_instances(sources: dict[str, TableSource], configs: dict[str, ClientConfig]
                  ) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, pd.DataFrame]]:
    """(writes, reads, every instance of every anomaly): for readers that want all of them, not examples."""
    w = to_frame(load_table(sources["writes"]))
    r = to_frame(load_table(sources["reads"]))
    return w, r, classified_instances(w, r, configs, txn_pandas.prepare(sources, w, configs),
                                      group_commits=group_terms.prepare(sources))


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


def _value_anomalies(logs: Logs) -> dict[str, pd.DataFrame]:
    w, r, final, live = logs.w, logs.r, logs.final, logs.live
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


def _divergence(logs: Logs) -> dict[str, pd.DataFrame]:
    w, r = logs.w, logs.r
    acked = w[(w["status"] == "ok") & w["partition"].notna() & w["offset"].notna()]
    evidence = pd.concat([acked[[*POS, "value"]], r[[*POS, "value"]]]).drop_duplicates()
    values = evidence.groupby(POS).size()
    return {a.DIVERGENCE: values[values >= 2].reset_index()[POS].assign(process=None)}


def _reordered(logs: Logs) -> dict[str, pd.DataFrame]:
    w, final = logs.w, logs.final
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
    return {a.REORDERED: out}


def _poll_pairs(logs: Logs) -> dict[str, pd.DataFrame]:
    return poll_anomalies(logs.live, logs.final)


FINDERS: tuple[Finder, ...] = (_value_anomalies, _divergence, _reordered, _poll_pairs)
