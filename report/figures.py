"""The report's two plots, as plotly figures: the run timeline and the leadership timeline.

Both share one x axis in seconds since t0 (the run's first event) and the
same fault shading, so a person can read one under the other. Everything
here is a pure function of the run: no random ids, no clocks.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from checkers.leadership import Disagreement, Segment, natural_key
from report import fmt
from report.anomalies import Example
from report.faults import FaultEvent, FaultWindow

FONT = "system-ui, -apple-system, 'Segoe UI', 'Liberation Sans', 'DejaVu Sans', Arial, sans-serif"
SERIES_COLORS = ("#2563eb", "#ea580c", "#059669", "#9333ea", "#db2777", "#0891b2", "#65a30d", "#b45309")
FAULT_COLORS = ("#f59e0b", "#8b5cf6", "#ef4444", "#06b6d4", "#84cc16", "#ec4899")
ERROR_COLOR, INFO_COLOR, NONE_COLOR, SPLIT_COLOR = "#dc2626", "#64748b", "#cbd5e1", "#dc2626"
UNKNOWN_AZ = "no AZ"
# Guess at the plot's width, to keep fault labels in one lane from overlapping.
PLOT_WIDTH_PX, LABEL_CHAR_PX = 1100, 7
# A rate trace's points over the run: one a second, a wider bucket for a long run (a soak's hours stay readable).
MAX_POINTS = 1200
# Label lanes above a plot: a soak's hundreds of faults would stack hundreds; the rest are in the faults table.
MAX_LABEL_LANES = 6


@dataclass(frozen=True)
class Frame:
    """The shared time frame: t0 and the end of the run, in ns."""

    t0: int
    end: int

    def x(self, ns: int) -> float:
        return fmt.seconds_since(ns, self.t0)

    @property
    def seconds(self) -> float:
        return max(self.x(self.end), 1.0)


def bucket_seconds(frame: Frame, max_points: int = MAX_POINTS) -> int:
    """Whole seconds per bucket of a time series over `frame`, so it holds at most `max_points` buckets."""
    return max(1, math.ceil(frame.seconds / max_points))


def base_layout(height: int) -> dict[str, object]:
    return {
        "height": height,
        "font": {"family": FONT, "size": 12, "color": "#1f2937"},
        "paper_bgcolor": "#ffffff",
        "plot_bgcolor": "#ffffff",
        "hovermode": "closest",
        "hoverlabel": {"align": "left", "font": {"family": FONT, "size": 12}},
        "legend": {"orientation": "h", "yanchor": "top", "y": -0.08, "x": 0, "font": {"size": 12}},
        "margin": {"l": 70, "r": 24, "b": 60, "t": 30},
        "template": {"layout": {"xaxis": {"gridcolor": "#e5e7eb", "zerolinecolor": "#d1d5db"},
                                "yaxis": {"gridcolor": "#e5e7eb", "zerolinecolor": "#d1d5db"}}},
    }


def fault_colors(windows: Sequence[FaultWindow], events: Sequence[FaultEvent]) -> dict[str, str]:
    names = sorted({w.fault for w in windows} | {e.fault for e in events})
    return {name: FAULT_COLORS[i % len(FAULT_COLORS)] for i, name in enumerate(names)}


def _lanes(items: list[tuple[float, float, str]], frame: Frame) -> list[int]:
    """A label lane per (x0, x1, label), so labels in one lane do not overlap."""
    seconds_per_char = frame.seconds * LABEL_CHAR_PX / PLOT_WIDTH_PX
    lane_ends: list[float] = []
    lanes = []
    for x0, x1, label in items:
        reach = max(x1, x0 + (len(label) + 2) * seconds_per_char)
        for lane, lane_end in enumerate(lane_ends):
            if lane_end <= x0:
                lane_ends[lane] = reach
                lanes.append(lane)
                break
        else:
            lane_ends.append(reach)
            lanes.append(len(lane_ends) - 1)
    return lanes


@dataclass(frozen=True)
class _Mark:
    """A fault window (x0 < x1) or a nemesis info moment (x0 == x1, dotted), with its label."""

    x0: float
    x1: float
    label: str
    color: str
    window: bool
    degraded: bool = False  # a degraded link: drawn with a dashed outline and a lighter fill


def _fault_marks(frame: Frame, windows: Sequence[FaultWindow], events: Sequence[FaultEvent]) -> list[_Mark]:
    colors = fault_colors(windows, events)
    marks = [_Mark(frame.x(w.start_ns), frame.x(w.end_ns(frame.end)),
                   w.label + ("" if w.stop_ns is not None else " (never stopped)"), colors[w.fault], True,
                   w.degraded) for w in windows]
    marks += [_Mark(frame.x(e.time_ns), frame.x(e.time_ns), f"note: {e.fault} {fmt.targets(e.targets)}".strip(),
                    colors[e.fault], False) for e in events]
    return sorted(marks, key=lambda m: (m.x0, m.x1, m.label))


def add_faults(fig: go.Figure, frame: Frame, windows: Sequence[FaultWindow], events: Sequence[FaultEvent],
               label_px: int = 18, reserved_lanes: int = 0) -> None:
    """Shade each fault window over the whole figure, label it above the plot, make room for the labels.

    ``reserved_lanes`` label lanes just above the plot are left free for the figure's own labels.
    """
    marks = _fault_marks(frame, windows, events)
    lanes = [reserved_lanes + lane for lane in _lanes([(m.x0, m.x1, m.label) for m in marks], frame)]
    unlabelled = sum(lane >= reserved_lanes + MAX_LABEL_LANES for lane in lanes)
    shown = min(max(lanes, default=reserved_lanes - 1) + 1, reserved_lanes + MAX_LABEL_LANES) + (unlabelled > 0)
    extra = label_px * (shown if lanes else reserved_lanes)
    fig.update_layout(margin={"t": 30 + extra}, height=(fig.layout.height or 600) + extra)
    height = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
    # Built as lists and set once: plotly's add_shape/add_annotation copy the layout's tuple each call, which is
    # quadratic in the faults (500 faults of a soak took 2.5 minutes that way).
    shapes: list[dict[str, Any]] = []
    notes: list[dict[str, Any]] = []
    for lane, mark in zip(lanes, marks, strict=True):
        if mark.window:
            outline = {"color": mark.color, "width": 1.5, "dash": "dash"} if mark.degraded else {"width": 0}
            shapes.append({"type": "rect", "xref": "x", "yref": "paper", "x0": mark.x0, "x1": mark.x1, "y0": 0,
                           "y1": 1, "fillcolor": mark.color, "opacity": 0.07 if mark.degraded else 0.14,
                           "line": outline, "layer": "below"})
        shapes.append({"type": "line", "xref": "x", "yref": "paper", "x0": mark.x0, "x1": mark.x0, "y0": 0, "y1": 1,
                       "line": {"color": mark.color, "width": 1.5,
                                "dash": "dash" if mark.degraded else "solid" if mark.window else "dot"}})
        if lane < reserved_lanes + MAX_LABEL_LANES:
            notes.append({"x": mark.x0, "xref": "x", "y": 1 + (lane * label_px + 4) / height, "yref": "paper",
                          "text": mark.label, "showarrow": False, "xanchor": "left", "yanchor": "bottom",
                          "font": {"size": 11, "color": "#111827"}, "bgcolor": _tint(mark.color), "borderpad": 2})
    if unlabelled:
        lane = reserved_lanes + MAX_LABEL_LANES
        notes.append({"x": 0, "xref": "paper", "y": 1 + (lane * label_px + 4) / height, "yref": "paper",
                      "text": f"{unlabelled} more fault labels left out: every fault is in the faults table",
                      "showarrow": False, "xanchor": "left", "yanchor": "bottom",
                      "font": {"size": 11, "color": INFO_COLOR}})
    fig.update_layout(shapes=[*fig.layout.shapes, *shapes], annotations=[*fig.layout.annotations, *notes])


def _tint(color: str) -> str:
    """The color, very light: a label's background."""
    r, g, b = (int(color[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},0.22)"


def per_bucket(times: pd.Series, frame: Frame, width: int) -> list[float]:
    """How many of `times` fall in each `width`-second bucket since t0, per second (whole counts at one second)."""
    buckets = ((times.astype("int64") - frame.t0) // (fmt.NS * width)).astype("int64")
    counts = buckets.value_counts()
    n = int(frame.seconds) // width + 1
    if width == 1:
        return [int(counts.get(i, 0)) for i in range(n)]
    return [round(int(counts.get(i, 0)) / width, 2) for i in range(n)]


def az_of_writes(writes: pd.DataFrame, processes: pd.DataFrame) -> pd.Series:
    """Each write's AZ: its own column, else its process's, else UNKNOWN_AZ."""
    by_process = {p: az for p, az in zip(processes["process"], processes["az"], strict=True) if az is not None}
    azs = [az if az is not None else by_process.get(p, UNKNOWN_AZ) for p, az in zip(writes["process"], writes["az"],
                                                                                        strict=True)]
    return pd.Series(azs, index=writes.index, dtype=object)


def timeline_figure(writes: pd.DataFrame, processes: pd.DataFrame, frame: Frame, windows: Sequence[FaultWindow],
                    events: Sequence[FaultEvent], examples: dict[str, list[Example]]) -> go.Figure:
    """Acked writes/s and errors/s per AZ, faults shaded and labelled, anomaly examples marked."""
    rows = 3 if examples else 2
    heights = [0.45, 0.3, 0.25] if examples else [0.58, 0.42]
    fig = make_subplots(rows=rows, cols=1, shared_xaxes=True, vertical_spacing=0.05, row_heights=heights)
    fig.update_layout(**base_layout(560 if examples else 470))
    az = az_of_writes(writes, processes)
    width = bucket_seconds(frame)
    x = [i * width for i in range(int(frame.seconds) // width + 1)]
    where = "in second %{x}" if width == 1 else f"per second over {width} s from +%{{x}} s"
    for i, name in enumerate(sorted(set(az), key=natural_key)):
        color = SERIES_COLORS[i % len(SERIES_COLORS)]
        mine = writes[az == name]
        ok = mine.loc[(mine["status"] == "ok") & mine["complete_ns"].notna(), "complete_ns"]
        bad = mine[mine["status"].isin(["fail", "info"])]
        when = bad["complete_ns"].fillna(bad["invoke_ns"]).dropna()
        fails = per_bucket(when[bad.loc[when.index, "status"] == "fail"], frame, width)
        infos = per_bucket(when[bad.loc[when.index, "status"] == "info"], frame, width)
        fig.add_trace(go.Scatter(x=x, y=per_bucket(ok, frame, width), name=name, legendgroup=name, mode="lines",
                                 line={"color": color, "width": 2, "shape": "hv"},
                                 hovertemplate=f"{name}: %{{y}} acked writes {where}<extra></extra>"),
                      row=1, col=1)
        fig.add_trace(go.Scatter(x=x, y=[round(f + n, 2) for f, n in zip(fails, infos, strict=True)], name=name,
                                 legendgroup=name, showlegend=False, mode="lines",
                                 line={"color": color, "width": 2, "shape": "hv"},
                                 customdata=list(zip(fails, infos, strict=True)),
                                 hovertemplate=(f"{name}: %{{y}} errors {where}<br>"
                                                "fail %{customdata[0]}, info %{customdata[1]}<extra></extra>")),
                      row=2, col=1)
    if examples:
        _add_anomaly_marks(fig, frame, examples)
    add_faults(fig, frame, windows, events)
    fig.update_xaxes(range=[0, frame.seconds], showgrid=True)
    fig.update_xaxes(title_text="seconds since start", row=rows, col=1)
    fig.update_yaxes(title_text="acked writes/s", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="errors/s<br>(fail + info)", rangemode="tozero", row=2, col=1)
    if not len(writes):
        fig.add_annotation(text="no writes in the history", xref="paper", yref="paper", x=0.5, y=0.7,
                           showarrow=False, font={"size": 14, "color": INFO_COLOR})
    return fig


def _example_hover(example: Example, frame: Frame) -> str:
    f = example.fields
    parts = [f"<b>{example.anomaly} #{example.number}</b> ({example.classified})"]
    if f.get("value") is not None:
        parts.append(f"value {f['value']}")
    if f.get("topic") is not None:
        parts.append(f"{f['topic']}/{f.get('partition')} offset {f.get('offset')}")
    if f.get("process") is not None:
        parts.append(str(f["process"]))
    if example.window:
        parts.append(f"{fmt.rel(example.window[0], frame.t0)} → {fmt.rel(example.window[1], frame.t0)}")
    return "<br>".join(parts)


def _add_anomaly_marks(fig: go.Figure, frame: Frame, examples: dict[str, list[Example]]) -> None:
    names = list(examples)
    for name in names:
        placed = [e for e in examples[name] if e.time_ns is not None]
        errors = [e.classified == "error" for e in placed]
        fig.add_trace(go.Scatter(
            x=[frame.x(e.time_ns) for e in placed if e.time_ns is not None], y=[name] * len(placed), mode="markers",
            name=name, showlegend=False,
            marker={"symbol": ["x" if e else "circle-open" for e in errors], "size": 11,
                    "color": [ERROR_COLOR if e else INFO_COLOR for e in errors], "line": {"width": 2}},
            hovertext=[_example_hover(e, frame) for e in placed], hovertemplate="%{hovertext}<extra></extra>"),
            row=3, col=1)
    fig.update_yaxes(title_text="anomalies", type="category", categoryorder="array",
                     categoryarray=list(reversed(names)), range=[-0.6, len(names) - 0.4], row=3, col=1)


def broker_colors(brokers: Iterable[int]) -> dict[int, str]:
    return {b: SERIES_COLORS[i % len(SERIES_COLORS)] for i, b in enumerate(sorted(set(brokers)))}


def _segment_hover(seg: Segment, what: str, frame: Frame) -> str:
    believed = f"broker {seg.broker}" if seg.broker is not None else "no broker"
    extra = []
    if seg.epoch is not None:
        extra.append(f"leader epoch {seg.epoch}")
    if seg.isr:
        extra.append(f"ISR {seg.isr}")
    lines = [f"<b>{seg.observer}</b> believed the {what} was <b>{believed}</b>"]
    if extra:
        lines.append(", ".join(extra))
    lines.append(f"{fmt.rel(seg.start_ns, frame.t0)} → {fmt.rel(seg.end_ns, frame.t0)}")
    return "<br>".join(lines)


@dataclass(frozen=True)
class Lane:
    """One subplot of the leadership figure: a title and its observers' segments."""

    title: str
    what: str
    segments: list[Segment]
    disagreements: list[Disagreement]


def leadership_figure(lanes: list[Lane], frame: Frame, windows: Sequence[FaultWindow],
                      events: Sequence[FaultEvent]) -> go.Figure:
    """Per partition (and for the controller), which broker each observer believed in, over time."""
    observers = [sorted({s.observer for s in lane.segments}, key=natural_key) for lane in lanes]
    heights = [max(len(o), 1) * 30 + 40 for o in observers]
    fig = make_subplots(rows=len(lanes), cols=1, shared_xaxes=True, vertical_spacing=min(0.08, 0.5 / len(lanes)),
                        row_heights=heights)
    fig.update_layout(**base_layout(sum(heights) + 120))
    fig.update_layout(barmode="overlay", uniformtext={"minsize": 9, "mode": "hide"})
    colors = broker_colors(s.broker for lane in lanes for s in lane.segments if s.broker is not None)
    legend_done: set[int | None] = set()
    for row, (lane, names) in enumerate(zip(lanes, observers, strict=True), 1):
        for broker in sorted({s.broker for s in lane.segments}, key=lambda b: -1 if b is None else b):
            mine = [s for s in lane.segments if s.broker == broker]
            label = f"broker {broker}" if broker is not None else "none"
            fig.add_trace(go.Bar(
                orientation="h", y=[s.observer for s in mine], base=[frame.x(s.start_ns) for s in mine],
                x=[round(frame.x(s.end_ns) - frame.x(s.start_ns), 3) for s in mine], width=0.7,
                name=label, legendgroup=label, showlegend=broker not in legend_done,
                legendrank=broker if broker is not None else 1000,
                marker={"color": colors.get(broker, NONE_COLOR) if broker is not None else NONE_COLOR,
                        "line": {"width": 0}},
                text=[str(broker) if broker is not None else "" for _ in mine], textposition="inside",
                insidetextanchor="middle", textfont={"color": "#ffffff", "size": 11},
                hovertext=[_segment_hover(s, lane.what, frame) for s in mine],
                hovertemplate="%{hovertext}<extra></extra>"), row=row, col=1)
            legend_done.add(broker)
        for split in lane.disagreements:
            _mark_split(fig, row, frame, split)
        fig.update_yaxes(title_text=lane.title, type="category", categoryorder="array",
                         categoryarray=list(reversed(names)), row=row, col=1)
    fig.update_layout(margin={"l": 110})
    add_faults(fig, frame, windows, events, reserved_lanes=1 if lanes[0].disagreements else 0)
    fig.update_xaxes(range=[0, frame.seconds], showgrid=True)
    fig.update_xaxes(title_text="seconds since start", row=len(lanes), col=1)
    return fig


def _mark_split(fig: go.Figure, row: int, frame: Frame, split: Disagreement) -> None:
    suffix = "" if row == 1 else str(row)
    x0, x1 = frame.x(split.start_ns), frame.x(split.end_ns)
    fig.add_shape(type="rect", xref=f"x{suffix}", yref=f"y{suffix} domain", x0=x0, x1=x1, y0=0, y1=1,
                  fillcolor=SPLIT_COLOR, opacity=0.12, line={"color": SPLIT_COLOR, "width": 1.5}, layer="above")
    brokers = " and ".join(str(b) for b in split.brokers)
    fig.add_annotation(x=x0, xref=f"x{suffix}", y=1, yref=f"y{suffix} domain", showarrow=False,
                       xanchor="left", yanchor="bottom", text=f"⚠ {len(split.brokers)} at once: {brokers}",
                       font={"size": 11, "color": SPLIT_COLOR})
