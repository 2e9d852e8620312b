"""The transactions view of report.html (contract v2): outcomes per producer over time, the last stable
offset's lag per partition, and each transactional anomaly's example traced to its transaction.

- Outcomes: per transactional producer, the transactions that committed (`ok`), were aborted (`fail`) or
  ended unknown (`info`) in each second, by the moment their outcome arrived (`complete_ns`; a transaction
  that never got one at its `begin_ns`), against the fault bands.
- LSO lag: per partition, the high watermark minus the last stable offset its leader reported
  (`observations`, ListOffsets at both isolation levels): how far read_committed readers trail; a lag that
  stays up is a transaction left open (a hanging transaction holds it for ever).
- Unknown outcomes: each transaction that ended `info` (no outcome the producer knows: its commit failed, say
  INVALID_TXN_STATE after a stale abort ended it), its error, when its end was asked and the last fault before it,
  and whether any of its values was read: counted in the verdict's stats (`unknown`), shown here one by one.
- Restated counts: where `uncommitted-read` counts the same values as `aborted-read`, or `torn-transaction` the
  transactions torn only by `unreadable` values, a note says how many (checkers.restated, from the history).
- Drill-downs: for each example of an anomaly about transactions whose value belongs to one, that
  transaction's row, its writes and every read of them (which process, at which isolation level, live or
  final), so a reader goes from the anomaly to the evidence in the history without opening it.

Pure: tables in, plain data and figures out.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from checkers.anomalies import REGISTRY, Registry
from checkers.leadership import natural_key
from checkers.restated import notes, restated
from report import fmt
from report.anomalies import Example
from report.faults import FaultEvent, FaultWindow
from report.figures import SERIES_COLORS, Frame, add_faults, base_layout, bucket_seconds

STATUS = (("ok", "committed", "#059669"), ("fail", "aborted", "#9ca3af"), ("info", "unknown", "#dc2626"))
MAX_DRILLDOWNS = 3  # examples traced per anomaly
MAX_ROWS = 30  # writes or reads shown per transaction
MAX_PRODUCERS = 12  # producers drawn, one row each
MAX_UNKNOWN = 20  # unknown-outcome transactions listed


def outcomes_per_second(txns: pd.DataFrame, frame: Frame) -> dict[str, pd.DataFrame]:
    """producer -> a frame indexed by bucket start (whole seconds since t0; one second, wider for a long run, see
    figures.bucket_seconds), one column per status (ok, fail, info): how many ended in the bucket."""
    if txns.empty:
        return {}
    width = bucket_seconds(frame)
    when = txns["complete_ns"].where(txns["complete_ns"].notna(), txns["begin_ns"]).astype("int64")
    second = ((when - frame.t0) // (1_000_000_000 * width)).clip(lower=0) * width
    counted = pd.DataFrame({"process": txns["process"], "status": txns["status"], "second": second})
    out = {}
    for process in sorted(counted["process"].dropna().unique(), key=natural_key):
        mine = counted[counted["process"] == process]
        table = mine.groupby(["second", "status"]).size().unstack(fill_value=0)
        out[str(process)] = table.reindex(columns=[s for s, _, _ in STATUS], fill_value=0)
    return out


def outcomes_figure(txns: pd.DataFrame, frame: Frame, windows: Sequence[FaultWindow],
                    events: Sequence[FaultEvent]) -> go.Figure:
    """One row per transactional producer: its commits, aborts and unknown outcomes per second, stacked."""
    per = dict(list(outcomes_per_second(txns, frame).items())[:MAX_PRODUCERS])
    rows = max(1, len(per))
    fig = make_subplots(rows=rows, cols=1, shared_xaxes=True, vertical_spacing=0.04,
                        subplot_titles=list(per) or None)
    fig.update_layout(**base_layout(120 + 110 * rows), barmode="stack")
    width = bucket_seconds(frame)
    where = "second +%{x:.0f}" if width == 1 else f"the {width} s around +%{{x:.0f}} s"
    for row, (process, table) in enumerate(per.items(), 1):
        for status, label, color in STATUS:
            fig.add_trace(go.Bar(
                x=[int(s) + width / 2 for s in table.index], y=[int(v) for v in table[status]], name=label,
                legendgroup=status, showlegend=row == 1, marker={"color": color}, width=0.9 * width,
                hovertemplate=f"{process}: %{{y}} {label} in {where}<extra></extra>"), row=row, col=1)
        fig.update_yaxes(title_text="per s" if width == 1 else f"per {width} s", row=row, col=1)
    add_faults(fig, frame, windows, events)
    fig.update_xaxes(range=[0, frame.seconds], showgrid=True)
    fig.update_xaxes(title_text="seconds since start", row=rows, col=1)
    return fig


def lso_lag(observations: pd.DataFrame, frame: Frame) -> dict[str, list[tuple[float, int]]]:
    """"topic/partition" -> (s since t0, high watermark - last stable offset) as its leader reported them."""
    if observations.empty or "last_stable_offset" not in observations:
        return {}
    led = observations.dropna(subset=["high_watermark", "last_stable_offset"])
    out: dict[str, list[tuple[float, int]]] = {}
    for (topic, partition), rows in led.groupby(["topic", "partition"], sort=True):
        rows = rows.sort_values("time_ns")
        out[f"{topic}/{int(partition)}"] = [
            (round(frame.x(int(t)), 3), int(hw) - int(lso))
            for t, hw, lso in rows[["time_ns", "high_watermark", "last_stable_offset"]].itertuples(index=False)]
    return out


def lso_figure(lags: dict[str, list[tuple[float, int]]], frame: Frame, windows: Sequence[FaultWindow],
               events: Sequence[FaultEvent]) -> go.Figure:
    fig = go.Figure()
    fig.update_layout(**base_layout(320))
    for i, (name, points) in enumerate(sorted(lags.items(), key=lambda kv: natural_key(kv[0]))):
        fig.add_trace(go.Scatter(
            x=[x for x, _ in points], y=[y for _, y in points], name=name, mode="lines",
            line={"color": SERIES_COLORS[i % len(SERIES_COLORS)], "shape": "hv"},
            hovertemplate=f"{name}: %{{y}} offsets between the LSO and the high watermark at +%{{x}} s<extra></extra>"))
    add_faults(fig, frame, windows, events)
    fig.update_xaxes(range=[0, frame.seconds], showgrid=True, title_text="seconds since start")
    fig.update_yaxes(title_text="HW - LSO (offsets)", rangemode="tozero")
    return fig


def drilldowns(examples: dict[str, list[Example]], txns: pd.DataFrame, writes: pd.DataFrame,
               reads: pd.DataFrame, processes: pd.DataFrame, t0: int, registry: Registry = REGISTRY
               ) -> list[dict[str, Any]]:
    """For each traced anomaly's first examples (its record's `transactions_view`, in that order): the
    transaction, its writes, the reads that saw them."""
    if txns.empty or "txn" not in writes:
        return []
    levels = _isolation_levels(processes)
    by_txn = txns.set_index("txn")
    out = []
    for anomaly in registry.transactions_view:
        for example in examples.get(anomaly, [])[:MAX_DRILLDOWNS]:
            value = example.fields.get("value")
            txn = example.fields.get("txn") or _txn_of(writes, value)
            if txn is None or txn not in by_txn.index:
                continue
            out.append(_drilldown(anomaly, example, str(txn), by_txn.loc[txn], writes, reads, levels, t0))
    return out


def _txn_of(writes: pd.DataFrame, value: Any) -> str | None:
    found = writes.loc[writes["value"] == value, "txn"].dropna()
    return str(found.iloc[0]) if len(found) else None


def _isolation_levels(processes: pd.DataFrame) -> dict[str, str]:
    levels = {}
    for process, config in processes[["process", "config"]].itertuples(index=False):
        parsed = json.loads(config) if isinstance(config, str) and config else {}
        levels[str(process)] = (parsed.get("isolation.level") or "read_uncommitted") \
            if isinstance(parsed, dict) else "read_uncommitted"
    return levels


def _at(ns: Any, t0: int) -> str:
    return "—" if ns is None or pd.isna(ns) else f"+{fmt.seconds_since(int(ns), t0):.3f} s"


def _drilldown(anomaly: str, example: Example, txn: str, row: pd.Series, writes: pd.DataFrame,
               reads: pd.DataFrame, levels: dict[str, str], t0: int) -> dict[str, Any]:
    mine = writes[writes["txn"] == txn].sort_values("op_id")
    values = set(mine["value"])
    seen = reads[reads["value"].isin(values)].sort_values("poll_ns")
    return {
        "anomaly": anomaly, "number": example.number, "value": example.fields.get("value"), "txn": txn,
        "anchor": f"txn-{anomaly}-{example.number}",
        "transaction": [("process", row.get("process")), ("status", row.get("status")),
                        ("intent", row.get("intent") or "—"), ("error", row.get("error") or "—"),
                        ("begun", _at(row.get("begin_ns"), t0)), ("end asked", _at(row.get("end_ns"), t0)),
                        ("outcome", _at(row.get("complete_ns"), t0))],
        "writes": [{"value": w.value, "where": _where(w.topic, w.partition, w.offset), "status": w.status,
                    "acked": _at(w.complete_ns, t0)} for w in mine.head(MAX_ROWS).itertuples(index=False)],
        "writes_hidden": max(0, len(mine) - MAX_ROWS),
        "reads": [{"value": r.value, "where": _where(r.topic, r.partition, r.offset), "process": r.process,
                   "level": levels.get(str(r.process), "read_uncommitted"), "phase": r.phase,
                   "polled": _at(r.poll_ns, t0)} for r in seen.head(MAX_ROWS).itertuples(index=False)],
        "reads_hidden": max(0, len(seen) - MAX_ROWS),
    }


def _where(topic: Any, partition: Any, offset: Any) -> str:
    if partition is None or pd.isna(partition):
        return "—"
    return f"{topic}/{int(partition)}" + ("" if offset is None or pd.isna(offset) else f"@{int(offset)}")


def unknown_outcomes(txns: pd.DataFrame, writes: pd.DataFrame, reads: pd.DataFrame, windows: Sequence[FaultWindow],
                     t0: int) -> list[dict[str, Any]]:
    """Each `info` transaction (by its begin): its error, when its end was asked, the last fault that started
    before then (and when that fault stopped), and how many of its values any process read."""
    unknown = txns[txns["status"] == "info"].sort_values("begin_ns", kind="stable")
    read = set(reads["value"]) if "value" in reads else set()
    out = []
    for row in unknown.head(MAX_UNKNOWN).itertuples(index=False):
        when = row.end_ns if row.end_ns is not None and not pd.isna(row.end_ns) else row.begin_ns
        before = [w for w in windows if w.start_ns <= int(when)]
        last = max(before, key=lambda w: w.start_ns) if before else None
        values = writes.loc[writes["txn"] == row.txn, "value"] if "txn" in writes else pd.Series([], dtype=object)
        out.append({"txn": row.txn, "process": row.process, "intent": _text(row.intent), "error": _text(row.error),
                    "end_asked": _at(row.end_ns, t0),
                    "after": (f"{last.label} (+{fmt.seconds_since(last.start_ns, t0):.1f} s to "
                              + (f"+{fmt.seconds_since(last.stop_ns, t0):.1f} s)" if last.stop_ns else "the end)"))
                    if last else "—",
                    "n_values": len(values), "read": int(values.isin(read).sum())})
    return out


def _text(value: Any) -> str:
    return "—" if value is None or (isinstance(value, float) and pd.isna(value)) or value == "" else str(value)


def view(run: Any, frame: Frame, windows: Sequence[FaultWindow], events: Sequence[FaultEvent],
         examples: dict[str, list[Example]]) -> dict[str, Any] | None:
    """The section's context (None for a run without transactions), its figures under "figures"."""
    txns = run.table("transactions")
    if txns.empty:
        return None
    status = txns["status"].value_counts()
    writes, reads = run.table("writes"), run.table("reads")
    read_committed = {p for p, level in _isolation_levels(run.table("processes")).items() if level == "read_committed"}
    counts = (run.verdict or {}).get("counts") or {}
    figures: dict[str, go.Figure] = {"transactions": outcomes_figure(txns, frame, windows, events)}
    lags = lso_lag(run.table("observations"), frame)
    if lags:
        figures["lso"] = lso_figure(lags, frame, windows, events)
    return {
        "figures": figures,
        "totals": [(label, fmt.count(int(status.get(s, 0)))) for s, label, _ in STATUS],
        "producers": txns["process"].nunique(),
        "hidden": max(0, txns["process"].nunique() - MAX_PRODUCERS),
        "max_lag": [(name, max(y for _, y in points)) for name, points in sorted(lags.items())],
        "unknown": unknown_outcomes(txns, writes, reads, windows, frame.t0),
        "unknown_hidden": max(0, int(status.get("info", 0)) - MAX_UNKNOWN),
        "restated": notes(restated(writes, reads, txns, read_committed), counts),
        "drilldowns": drilldowns(examples, txns, writes, reads, run.table("processes"), frame.t0),
    }
