"""Two views of how the cluster served the run: produce latency per AZ, and ISR size per partition.

- `latency_figure`: for acknowledged writes, the p50, p99 and max of
  complete_ns - invoke_ns per AZ, in time buckets by acknowledgement time
  (one second, wider for long runs so a trace holds at most MAX_BUCKETS points).
- `isr_figure`: per partition, the ISR size in each observer's view over time
  (the ``observations`` table; a gap where an
  observer fell silent), with the stretches where most observers saw
  fewer in-sync replicas than min.insync.replicas shaded red: acks=all
  writes are refused (NOT_ENOUGH_REPLICAS) there.
Both share the timeline's frame and fault shading (figures.add_faults).
Must never: draw a point per write or per observation (the page must stay small).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from checkers.leadership import natural_key
from report import fmt
from report.faults import FaultEvent, FaultWindow
from report.figures import SERIES_COLORS, Frame, add_faults, az_of_writes, base_layout, bucket_seconds
from report.loaded_run import parse_json

MAX_BUCKETS = 300
GAP_S = 3.0  # an observer silent this long (a killed or powered-off broker) has no view: a gap in its line
MAX_PARTITIONS = 12  # ISR rows drawn; the caption says how many were left out
UNDER_COLOR = "#dc2626"
PERCENTILES = (("p50", 50, "solid"), ("p99", 99, "dash"), ("max", 100, "dot"))


def latency_percentiles(writes: pd.DataFrame, azs: pd.Series, frame: Frame) -> dict[str, pd.DataFrame]:
    """Per AZ, a frame indexed by bucket start (s since t0) with p50, p99 and max latency in ms."""
    done = (writes["status"] == "ok") & writes["complete_ns"].notna() & writes["invoke_ns"].notna()
    complete = writes.loc[done, "complete_ns"].astype("int64")
    width = bucket_seconds(frame, MAX_BUCKETS)
    frame_rows = pd.DataFrame({
        "az": azs[done].astype(str),
        "bucket": ((complete - frame.t0) // (fmt.NS * width)) * width,
        "ms": (complete - writes.loc[done, "invoke_ns"].astype("int64")) / 1e6,
    })
    out = {}
    for az, mine in frame_rows.groupby("az"):
        grouped = mine.groupby("bucket")["ms"]
        out[str(az)] = pd.DataFrame({name: grouped.quantile(q / 100, interpolation="higher") if q < 100
                                     else grouped.max() for name, q, _ in PERCENTILES}).round(1)
    return dict(sorted(out.items(), key=lambda kv: natural_key(kv[0])))


def latency_figure(writes: pd.DataFrame, processes: pd.DataFrame, frame: Frame, windows: Sequence[FaultWindow],
                   events: Sequence[FaultEvent]) -> go.Figure:
    """p50/p99/max produce latency per AZ over time, log scale, faults shaded."""
    fig = go.Figure()
    fig.update_layout(**base_layout(380))
    width = bucket_seconds(frame, MAX_BUCKETS)
    for i, (az, table) in enumerate(latency_percentiles(writes, az_of_writes(writes, processes), frame).items()):
        color = SERIES_COLORS[i % len(SERIES_COLORS)]
        for name, _, dash in PERCENTILES:
            fig.add_trace(go.Scatter(
                x=[int(b) for b in table.index], y=[float(v) for v in table[name]], name=f"{az} {name}",
                legendgroup=az, mode="lines", line={"color": color, "width": 2 if name == "p50" else 1.5,
                                                    "dash": dash, "shape": "hv"},
                hovertemplate=f"{az} {name}: %{{y}} ms, acknowledged in {width} s from +%{{x}} s<extra></extra>"))
    add_faults(fig, frame, windows, events)
    fig.update_xaxes(range=[0, frame.seconds], showgrid=True, title_text="seconds since start")
    fig.update_yaxes(type="log", dtick=1, title_text="produce latency (ms)")  # a tick per power of ten
    if not len(fig.data):
        fig.add_annotation(text="no acknowledged writes", xref="paper", yref="paper", x=0.5, y=0.5,
                           showarrow=False, font={"size": 14})
    return fig


@dataclass(frozen=True)
class IsrView:
    """One partition's ISR sizes: per observer, its change points (s since t0, size), and the under-min windows."""

    topic: str
    partition: int
    observers: dict[str, list[tuple[float, int | None]]]  # None: a gap, the observer fell silent
    under: list[tuple[float, float]]


def _size(isr: object) -> int | None:
    value = parse_json(isr)
    return len(value) if isinstance(value, list) else None


def isr_views(observations: pd.DataFrame, frame: Frame, min_isr: int) -> list[IsrView]:
    """Per partition (natural order), each observer's ISR size changes and where most saw it below ``min_isr``."""
    views = []
    rows = observations.dropna(subset=["time_ns", "topic", "partition"])
    for (topic, partition), mine in rows.groupby(["topic", "partition"], sort=False):
        mine = mine.sort_values(["time_ns", "observer"], kind="stable")
        sizes = [(_size(isr), frame.x(int(t)), str(obs))
                 for t, obs, isr in zip(mine["time_ns"], mine["observer"], mine["isr"], strict=True)]
        points: dict[str, list[tuple[float, int | None]]] = {}
        latest: dict[str, tuple[float, int]] = {}
        under: list[tuple[float, float]] = []
        start: float | None = None
        for size, x, observer in sizes:
            if size is None:
                continue
            line = points.setdefault(observer, [])
            seen = latest.get(observer)
            if seen is not None and x - seen[0] > GAP_S:  # the observer fell silent: end its line, leave a gap
                line += [(seen[0], seen[1]), (seen[0], None), (x, size)]
            elif not line or line[-1][1] != size:
                line.append((x, size))
            latest[observer] = (x, size)
            current = [s for t, s in latest.values() if x - t <= GAP_S]
            below = float(np.median(current)) < min_isr
            if below and start is None:
                start = x
            elif not below and start is not None:
                under.append((start, x))
                start = None
        if start is not None:
            under.append((start, frame.seconds))
        for observer, line in points.items():  # carry each line to the observer's last view
            line.append(latest[observer])
        views.append(IsrView(str(topic), int(partition), dict(sorted(points.items(), key=lambda kv: natural_key(kv[0]))),
                             under))
    return sorted(views, key=lambda v: (natural_key(v.topic), v.partition))


def isr_figure(views: list[IsrView], frame: Frame, min_isr: int, windows: Sequence[FaultWindow],
               events: Sequence[FaultEvent]) -> go.Figure:
    """A row per partition: ISR size per observer (step lines), min.insync.replicas dashed, under-min shaded."""
    shown = views[:MAX_PARTITIONS]
    fig = make_subplots(rows=len(shown), cols=1, shared_xaxes=True, vertical_spacing=min(0.06, 0.4 / len(shown)))
    fig.update_layout(**base_layout(90 * len(shown) + 130))
    observers = sorted({o for v in shown for o in v.observers}, key=natural_key)
    colors = {o: SERIES_COLORS[i % len(SERIES_COLORS)] for i, o in enumerate(observers)}
    top = max([min_isr] + [s for v in shown for line in v.observers.values() for _, s in line if s is not None])
    for row, view in enumerate(shown, 1):
        for observer, line in view.observers.items():
            fig.add_trace(go.Scatter(
                x=[x for x, _ in line], y=[s for _, s in line], name=f"seen by {observer}", legendgroup=observer,
                showlegend=row == 1, mode="lines", line={"color": colors[observer], "width": 2, "shape": "hv"},
                hovertemplate=f"{view.topic}/{view.partition}: ISR of %{{y}} seen by {observer} from +%{{x}} s"
                              "<extra></extra>"), row=row, col=1)
        suffix = "" if row == 1 else str(row)
        for x0, x1 in view.under:
            fig.add_shape(type="rect", xref=f"x{suffix}", yref=f"y{suffix} domain", x0=x0, x1=max(x1, x0 + 0.05),
                          y0=0, y1=1, fillcolor=UNDER_COLOR, opacity=0.18, line={"width": 0}, layer="below")
        fig.add_shape(type="line", xref=f"x{suffix} domain", yref=f"y{suffix}", x0=0, x1=1, y0=min_isr, y1=min_isr,
                      line={"color": UNDER_COLOR, "width": 1, "dash": "dash"})
        fig.update_yaxes(title_text=f"{view.topic}/{view.partition}", range=[-0.3, top + 0.5], dtick=1,
                         row=row, col=1)
    add_faults(fig, frame, windows, events)
    fig.update_xaxes(range=[0, frame.seconds], showgrid=True)
    fig.update_xaxes(title_text="seconds since start", row=len(shown), col=1)
    return fig
