"""The versions view of report.html: after a rolling upgrade (downgrade), the Kafka version (and pinned inter-broker
protocol) each node's broker ran at each moment, one lane per node against the fault bands (on KRaft a lane for each
node's controller too, `<node>/controller`), with the moments its node held the controller (as most observers saw
it) drawn on its controller's lane, or its broker's.

The versions come from run.json's `node_versions` (harness.manifest, from the nemesis journal's rolling-upgrade
steps: each broker's version from the moment it started again); the controller from the observations table
(checkers.leadership.controller_views). A run without `node_versions` (no upgrade) has no view.
Must never: judge anything, or read a file but run.json (report.loaded_run reads the history).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from checkers.leadership import controller_views, natural_key
from report import fmt
from report.faults import FaultEvent, FaultWindow
from report.figures import SERIES_COLORS, Frame, add_faults, base_layout
from report.loaded_run import Run, load_json_object
from testbed.runfolder import RunFolder

LANE_PX = 34
CONTROLLER_COLOR = "#111827"


def node_versions(run: Run) -> dict[str, list[dict[str, Any]]]:
    """run.json's `node_versions` as {node: [{from_ns, version, inter_broker_protocol}]}, oldest first; {} when
    the run has none or it cannot be read (a reading problem goes into `run.problems`)."""
    manifest = load_json_object(RunFolder(run.run_dir).manifest, run.problems) or {}
    raw = manifest.get("node_versions")
    if not isinstance(raw, dict):
        return {}
    out: dict[str, list[dict[str, Any]]] = {}
    for node, steps in raw.items():
        try:
            out[str(node)] = sorted(({"from_ns": _ns(s["from"]), "version": str(s["version"]),
                                      "inter_broker_protocol": s.get("inter_broker_protocol")} for s in steps),
                                    key=lambda s: s["from_ns"])
        except (KeyError, TypeError, ValueError):
            run.problems.append(f"run.json: node_versions of {node} unreadable")
    return out


def _ns(iso: str) -> int:
    return int(dt.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1e9)


def spans(steps: Sequence[dict[str, Any]], frame: Frame) -> list[tuple[int, int, str]]:
    """A node's (start_ns, end_ns, label) per version it ran, clipped to the frame; the label names the version and
    the pinned protocol (`3.9.1, protocol 2.7`)."""
    out = []
    for i, step in enumerate(steps):
        start = max(step["from_ns"], frame.t0)
        end = steps[i + 1]["from_ns"] if i + 1 < len(steps) else frame.end
        protocol = step.get("inter_broker_protocol")
        label = step["version"] + (f", protocol {protocol}" if protocol else "")
        if end > start:
            out.append((start, min(end, frame.end), label))
    return out


def controller_spans(observations: pd.DataFrame) -> list[tuple[int, int, int]]:
    """(start_ns, end_ns, broker) where most of the observers that had a view named that broker the controller."""
    if observations.empty:
        return []
    segments = [s for s in controller_views(observations) if s.broker is not None]
    edges = sorted({s.start_ns for s in segments} | {s.end_ns for s in segments})
    out: list[tuple[int, int, int]] = []
    for start, end in zip(edges, edges[1:], strict=False):
        named = Counter(s.broker for s in segments if s.broker is not None and s.start_ns <= start and s.end_ns >= end)
        if not named:
            continue
        ((broker, votes),) = named.most_common(1)
        if votes * 2 <= sum(named.values()):
            continue  # no majority: the Leadership section shows the split
        if out and out[-1][2] == broker and out[-1][1] == start:
            out[-1] = (out[-1][0], end, broker)
        else:
            out.append((start, end, broker))
    return out


def broker_of(node: str, nodes: Sequence[str]) -> int:
    """A node's broker id: its place among the cluster's nodes in natural order (az1-node is broker-0)."""
    return sorted(nodes, key=natural_key).index(node)


def versions_figure(versions: dict[str, list[dict[str, Any]]], controllers: list[tuple[int, int, int]], frame: Frame,
                    windows: Sequence[FaultWindow], events: Sequence[FaultEvent]) -> go.Figure:
    nodes = sorted(versions, key=natural_key)
    labels = sorted({label for n in nodes for _, _, label in spans(versions[n], frame)})
    colors = {label: SERIES_COLORS[i % len(SERIES_COLORS)] for i, label in enumerate(labels)}
    fig = go.Figure()
    shown: set[str] = set()
    for node in nodes:
        for start, end, label in spans(versions[node], frame):
            fig.add_trace(go.Bar(
                base=[frame.x(start)], x=[frame.x(end) - frame.x(start)], y=[node], orientation="h", width=0.6,
                marker={"color": colors[label]}, name=label, legendgroup=label, showlegend=label not in shown,
                hovertext=[f"{node}: Kafka {label}<br>from +{frame.x(start):.1f} s to +{frame.x(end):.1f} s"],
                hoverinfo="text"))
            shown.add(label)
        base = node.split("/")[0]  # a KRaft controller's lane is `<node>/controller`: the controller drawn there
        if node == base and f"{base}/controller" in versions:
            continue
        mine = [(s, e) for s, e, broker in controllers
                if broker == broker_of(base, [n for n in nodes if "/" not in n])]
        if mine:
            fig.add_trace(go.Bar(
                base=[frame.x(s) for s, _ in mine], x=[frame.x(e) - frame.x(s) for s, e in mine], y=[node] * len(mine),
                orientation="h", width=0.15, marker={"color": CONTROLLER_COLOR}, name="controller",
                legendgroup="controller", showlegend="controller" not in shown, hoverinfo="text",
                hovertext=[f"{node}'s broker the controller from +{frame.x(s):.1f} s to +{frame.x(e):.1f} s"
                           for s, e in mine]))
            shown.add("controller")
    height = 120 + LANE_PX * len(nodes)
    fig.update_layout(**base_layout(height), barmode="overlay", bargap=0.3)
    fig.update_xaxes(title_text="seconds since the start", range=[0, frame.seconds])
    fig.update_yaxes(categoryorder="array", categoryarray=list(reversed(nodes)))
    add_faults(fig, frame, windows, events)
    return fig


def view(run: Run, frame: Frame, windows: Sequence[FaultWindow],
         events: Sequence[FaultEvent]) -> dict[str, Any] | None:
    """The section's rows (node, from, version, protocol) and its figure; None for a run without an upgrade."""
    versions = node_versions(run)
    if not versions:
        return None
    rows = [{"node": node, "from": f"+{fmt.seconds_since(max(s['from_ns'], frame.t0), frame.t0):.1f} s",
             "version": s["version"], "protocol": s.get("inter_broker_protocol") or "its own"}
            for node in sorted(versions, key=natural_key) for s in versions[node]]
    figure = versions_figure(versions, controller_spans(run.table("observations")), frame, windows, events)
    return {"rows": rows, "figures": {"versions": figure}}
