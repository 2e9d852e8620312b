"""What report.html shows, as plain data for the template: sections, rows, plot JSON.

Everything is sorted or kept in the order of its source file, and nothing
depends on the clock or on randomness, so one run always yields the same
page.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

from checkers.anomalies import DESCRIPTIONS
from checkers.facts import SplitBrains, split_brains
from checkers.leadership import Disagreement
from report import configuration, evidence, faultwords, fmt, groups, transactions, versions
from report.anomalies import Example, collect_examples
from report.availability import availability_rows
from report.errorcodes import error_breakdown, error_rows
from report.faults import AROUND_NS, FaultEvent, FaultWindow, fault_events, fault_windows
from report.figures import Frame, Lane, az_of_writes, fault_colors, leadership_figure, timeline_figure
from report.health import MAX_PARTITIONS, isr_figure, isr_views, latency_figure
from report.hosts import host_notes
from report.loaded_run import Run
from report.logexcerpts import Excerpts
from report.replicas import read_replicas
from report.verdict_view import Outcome, read_expectation, read_outcome, verdict_line
from testbed.kafka.config import ClusterSettings
from testbed.runfolder import RunFolder

# Example keys shown as the "when" column, so not repeated among the details.
WHEN_KEYS = {"invoke_ns", "complete_ns", "poll_ns", "time_ns"}
# Keys of nested example rows (evidence, previous, seen), in reading order; others follow sorted.
NESTED_ORDER = ("source", "value", "topic", "partition", "offset", "process", "phase", "seq", "op_id")
# Client settings that decide what an anomaly means (spec/history.md), shown first and in this order.
# Spec keys shown in their own places (the header, the notes), not in the key/value grid.
SHOWN_APART = {"description", "notes"}


def run_files(folder: RunFolder) -> list[Path]:
    """The files of a run folder the report links to, inputs first, whether or not they exist."""
    return [folder.spec, folder.verdict, folder.replicas, folder.harness_log, folder.history_dir, folder.nodes_dir,
            folder.junit]
# Written beside the report, perhaps after it: always linked, so regenerating gives the same page.


@dataclass(frozen=True)
class Plot:
    """A figure to embed: its element id, its JSON and what to call the downloaded image."""

    div_id: str
    json: str
    filename: str


@dataclass
class AnomalySection:
    name: str
    description: str
    count: int | None
    kind: str
    examples: list[dict[str, Any]] = field(default_factory=list)
    show_leaders: bool = False


def figure_json(fig: go.Figure) -> str:
    """The figure as JSON safe inside a <script> element."""
    text = pio.to_json(fig, validate=False, pretty=False, engine="json")
    return text.replace("</", "<\\/")


def flatten(value: Any, prefix: str = "") -> list[tuple[str, str]]:
    """A nested spec as ("a.b.c", "value") rows in the file's order; a list of mappings gives a row per item."""
    if isinstance(value, dict) and value:
        return [row for k, v in value.items() for row in flatten(v, f"{prefix}.{k}" if prefix else str(k))]
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        rows: list[tuple[str, str]] = []
        for i, item in enumerate(value):
            if any(isinstance(v, dict | list) and not _flat_list(v) for v in item.values()):
                rows += flatten(item, f"{prefix}[{i}]")  # nested: one row per leaf
            else:
                rows.append((f"{prefix}[{i}]", " · ".join(f"{k}: {_scalar(v)}" for k, v in item.items())))
        return rows
    return [(prefix or "spec", _scalar(value))]


def _flat_list(value: Any) -> bool:
    return isinstance(value, list) and not any(isinstance(v, dict | list) for v in value)


def _scalar(value: Any) -> str:
    if isinstance(value, list) and not any(isinstance(v, dict | list) for v in value):
        return ", ".join(_scalar(v) for v in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else fmt.compact(value)


def build_context(run: Run) -> dict[str, Any]:
    """The template's context for one run."""
    outcome = read_outcome(run.verdict)
    span = run.span_ns()
    frame = Frame(*span) if span else None
    windows = fault_windows(run.table("nemesis"))
    events = fault_events(run.table("nemesis"))
    t0 = frame.t0 if frame else 0
    examples = collect_examples(run, windows)
    faults = _fault_rows(windows, events, t0, frame)
    links = Links({r["key"]: (r["anchor"], r["words"]) for r in faults if r["key"]}, Excerpts(run.run_dir), run.table("observations"))
    context: dict[str, Any] = {
        "scenario": run.scenario,
        "run_id": run.run_id,
        "outcome": outcome,
        "verdict_counts": _count_tiles(outcome),
        "stats": _stats(outcome),
        "started": fmt.utc(frame.t0) if frame else "—",
        "duration": fmt.duration(frame.end - frame.t0) if frame else "—",
        "configuration": run.configuration,
        "description": _text(run.spec.get("description")),
        "notes": _text(run.spec.get("notes")),
        "expectation": read_expectation(run.verdict),
        "verdict_line": verdict_line(run.verdict),
        "spec_items": flatten({k: v for k, v in run.spec.items() if k not in SHOWN_APART}),
        "clients": configuration.client_rows(run),
        "software": configuration.software_rows(run),
        "faults": faults,
        "availability": availability_rows(run.verdict, t0),
        "anomalies": _anomaly_sections(outcome, examples, t0, links),
        "excerpts": evidence.excerpt_rows(links.excerpts, t0),  # after the anomalies: they made them
        "replicas": read_replicas(run.run_dir, run.problems),
        "problems": list(run.problems),
        "host_notes": host_notes(run.run_dir, run.table("nemesis")),
        "files": [p.name for p in run_files(RunFolder(run.run_dir)) if p.exists() or p.name == "junit.xml"],
        "plots": {},
        "min_isr": None, "isr_hidden": 0, "under_min": [],
        "splits": [],
        "period": "",
        "around": fmt.duration(AROUND_NS),
        "txn": None, "groups": None, "versions": None,
    }
    if frame:
        context["plots"]["timeline"] = Plot("plot-timeline", figure_json(timeline_figure(
            run.table("writes"), run.table("processes"), frame, windows, events, examples)),
            f"{run.scenario}-{run.run_id}-timeline")
        _health_plots(context, run, frame, windows, events)
        context["txn"] = transactions.view(run, frame, windows, events, examples)
        context["groups"] = groups.view(run, frame, windows, events, examples)
        context["versions"] = versions.view(run, frame, windows, events)
        for view in (context["txn"], context["groups"], context["versions"]):
            for key, fig in (view or {}).pop("figures", {}).items():
                context["plots"][key] = Plot(f"plot-{key}", figure_json(fig), f"{run.scenario}-{run.run_id}-{key}")
        brains = split_brains(run.table("observations"))
        lanes = _leadership_lanes(brains)
        if lanes:
            context["plots"]["leadership"] = Plot("plot-leadership", figure_json(
                leadership_figure(lanes, frame, windows, events)), f"{run.scenario}-{run.run_id}-leadership")
            context["splits"] = [_split_row(lane, split, t0) for lane in lanes for split in lane.disagreements]
            context["period"] = fmt.duration(brains.period)
    context["errors"] = error_rows(error_breakdown(run.table("writes"), az_of_writes(
        run.table("writes"), run.table("processes"))), t0)
    context["az_count"] = len({a for a in run.table("processes")["az"].dropna()} |
                              {a for a in run.table("writes")["az"].dropna()})
    return context


def min_isr(spec: dict[str, Any]) -> int:
    """The run's min.insync.replicas: the spec's cluster.min_insync_replicas, else the cluster's default."""
    cluster = spec.get("cluster")
    value = cluster.get("min_insync_replicas") if isinstance(cluster, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else ClusterSettings().min_insync_replicas


def _health_plots(context: dict[str, Any], run: Run, frame: Frame, windows: list[FaultWindow],
                  events: list[FaultEvent]) -> None:
    """The produce-latency and ISR plots (health), where the history has what they need."""
    name = f"{run.scenario}-{run.run_id}"
    writes = run.table("writes")
    if (writes["status"] == "ok").any():
        context["plots"]["latency"] = Plot("plot-latency", figure_json(latency_figure(
            writes, run.table("processes"), frame, windows, events)), f"{name}-latency")
    context["min_isr"] = minimum = min_isr(run.spec)
    views = isr_views(run.table("observations"), frame, minimum)
    if views:
        context["plots"]["isr"] = Plot("plot-isr", figure_json(isr_figure(views, frame, minimum, windows, events)),
                                       f"{name}-isr")
        context["isr_hidden"] = max(0, len(views) - MAX_PARTITIONS)
        context["under_min"] = [(f"{v.topic}/{v.partition}", f"+{x0:.1f} s", f"+{x1:.1f} s")
                                for v in views for x0, x1 in v.under]


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _count_tiles(outcome: Outcome) -> list[dict[str, Any]]:
    errors = dict(outcome.errors)
    tiles = []
    for name, n in outcome.counts:
        kind = "error" if name in errors else "info" if n else "zero"
        tiles.append({"name": name, "count": fmt.count(n), "kind": kind, "description": DESCRIPTIONS.get(name, "")})
    return tiles


def _stats(outcome: Outcome) -> list[tuple[str, str, str]]:
    s = outcome.stats
    order = [("writes", "writes", None), ("ok", "acknowledged", "writes"), ("fail", "failed", "writes"),
             ("info", "unknown outcome", "writes"), ("reads", "records read", None),
             ("final_reads", "in the final log", None), ("live_reads", "read live", None)]
    rows = [(label, fmt.count(s[key]), fmt.percent(s[key], s.get(whole)) if whole else "")
            for key, label, whole in order if key in s]
    rows += [(str(key), fmt.count(value), "") for key, value in sorted(s.items())
             if key not in {k for k, _, _ in order} and not isinstance(value, dict | list)]
    return rows


def _fault_rows(windows: list[FaultWindow], events: list[FaultEvent], t0: int,
                frame: Frame | None) -> list[dict[str, Any]]:
    """The faults table, in time order, each row with its anchor (``fault-N``) and its words (faultwords)."""
    colors = fault_colors(windows, events)
    rows: list[dict[str, Any]] = [{
        "fault": w.fault, "targets": fmt.targets(w.targets), "color": colors[w.fault], "key": (w.label, w.start_ns),
        "start": fmt.rel(w.start_ns, t0), "start_utc": fmt.utc(w.start_ns),
        "stop": fmt.rel(w.stop_ns, t0) if w.stop_ns is not None else "never stopped",
        "duration": fmt.duration(w.stop_ns - w.start_ns) if w.stop_ns is not None else (
            "≥ " + fmt.duration(frame.end - w.start_ns) if frame else "—"),
        "words": faultwords.describe(w.fault, w.targets, w.detail), "how": faultwords.how(w.detail),
        "sort": (w.start_ns, 0),
    } for w in windows]
    rows += [{
        "fault": f"note: {e.fault}", "targets": fmt.targets(e.targets), "color": colors[e.fault], "key": None,
        "start": fmt.rel(e.time_ns, t0), "start_utc": fmt.utc(e.time_ns), "stop": "", "duration": "",
        "words": faultwords.describe(e.fault, e.targets, e.detail), "how": faultwords.how(e.detail),
        "sort": (e.time_ns, 1),
    } for e in events]
    rows.sort(key=lambda r: (r["sort"], r["fault"], r["targets"]))
    for number, row in enumerate(rows, 1):
        row["anchor"] = f"fault-{number}"
    return rows


def _leadership_lanes(brains: SplitBrains) -> list[Lane]:
    """A lane per partition and one for the controller, each with its split brains (checkers.facts)."""
    lanes = [Lane(f"{topic}/{partition}<br>leader", f"leader of {topic}/{partition}", segments,
                  brains.leaders[(topic, partition)])
             for (topic, partition), segments in brains.partitions.items()]
    if any(s.broker is not None for s in brains.controllers):
        lanes.append(Lane("controller", "controller", brains.controllers, brains.controller_splits))
    return lanes


def _split_row(lane: Lane, split: Disagreement, t0: int) -> dict[str, Any]:
    return {
        "scope": lane.title.replace("<br>", " "),
        "start": fmt.rel(split.start_ns, t0), "stop": fmt.rel(split.end_ns, t0),
        "duration": fmt.duration(split.end_ns - split.start_ns),
        "claims": [f"broker {b}: {', '.join(observers)}" for b, observers in split.claims],
    }


@dataclass(frozen=True)
class Links:
    """What anomaly rows link to: fault rows by (label, start), log excerpts, the leaders' views."""

    fault_rows: dict[tuple[str, int], tuple[str, str]]
    excerpts: Excerpts
    observations: pd.DataFrame


def _anomaly_sections(outcome: Outcome, examples: dict[str, list[Example]], t0: int,
                      links: Links) -> list[AnomalySection]:
    errors = dict(outcome.errors)
    counts = dict(outcome.counts)
    sections = []
    for name in [n for n, _ in outcome.counts] + sorted(set(examples) - set(counts)):
        shown = examples.get(name, [])
        count = counts.get(name)
        if not shown and not count:
            continue
        section = AnomalySection(name, DESCRIPTIONS.get(name, ""), count, "error" if name in errors else "info")
        section.examples = [_example_row(e, t0, links) for e in shown]
        section.show_leaders = any(e.leaders is not None for e in shown)
        sections.append(section)
    return sections


def _example_row(example: Example, t0: int, links: Links) -> dict[str, Any]:
    f = example.fields
    where = ""
    if f.get("topic") is not None:
        where = f"{f['topic']}/{f.get('partition', '?')}"
        if f.get("offset") is not None:
            where += f" @ {f['offset']}"
    window = example.window
    when = ""
    if window:
        when = fmt.rel(window[1], t0) if window[0] == window[1] else f"{fmt.rel(window[0], t0)} → {fmt.rel(window[1], t0)}"
    return {
        "number": example.number, "anchor": f"{example.anomaly}-{example.number}", "when": when,
        "when_utc": fmt.utc(window[1]) if window else "", "value": "" if f.get("value") is None else str(f["value"]),
        "where": where, "process": "" if f.get("process") is None else str(f["process"]),
        "classified": example.classified,
        "details": list(_detail_lines({k: v for k, v in example.details.items() if k not in WHEN_KEYS}, t0)),
        "leaders": ", ".join(str(x) for x in example.leaders) if example.leaders is not None else None,
        "split": example.leaders is not None and len(example.leaders) > 1,
        "faults": evidence.fault_links(example, links.fault_rows, t0),
        "faults_computed": not example.faults_from_checker,
        "logs": evidence.log_links(example, links.excerpts, links.observations),
    }


def _label(key: str) -> str:
    """"complete_ns" reads as "complete": its value is shown as a time."""
    return key[:-3] if key.endswith("_ns") else key


def _detail_value(key: str, value: Any, t0: int) -> str:
    if key.endswith("_ns") and isinstance(value, int) and not isinstance(value, bool):
        return fmt.rel(value, t0)
    if isinstance(value, dict):
        keys = [k for k in NESTED_ORDER if k in value] + sorted(set(value) - set(NESTED_ORDER))
        return " · ".join(f"{_label(k)} {_detail_value(k, value[k], t0)}" for k in keys if value[k] is not None)
    if isinstance(value, list) and not any(isinstance(v, dict | list) for v in value):
        return ", ".join(str(v) for v in value)
    return fmt.compact(value) if not isinstance(value, str) else value


def _detail_lines(details: dict[str, Any], t0: int) -> Iterable[tuple[str, bool]]:
    """(text, is a sub-item) lines: "key: value", or a heading line and one sub-item per row of a list."""
    for key, value in details.items():
        if value is None:
            continue
        if isinstance(value, list) and any(isinstance(v, dict) for v in value):
            yield f"{_label(key)}:", False
            for item in value:
                yield (_item(item, t0) if isinstance(item, dict) else fmt.compact(item)), True
        else:
            yield f"{_label(key)}: {_detail_value(key, value, t0)}", False


def _item(row: dict[str, Any], t0: int) -> str:
    """A nested row (evidence, a position), its source first: "write: value v · process p · time +5.000 s"."""
    rest = {k: v for k, v in row.items() if k != "source"}
    text = _detail_value("", rest, t0)
    return f"{row['source']}: {text}" if row.get("source") is not None else text


def plot_config() -> str:
    """Plotly's config for every plot: no logo, no link out, no lasso."""
    return json.dumps({"displaylogo": False, "responsive": True, "showLink": False,
                       "modeBarButtonsToRemove": ["lasso2d", "select2d"]}, sort_keys=True)
