"""The producers' errors broken down by error code: how many, which outcome, where and when.

A write that failed (``fail``) or whose outcome is unknown (``info``) carries
the error name the client got (spec/history.md's ``error`` column, e.g.
``_MSG_TIMED_OUT``, ``NOT_LEADER_FOR_PARTITION``). One row per code, the most
frequent first, with its counts per outcome and per AZ and the first and
last time it was seen.
Must never: count an acknowledged write, or drop a failed write that names no error (it is "no error name").
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from checkers.leadership import natural_key
from report import fmt

NO_CODE = "no error name"


@dataclass(frozen=True)
class ErrorRow:
    """One error code's share of the failed and unknown writes."""

    code: str
    total: int
    fail: int
    info: int
    per_az: tuple[int, ...]
    first_ns: int | None
    last_ns: int | None


@dataclass(frozen=True)
class ErrorBreakdown:
    azs: tuple[str, ...]
    rows: tuple[ErrorRow, ...]

    @property
    def total(self) -> int:
        return sum(r.total for r in self.rows)


def error_breakdown(writes: pd.DataFrame, azs: pd.Series) -> ErrorBreakdown:
    """The breakdown of ``writes`` (the history table), ``azs`` each write's AZ (figures.az_of_writes)."""
    bad = writes["status"].isin(["fail", "info"])
    if not bad.any():
        return ErrorBreakdown((), ())
    frame = pd.DataFrame({
        "code": writes.loc[bad, "error"].fillna(NO_CODE).astype(str),
        "status": writes.loc[bad, "status"],
        "az": azs[bad].astype(str),
        "when": writes.loc[bad, "complete_ns"].fillna(writes.loc[bad, "invoke_ns"]),
    })
    names = tuple(sorted(set(frame["az"]), key=natural_key))
    rows = []
    for code, mine in frame.groupby("code", sort=False):
        when = mine["when"].dropna()
        by_az = mine["az"].value_counts()
        rows.append(ErrorRow(
            str(code), len(mine), int((mine["status"] == "fail").sum()), int((mine["status"] == "info").sum()),
            tuple(int(by_az.get(az, 0)) for az in names),
            int(when.min()) if len(when) else None, int(when.max()) if len(when) else None))
    rows.sort(key=lambda r: (-r.total, r.code))
    return ErrorBreakdown(names, tuple(rows))


def error_rows(breakdown: ErrorBreakdown, t0: int) -> dict[str, object]:
    """The breakdown as the template shows it."""
    return {
        "azs": list(breakdown.azs), "total": fmt.count(breakdown.total),
        "rows": [{"code": r.code, "total": fmt.count(r.total), "fail": fmt.count(r.fail), "info": fmt.count(r.info),
                  "share": fmt.percent(r.total, breakdown.total), "per_az": [fmt.count(n) for n in r.per_az],
                  "first": fmt.rel(r.first_ns, t0), "last": fmt.rel(r.last_ns, t0)} for r in breakdown.rows],
    }
