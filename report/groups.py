"""The consumer-groups view of report.html (contract v3): per group, who read which partition when, how its
members' commits went, and where the group's committed offsets ended against the log.

- Reads per partition: the history keeps no assignment table (a member's ``rebalance`` journal lines stay in
  its journal), so each member's live group reads stand in for its assignment: one lane per (member,
  partition), drawn where the member was handed records of that partition in a second, against the fault
  bands; its commits that failed (`fail`) or ended unknown (`info`) are marked on the same lane.
- Commits: per member, its commit mode (`processes.commit`), its commits by status and the errors of those
  that did not succeed.
- Committed offsets: per partition, the group's `final` offset (what the drain read after the heal), the
  highest acknowledged commit, and the log end (the final drain's last offset + 1): what the group had not
  consumed at the end, and a kept offset behind an acknowledged one (a lost commit).

A history without a `commits` row has no group commits (contract v3): no view. The v3 anomalies' examples
stay in the anomalies section (report.anomalies); this view counts each group's examples and links there.
Must never: judge anything (the checker's verdict counts the anomalies) or read files (report.loaded_run does).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from checkers.anomalies import REGISTRY, Registry
from checkers.leadership import natural_key
from report import fmt
from report.anomalies import Example
from report.faults import FaultEvent, FaultWindow
from report.figures import ERROR_COLOR, SERIES_COLORS, Frame, add_faults, base_layout

STATUSES = ("ok", "fail", "info")
MAX_LANES = 40  # (member, partition) lanes drawn per group
LANE_PX = 22


def _where(topic: Any, partition: Any) -> str:
    return f"{topic}/{int(partition)}"


def _int_or_none(value: Any) -> int | None:
    return None if value is None or pd.isna(value) else int(value)


def group_reads(reads: pd.DataFrame) -> pd.DataFrame:
    """The live reads of group members (contract v3's group reads)."""
    return reads[(reads["phase"] == "live") & reads["group"].notna()]


def members(reads: pd.DataFrame, commits: pd.DataFrame, group: str) -> list[str]:
    """G's members: the processes with a group read of G or a non-final commit of G, in natural order."""
    found = set(reads.loc[reads["group"] == group, "process"].dropna())
    own = commits[(commits["group"] == group) & (commits["kind"] != "final")]
    return sorted(found | set(own["process"].dropna()), key=natural_key)


def read_spans(reads: pd.DataFrame, frame: Frame) -> dict[tuple[str, str], list[tuple[int, int]]]:
    """(member, "topic/partition") -> [first second, last second + 1) runs of seconds in which it read there."""
    if reads.empty:
        return {}
    second = ((reads["poll_ns"].astype("int64") - frame.t0) // fmt.NS).clip(lower=0)
    keyed = pd.DataFrame({"process": reads["process"], "where": [_where(t, p) for t, p in
                                                                  zip(reads["topic"], reads["partition"], strict=True)],
                          "second": second})
    spans: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for (process, where), rows in keyed.groupby(["process", "where"], sort=False):
        runs: list[tuple[int, int]] = []
        for s in sorted(set(int(x) for x in rows["second"])):
            if runs and runs[-1][1] == s:
                runs[-1] = (runs[-1][0], s + 1)
            else:
                runs.append((s, s + 1))
        spans[(str(process), str(where))] = runs
    return spans


def member_rows(group: str, reads: pd.DataFrame, commits: pd.DataFrame, processes: pd.DataFrame) -> list[dict[str, Any]]:
    """Per member: commit mode, AZ, reads, partitions read, commits by status, the errors of the unsuccessful."""
    modes = {str(p): m for p, m in zip(processes["process"], processes["commit"], strict=True) if p is not None}
    mine = commits[(commits["group"] == group) & (commits["kind"] != "final")]
    rows = []
    for member in members(reads, commits, group):
        got = reads[(reads["group"] == group) & (reads["process"] == member)]
        made = mine[mine["process"] == member]
        status = made["status"].value_counts()
        errors = Counter(str(e) for e in made.loc[made["status"] != "ok", "error"] if e is not None)
        parts = sorted({_where(t, p) for t, p in zip(got["topic"], got["partition"], strict=True)}, key=natural_key)
        rows.append({
            "process": member, "mode": modes.get(member) or "—", "az": next(iter(got["az"].dropna()), "") or "",
            "reads": fmt.count(len(got)), "partitions": ", ".join(parts) or "—",
            "kinds": ", ".join(f"{k} {n}" for k, n in sorted(made["kind"].value_counts().items())) or "—",
            **{s: fmt.count(int(status.get(s, 0))) for s in STATUSES},
            "errors": ", ".join(f"{e} ×{n}" for e, n in sorted(errors.items(), key=lambda kv: (-kv[1], kv[0]))),
        })
    return rows


def offset_rows(group: str, reads: pd.DataFrame, commits: pd.DataFrame) -> list[dict[str, Any]]:
    """Per partition of G (its final rows and the partitions its members read or committed): the final committed
    offset, the highest acknowledged commit, the log end (F's last offset + 1) and how far the group was behind."""
    mine = commits[commits["group"] == group]
    finals = mine[mine["kind"] == "final"]
    acked = mine[(mine["kind"] != "final") & (mine["status"] == "ok")]
    final_log = reads[reads["phase"] == "final"]
    ends = final_log.groupby(["topic", "partition"])["offset"].max()
    live = group_reads(reads)
    live = live[live["group"] == group]
    keys = {(str(t), int(p)) for t, p in zip(mine["topic"], mine["partition"], strict=True)}
    keys |= {(str(t), int(p)) for t, p in zip(live["topic"], live["partition"], strict=True)}
    rows = []
    for topic, partition in sorted(keys, key=lambda k: (natural_key(k[0]), k[1])):
        at = (finals["topic"] == topic) & (finals["partition"] == partition)
        final = _int_or_none(finals.loc[at, "offset"].iloc[0]) if at.any() else None
        best = acked.loc[(acked["topic"] == topic) & (acked["partition"] == partition), "offset"]
        highest = int(best.max()) if len(best) else None
        end = int(ends[(topic, partition)]) + 1 if (topic, partition) in ends.index else None
        rows.append({
            "where": f"{topic}/{partition}", "has_final": bool(at.any()),
            "committed": "none" if final is None else fmt.count(final),
            "acked": "—" if highest is None else fmt.count(highest),
            "end": "—" if end is None else fmt.count(end),
            "behind": "" if end is None or final is None else fmt.count(end - final),
            "lost": bool(at.any()) and highest is not None and (final is None or highest > final),
        })
    return rows


def _lanes(group: str, reads: pd.DataFrame, commits: pd.DataFrame, frame: Frame
           ) -> tuple[dict[tuple[str, str], list[tuple[int, int]]], list[tuple[str, str]]]:
    spans = read_spans(reads[reads["group"] == group], frame)
    unsettled = commits[(commits["group"] == group) & (commits["kind"] != "final") & (commits["status"] != "ok")]
    lanes = set(spans) | {(str(p), _where(t, q)) for p, t, q in
                          unsettled[["process", "topic", "partition"]].itertuples(index=False)}
    order = sorted(lanes, key=lambda k: (natural_key(k[0]), natural_key(k[1])))
    return spans, order


def reads_figure(group: str, reads: pd.DataFrame, commits: pd.DataFrame, frame: Frame,
                 windows: Sequence[FaultWindow], events: Sequence[FaultEvent]) -> tuple[go.Figure, int]:
    """One lane per (member, partition): where the member was handed its records, and its unsuccessful commits.
    Returns the figure and how many lanes were left out (over MAX_LANES)."""
    spans, lanes = _lanes(group, reads, commits, frame)
    shown = lanes[:MAX_LANES]
    label = {lane: f"{lane[0]} · {lane[1]}" for lane in shown}
    parts = sorted({w for _, w in shown}, key=natural_key)
    color = {w: SERIES_COLORS[i % len(SERIES_COLORS)] for i, w in enumerate(parts)}
    fig = go.Figure()
    fig.update_layout(**base_layout(120 + LANE_PX * max(1, len(shown))))
    for where in parts:
        xs: list[float | None] = []
        ys: list[str | None] = []
        for lane in (lane for lane in shown if lane[1] == where):
            for s0, s1 in spans.get(lane, []):
                xs += [s0, s1, None]
                ys += [label[lane], label[lane], None]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name=where, line={"color": color[where], "width": 10},
                                 hovertemplate="%{y}: read at +%{x:.0f} s<extra></extra>"))
    mine = commits[(commits["group"] == group) & (commits["kind"] != "final") & (commits["status"] != "ok")]
    for status, symbol in (("fail", "x"), ("info", "circle-open")):
        rows = [r for r in mine[mine["status"] == status].itertuples(index=False)
                if (str(r.process), _where(r.topic, r.partition)) in label]
        if not rows:
            continue
        fig.add_trace(go.Scatter(
            x=[round(frame.x(int(r.complete_ns if not pd.isna(r.complete_ns) else r.invoke_ns)), 3) for r in rows],
            y=[label[(str(r.process), _where(r.topic, r.partition))] for r in rows], mode="markers",
            name=f"commit {status}", marker={"symbol": symbol, "size": 9, "color": ERROR_COLOR},
            text=[f"{r.kind} commit of offset {r.offset}: {r.status} ({r.error or 'no error'})" for r in rows],
            hovertemplate="%{y} at +%{x} s: %{text}<extra></extra>"))
    add_faults(fig, frame, windows, events)
    fig.update_xaxes(range=[0, frame.seconds], showgrid=True, title_text="seconds since start")
    fig.update_yaxes(type="category", categoryorder="array", categoryarray=[label[lane] for lane in reversed(shown)])
    return fig, max(0, len(lanes) - MAX_LANES)


def view(run: Any, frame: Frame, windows: Sequence[FaultWindow], events: Sequence[FaultEvent],
         examples: dict[str, list[Example]], registry: Registry = REGISTRY) -> dict[str, Any] | None:
    """The section's context (None for a run without group commits), its figures under "figures".

    Each group's examples of the registry's contract v3 anomalies (they name a group) are counted and linked.
    """
    commits = run.table("commits")
    if commits.empty:
        return None
    reads = run.table("reads")
    grouped = group_reads(reads)
    names = sorted(set(commits["group"].dropna()) | set(grouped["group"].dropna()), key=natural_key)
    figures: dict[str, go.Figure] = {}
    out = []
    for number, group in enumerate(names, 1):
        fig, hidden = reads_figure(group, grouped, commits, frame, windows, events)
        figures[f"group-{number}"] = fig
        shown = [(a, sum(e.fields.get("group") == group for e in examples.get(a, [])))
                 for a in registry.of_contract(3)]
        out.append({"name": group, "plot": f"group-{number}", "hidden": hidden,
                    "members": member_rows(group, grouped, commits, run.table("processes")),
                    "offsets": offset_rows(group, reads, commits),
                    "examples": [(a, n) for a, n in shown if n]})
    made = commits[commits["kind"] != "final"]
    return {"figures": figures, "groups": out, "commits": fmt.count(len(made)),
            "commits_ok": fmt.count(int((made["status"] == "ok").sum()))}
