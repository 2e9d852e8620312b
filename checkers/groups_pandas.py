"""Contract v3 in the pandas engine: group-skip, redelivered, rewound and lost-commit, as the definitions read.

spec/history.md, "Consumer groups and delivery semantics (contract v3)". checkers.pandas_engine calls
`instances` with the history's group terms (checkers.group_terms; None: no group commits, every frame
empty). Like the pandas engine, this is the reference the Spark engine (checkers.groups_spark) is tested
against: clarity wins over speed.

An instance is one (group, value) pair, or for lost-commit one (group, topic, partition); it names the
group's read that shows it where there is one, the first in (poll_ns, process, seq) order; a group-skip
its lowest position in F that counts, attributed to the group's least member not known to commit `after`
(else its least member), so the rule judges it by the group (checkers.group_terms.restate_rules).

Must never: name an anomaly's rule or sort key (the records own them).
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from checkers import anomalies as a
from checkers.classify import ClientConfig
from checkers.group_terms import GroupTerms, member_flags
from checkers.pandas_frames import to_frame

GTP = ["group", "topic", "partition"]
READ_COLS = ["value", "topic", "partition", "offset", "group", "process", "seq", "poll_ns"]


def _empty() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series([], dtype=object) for c in a.INSTANCE_COLUMNS})


def instances(terms: GroupTerms | None, r: pd.DataFrame, configs: Mapping[str, ClientConfig]
              ) -> dict[str, pd.DataFrame]:
    """The v3 anomalies' instances (unclassified, in the engine's instance columns); all empty without terms."""
    out = {name: _empty() for name in a.V3_ANOMALIES}
    if terms is None:
        return out
    live = r[(r["phase"] == "live") & r["group"].notna()]
    commits, finals = to_frame(terms.commits), to_frame(terms.finals)
    acked = commits[commits["status"] == "ok"]
    members = pd.concat([live[["group", "process"]], commits[["group", "process"]]]).drop_duplicates()
    out[a.REDELIVERED] = _redelivered(live)
    out[a.REWOUND] = _rewound(live, acked)
    out[a.LOST_COMMIT] = _lost_commit(acked, finals)
    out[a.GROUP_SKIP] = _group_skip(live, r[r["phase"] == "final"], finals, members, configs)
    return out


def _first_reads(reads: pd.DataFrame) -> pd.DataFrame:
    """Per (group, value): its first read, by poll time, process, seq and position."""
    order = ["group", "value", "poll_ns", "process", "seq", "topic", "partition", "offset"]
    return reads.sort_values(order, kind="stable").drop_duplicates(["group", "value"])[READ_COLS]


def _redelivered(live: pd.DataFrame) -> pd.DataFrame:
    """(group, value) pairs that two or more group reads of the group hold."""
    n = live.groupby(["group", "value"]).size()
    twice = n[n >= 2].reset_index()[["group", "value"]]
    return _first_reads(live.merge(twice, on=["group", "value"]))


def _rewound(live: pd.DataFrame, acked: pd.DataFrame) -> pd.DataFrame:
    """Group reads at an offset below an acknowledged commit of the group for that partition that completed
    strictly before the read's poll: per (group, value), the first."""
    done = acked[acked["complete_ns"].notna()].copy()
    if done.empty or live.empty:
        return _empty()
    done["complete_ns"] = done["complete_ns"].astype("int64")
    done = done.sort_values([*GTP, "complete_ns"], kind="stable")
    done["passed"] = done.groupby(GTP)["offset"].cummax().astype("int64")  # the highest offset committed by then
    reads = live.copy()
    reads["poll_ns"] = reads["poll_ns"].astype("int64")
    reads["partition"] = reads["partition"].astype("int64")
    done["partition"] = done["partition"].astype("int64")
    merged = pd.merge_asof(reads.sort_values("poll_ns", kind="stable"),
                           done.sort_values("complete_ns", kind="stable")[[*GTP, "complete_ns", "passed"]],
                           left_on="poll_ns", right_on="complete_ns", by=GTP, allow_exact_matches=False)
    hit = merged[merged["passed"].notna() & (merged["passed"] > merged["offset"].astype("float64"))]
    return _first_reads(hit)


def _lost_commit(acked: pd.DataFrame, finals: pd.DataFrame) -> pd.DataFrame:
    """(group, topic, partition) with a final row behind (or without) the greatest acknowledged offset."""
    high = acked.groupby(GTP)["offset"].max().rename("high").reset_index()
    joined = finals[[*GTP, "offset"]].merge(high, on=GTP)
    lost = joined[joined["offset"].isna() | (joined["high"] > joined["offset"]).fillna(False).astype(bool)]
    return lost[GTP].assign(process=None)


def _group_skip(live: pd.DataFrame, final: pd.DataFrame, finals: pd.DataFrame, members: pd.DataFrame,
                configs: Mapping[str, ClientConfig]) -> pd.DataFrame:
    """Values of F below a group's non-null final offset that no group read of the group holds (at or above the
    group's lowest read of that partition unless the group starts at the beginning): per (group, value), the
    lowest such position."""
    c = finals.loc[finals["offset"].notna(), [*GTP, "offset"]].rename(columns={"offset": "committed"})
    below = final[["value", "topic", "partition", "offset"]].merge(c, on=["topic", "partition"])
    below = below[below["offset"] < below["committed"]]
    held = live[["group", "value"]].drop_duplicates().assign(held=True)
    below = below.merge(held, on=["group", "value"], how="left")
    below = below[below["held"].isna()]
    low = live.groupby(GTP)["offset"].min().rename("low").reset_index()
    below = below.merge(low, on=GTP, how="left")
    flags = member_flags(zip(members["group"], members["process"], strict=True), configs)
    from_start = below["group"].map({g: f.begins for g, f in flags.items()}).fillna(False).astype(bool)
    above_low = (below["offset"] >= below["low"]).fillna(False).astype(bool)
    found = below[from_start | above_low]
    found = found.sort_values(["group", "value", "topic", "partition", "offset"], kind="stable")
    found = found.drop_duplicates(["group", "value"])[["value", "topic", "partition", "offset", "group"]]
    return found.assign(process=found["group"].map({g: f.judged_by for g, f in flags.items()}))
