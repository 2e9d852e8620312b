"""Counts that restate another count (contract v2), computed from the history, so a report can say so.

Two of contract v2's anomalies can count again what another already counted (spec/history.md allows both):

- `uncommitted-read` and `aborted-read`: a read_committed read of a value whose transaction was aborted counts as
  `aborted-read`, and, when the transaction was never asked to commit before the read (an abort-intent one: the
  before-abort configuration of txn-delayed-endtxn), as `uncommitted-read` too. `same_as_aborted` is how many of the
  `uncommitted-read` values are `aborted-read` values.
- `torn-transaction` and `unreadable`: a committed transaction behind a last stable offset that never advanced (a
  hanging transaction) has its values in the stuck partition read only read_uncommitted: they are `unreadable`,
  and the transaction, whose other partitions were read read_committed, is torn. `torn_by_unreadable` is how many
  torn transactions are torn only by `unreadable` values (every acknowledged value missing from the
  read_committed drain was read by a read_uncommitted one), and `their_unreadable` how many values those are.

Pure pandas over the history tables; the definitions are spec/history.md's, read as checkers.txn_pandas reads them.
Must never: change a count or a verdict (these are notes about counts, not anomalies).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import pandas as pd


@dataclass(frozen=True)
class Restated:
    uncommitted_read: int = 0  # distinct uncommitted-read values
    same_as_aborted: int = 0  # of those, values that are aborted-read values too
    torn: int = 0  # torn transactions
    torn_by_unreadable: int = 0  # of those, transactions torn only by unreadable values
    their_unreadable: int = 0  # the unreadable values of those transactions


def restated(writes: pd.DataFrame, reads: pd.DataFrame, txns: pd.DataFrame,
             read_committed: Collection[str]) -> Restated:
    """The overlaps of one history: writes, reads and transactions as the history's tables hold them."""
    if txns.empty or "txn" not in writes or writes["txn"].isna().all() or reads.empty:
        return Restated()
    t = txns.drop_duplicates("txn").set_index("txn")
    w = writes[writes["txn"].notna()].copy()
    w["tstatus"], w["intent"], w["end_ns"] = (w["txn"].map(t[c]) for c in ("status", "intent", "end_ns"))
    rc = reads[reads["process"].isin(list(read_committed))]
    final = reads[reads["phase"] == "final"]
    frc = set(final.loc[final["process"].isin(list(read_committed)), "value"])
    fru = set(final.loc[~final["process"].isin(list(read_committed)), "value"])
    first_rc = w["value"].map(rc.groupby("value")["poll_ns"].min())
    read_rc = first_rc.notna()
    end_ns = pd.to_numeric(w["end_ns"], errors="coerce")
    early = (w["intent"] == "abort") | end_ns.isna() | (end_ns > first_rc)
    uncommitted = set(w.loc[read_rc & early.fillna(False).astype(bool), "value"])
    aborted = set(w.loc[read_rc & (w["tstatus"] == "fail"), "value"])
    kept = w[w["tstatus"].isin(["ok", "info"])]
    inside = kept["value"].isin(frc)
    missing = ~inside & (kept["status"] == "ok")
    per = pd.DataFrame({"inside": inside, "missing": missing, "unreadable": missing & kept["value"].isin(fru),
                        "ok": kept["tstatus"] == "ok", "txn": kept["txn"]}).groupby("txn").agg(
        inside=("inside", "any"), missing=("missing", "sum"), unreadable=("unreadable", "sum"), ok=("ok", "all"))
    torn = per[per["inside"] & (per["missing"] > 0)]
    only = torn[torn["ok"] & (torn["unreadable"] == torn["missing"])]
    torn, by_unreadable, values = len(torn), len(only), int(only["missing"].sum())
    return Restated(len(uncommitted), len(uncommitted & aborted), torn, by_unreadable, values)


def notes(r: Restated, counts: dict[str, int]) -> list[tuple[str, str]]:
    """(anomaly, sentence) for each count of the verdict that restates another, in the report's words."""
    out = []
    if counts.get("uncommitted-read", 0) and r.same_as_aborted:
        out.append(("uncommitted-read", f"{r.same_as_aborted} of these {r.uncommitted_read} values are the same values "
                    "as aborted-read: a read_committed read of an aborted, abort-intent transaction's value counts in "
                    "both, so they are one finding, not two"))
    if counts.get("torn-transaction", 0) and r.torn_by_unreadable:
        out.append(("torn-transaction", f"{r.torn_by_unreadable} of these {r.torn} transactions are torn only by "
                    f"values counted unreadable ({r.their_unreadable} values, read read_uncommitted and never "
                    "read_committed): a last stable offset that never advanced, counted a second time"))
    return out
