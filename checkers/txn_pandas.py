"""Contract v2 in the pandas engine: the restated v1 anomalies and the six new ones, as the definitions read.

spec/history.md, "Transactions and exactly-once (contract v2)". checkers.pandas_engine calls
`prepare` (None: the history needs no v2 work, and nothing here runs), `instances` (the frames
of the restated and new anomalies, unclassified, in the engine's instance columns) and `stats`.
Like the pandas engine, this is the reference the Spark engine (checkers.txn_spark) is tested
against: clarity wins over speed.
"""

from __future__ import annotations

import pandas as pd

from checkers import anomalies as a
from checkers import txn_terms
from checkers.classify import ClientConfig, Rule
from checkers.pandas_frames import isin, poll_anomalies, to_frame
from checkers.sources import TableSource
from checkers.txn_terms import Terms

WRITE_COLS = ["value", "process", "invoke_ns"]
POS = ["topic", "partition", "offset"]


def prepare(sources: dict[str, TableSource], w: pd.DataFrame, configs: dict[str, ClientConfig]) -> Terms | None:
    """The v2 terms, or None for a history without transactions or `source` values.

    Raises HistoryError when a `writes.txn` has no `transactions` row (naming the first such transaction).
    """
    terms = txn_terms.prepare(sources, configs)
    if terms is None:
        return None
    txns = w["txn"].dropna()
    if len(txns):
        known = pd.Series(terms.transactions.column("txn").to_pylist() if terms.transactions else [], dtype=object)
        missing = txns[~isin(txns, known)]
        if len(missing):
            raise txn_terms.missing_row(sources, str(missing.min()))
    return terms


def stats(terms: Terms | None, r: pd.DataFrame) -> dict[str, int]:
    """The transaction stats; with v2 terms also the final reads by read_committed processes."""
    if terms is None:
        return txn_terms.stats(None)
    rc_final = (r["phase"] == "final") & r["process"].isin(terms.read_committed)
    return txn_terms.stats(terms, int(rc_final.sum()))


def _empty() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series([], dtype=object) for c in a.INSTANCE_COLUMNS})


def instances(terms: Terms | None, w: pd.DataFrame, r: pd.DataFrame, table: dict[str, Rule]
              ) -> dict[str, pd.DataFrame]:
    """The v2 anomalies' instances, and the restated v1 ones when the history has transactions.

    Without terms: every v2 anomaly empty, the v1 frames left as they are.
    """
    out = {name: _empty() for name in a.V2_ANOMALIES}
    if terms is None:
        return out
    final = r[r["phase"] == "final"]
    rc_read = r["process"].isin(terms.read_committed)
    frc, fru = final[rc_read[final.index]], final[~rc_read[final.index]]
    o = frc if len(frc) else final
    in_o = isin(w["value"], o["value"])
    if terms.has_transactions:
        out.update(_transactional(terms, w, r, final, frc, fru, rc_read, table))
    if terms.source_maybe:
        out[a.REPROCESSED] = _reprocessed(w, in_o, table[a.REPROCESSED])
    if terms.consumed_high:
        out[a.SKIPPED_INPUT] = _skipped_input(w, o, in_o, terms.consumed_high)
    return out


def _transactional(terms: Terms, w: pd.DataFrame, r: pd.DataFrame, final: pd.DataFrame, frc: pd.DataFrame,
                   fru: pd.DataFrame, rc_read: pd.Series, table: dict[str, Rule]) -> dict[str, pd.DataFrame]:
    assert terms.transactions is not None
    t = to_frame(terms.transactions).set_index("txn")
    in_txn = w["txn"].notna()
    tstatus = w["txn"].map(t["status"])
    intent = w["txn"].map(t["intent"])
    end_ns = w["txn"].map(t["end_ns"])
    acked = (~in_txn & (w["status"] == "ok")) | (in_txn & (tstatus == "ok"))
    aborted = in_txn & (tstatus == "fail")
    unknown = (~in_txn & (w["status"] == "info")) | (in_txn & (tstatus == "info"))
    in_f, in_frc = isin(w["value"], final["value"]), isin(w["value"], frc["value"])
    live_values = pd.Series(r.loc[r["phase"] == "live", "value"].unique(), dtype=object)
    vanished = live_values[~isin(live_values, final["value"]) & ~isin(live_values, w.loc[aborted, "value"])]
    rc = r[rc_read]
    first_rc_poll = w["value"].map(rc.groupby("value")["poll_ns"].min())
    early = (intent == "abort") | end_ns.isna() | (end_ns > first_rc_poll)
    live = r[r["phase"] == "live"]
    rc_live = live["process"].isin(terms.read_committed)
    skips = pd.concat([poll_anomalies(live[rc_live], frc)[a.POLL_SKIP],
                       poll_anomalies(live[~rc_live], final)[a.POLL_SKIP]])
    out = {
        a.LOST: w.loc[acked & ~in_f, WRITE_COLS],
        a.VANISHED_READ: pd.DataFrame({"value": vanished, "process": None}),
        a.RECOVERED: w.loc[unknown & in_f.where(~in_txn, in_frc), WRITE_COLS],
        a.POLL_SKIP: skips,
        a.ABORTED_READ: w.loc[aborted & isin(w["value"], rc["value"]), WRITE_COLS],
        a.UNCOMMITTED_READ: w.loc[in_txn & first_rc_poll.notna() & early.fillna(False).astype(bool), WRITE_COLS],
        a.TORN_TRANSACTION: _torn(w[in_txn & tstatus.isin(["ok", "info"])], in_frc),
    }
    if len(frc):
        out[a.UNREADABLE] = w.loc[acked & isin(w["value"], fru["value"]) & ~in_frc, WRITE_COLS]
    return out


def _torn(w: pd.DataFrame, in_frc: pd.Series) -> pd.DataFrame:
    """Per transaction with a value in Frc and an `ok` write missing from it: its first missing write."""
    inside = in_frc[w.index]
    present = w[inside].groupby("txn")["value"].min()
    missing = w[~inside & (w["status"] == "ok")].sort_values("value", kind="stable").drop_duplicates("txn")
    torn = missing[missing["txn"].isin(present.index)]
    return torn[WRITE_COLS].assign(prev_value=torn["txn"].map(present))


def _reprocessed(w: pd.DataFrame, in_o: pd.Series, rule: Rule) -> pd.DataFrame:
    """Per source value named by two or more values of O: attributed to a strictly judged writer if any."""
    outputs = w[w["source"].notna() & in_o]
    n = outputs.groupby("source")["value"].nunique()
    twice = outputs[outputs["source"].isin(n[n >= 2].index)]
    strict = twice[twice["process"].isna() | ~twice["process"].isin(rule.info_processes)]
    found = twice.groupby("source").agg(prev_value=("value", "min"), any_process=("process", "min"))
    found["process"] = strict.groupby("source")["process"].min().reindex(found.index)
    found["process"] = found["process"].where(found["process"].notna(), found["any_process"])
    return found.reset_index().rename(columns={"source": "value"})[["value", "process", "prev_value"]]


def _skipped_input(w: pd.DataFrame, o: pd.DataFrame, in_o: pd.Series,
                   high: dict[txn_terms.Partition, int]) -> pd.DataFrame:
    """Values of O below the committed consumed offset of their partition, named as no O value's source."""
    limit = pd.Series([high.get((t, int(p))) for t, p in zip(o["topic"], o["partition"], strict=True)],
                      index=o.index, dtype="Int64")
    below = o[(o["offset"] < limit).fillna(False).astype(bool)]
    named = w.loc[in_o & w["source"].notna(), "source"]
    values = pd.Series(below["value"].unique(), dtype=object)
    values = values[~isin(values, named)]
    writer = w.set_index("value")
    return pd.DataFrame({"value": values, "process": values.map(writer["process"]),
                         "invoke_ns": values.map(writer["invoke_ns"]).astype("Int64")})
