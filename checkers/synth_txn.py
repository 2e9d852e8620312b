"""Synthetic transactional histories (contract v2), for the differential tests and a later benchmark.

`transactional` turns a history of checkers.synth into one whose producers write in transactions:
each producer's sends are cut into transactions of ``txn_size`` consecutive op_ids, each committed,
aborted or of unknown outcome; the first drain reads read_committed (it skips aborted values, as Kafka
does) and the others read_uncommitted; a few outputs name inputs as their `source`, and some committed
transactions record consumed offsets. The v2 anomalies are planted on request (``plant``: anomaly
name to how many); like checkers.synth, the counts are for the engines to find, not promised here
(planted anomalies overlap with each other and with the v1 ones). The same seed gives the same history.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa

from checkers import anomalies as a
from checkers.schema import arrow_schema

MS = 1_000_000


def _table(frame: pd.DataFrame, name: str) -> pa.Table:
    schema = arrow_schema(name)
    # a column the contract added later (processes.commit, v3) is null here
    return pa.Table.from_pandas(frame.reindex(columns=schema.names), schema=schema, preserve_index=False)


def transactional(tables: dict[str, pa.Table], seed: int = 0, txn_size: int = 5, abort_rate: float = 0.1,
                  unknown_rate: float = 0.05, plant: dict[str, int] | None = None) -> dict[str, pa.Table]:
    """``tables`` (checkers.synth.generate's) with transactions, read_committed drains and planted v2 anomalies."""
    plant = dict.fromkeys(a.V2_ANOMALIES, 3) if plant is None else plant
    rng = np.random.default_rng(seed)
    w = tables["writes"].to_pandas()
    r = tables["reads"].to_pandas()
    w["txn"] = w["process"] + "-t" + (w["op_id"] // txn_size).astype(str)
    w["source"] = None
    t = w.groupby("txn", sort=True).agg(process=("process", "first"), begin_ns=("invoke_ns", "min"),
                                         last_ns=("invoke_ns", "max")).reset_index()
    roll = rng.random(len(t))
    t["status"] = np.where(roll < abort_rate, "fail", np.where(roll < abort_rate + unknown_rate, "info", "ok"))
    t["intent"] = np.where(t["status"] == "fail", "abort", "commit")
    t["end_ns"] = t["last_ns"] + 30 * MS
    t["complete_ns"] = t["end_ns"] + 5 * MS
    t["error"] = t["status"].map({"info": "_TIMED_OUT"})  # NaN elsewhere: null
    t[["group", "consumed"]] = None
    t["az"] = None
    ended = t["status"] == "info"
    never = ended & (rng.random(len(t)) < 0.5)  # an unknown outcome: the process ended before commit was called
    t.loc[never, ["intent", "end_ns", "complete_ns"]] = None

    drains = sorted(r.loc[r["phase"] == "final", "process"].unique())
    rc_drain = drains[0]
    status = w["txn"].map(t.set_index("txn")["status"])
    aborted_values = set(w.loc[status == "fail", "value"])
    is_rc = r["process"] == rc_drain
    keep = ~(is_rc & r["value"].isin(aborted_values))
    # aborted-read: the read_committed drain returns a few aborted values after all
    shown = rng.permutation(sorted(aborted_values))[: plant.get(a.ABORTED_READ, 0)]
    keep |= is_rc & r["value"].isin(set(shown))
    # torn-transaction and unreadable: a committed value the read_committed drain never returned
    committed = w.loc[(status == "ok") & w["offset"].notna(), "value"].to_numpy()
    hidden = rng.permutation(committed)[: plant.get(a.TORN_TRANSACTION, 0) + plant.get(a.UNREADABLE, 0)]
    keep &= ~(is_rc & r["value"].isin(set(hidden)))
    r = r[keep].copy()
    # uncommitted-read: the commit of a few transactions whose values the drain read was asked only after it
    read_txns = sorted(set(w.loc[w["value"].isin(set(r.loc[r["process"] == rc_drain, "value"])), "txn"]))
    late = rng.permutation(read_txns)[: plant.get(a.UNCOMMITTED_READ, 0)]
    t.loc[t["txn"].isin(set(late)), ["end_ns", "complete_ns"]] = int(r["poll_ns"].max()) + 10**9
    _sources(w, r, rc_drain, rng, plant)
    _consumed(t, w, status, rng, plant)

    processes = tables["processes"].to_pandas()
    producers = processes["role"] == "producer"
    processes.loc[producers, "config"] = [json.dumps({"acks": "all", "transactional.id": p})
                                          for p in processes.loc[producers, "process"]]
    readers = pd.DataFrame({"process": drains, "role": "drain", "az": None,
                            "config": [json.dumps({"isolation.level": "read_committed" if d == rc_drain
                                                   else "read_uncommitted"}) for d in drains]})
    return {**tables, "writes": _table(w, "writes"), "reads": _table(r, "reads"),
            "transactions": _table(t, "transactions"), "processes": _table(pd.concat([processes, readers]), "processes")}


def _sources(w: pd.DataFrame, r: pd.DataFrame, rc_drain: str, rng: np.random.Generator,
             plant: dict[str, int]) -> None:
    """reprocessed: pairs of values the drain read name one input as their source."""
    seen = np.asarray(sorted(set(r.loc[r["process"] == rc_drain, "value"])), dtype=object)
    k = plant.get(a.REPROCESSED, 0)
    if len(seen) < 3 * k:
        return
    picked = rng.permutation(seen)[: 3 * k].reshape(k, 3) if k else np.empty((0, 3), dtype=object)
    for source, out1, out2 in picked.tolist():
        w.loc[w["value"].isin([out1, out2]), "source"] = source


def _consumed(t: pd.DataFrame, w: pd.DataFrame, status: pd.Series, rng: np.random.Generator,
              plant: dict[str, int]) -> None:
    """skipped-input: a committed transaction marks the first few offsets of a partition consumed."""
    k = plant.get(a.SKIPPED_INPUT, 0)
    ok = t.index[t["status"] == "ok"]
    if not k or not len(ok):
        return
    topic, partition = w["topic"].iloc[0], int(w["partition"].iloc[0])
    row = ok[int(rng.integers(0, len(ok)))]
    t.loc[row, "group"] = "faultline-transformers"
    t.loc[row, "consumed"] = json.dumps([{"topic": topic, "partition": partition, "offset": k}])
