"""index.html of a campaign: PASS/FAIL per scenario × configuration, every run's report linked, what changed.

One self-contained page (no script, no network), opened from disk: links to the run reports are
relative to the campaign folder, so the folder can be copied (a CI artifact) and still works.
Must never: run anything or read a run folder (campaign.json's facts only).
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import jinja2

from campaign.campaign_report import CampaignReport, change_lines
from campaign.flakes import SHOWN
from campaign.matrix import cell_label
from campaign.records import SKIPPED
from testbed.runfolder import RunFolder

_TEMPLATES = resources.files("campaign") / "templates"


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FunctionLoader(lambda name: (_TEMPLATES / name).read_text(encoding="utf-8")),
        autoescape=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


def _rows(report: CampaignReport) -> list[dict[str, Any]]:
    rows = []
    for result in sorted(report.results, key=lambda r: r.case.key):
        case = result.case
        rows.append({
            "scenario": case.scenario, "configuration": case.label, "kind": case.kind,
            "settings": cell_label(case.settings),
            "outcome": result.outcome, "duration_s": result.duration_s, "skipped": result.skipped,
            "attempts": [{"number": a.number, "outcome": a.outcome, "observed": a.observed, "expected": a.expected,
                          "verdict_line": a.verdict_line,
                          "kinds": a.kinds, "report": report.link(RunFolder(a.run_dir).report) if a.run_dir else None,
                          "duration_s": a.duration_s}
                         for a in result.attempts],
        })
    return rows


def render_index(report: CampaignReport) -> str:
    rows = _rows(report)
    return _environment().get_template("index.html.j2").render(
        report=report, rows=rows, counts=report.counts, changes=change_lines(report.changes),
        previous=report.changes.previous, scenarios=len({r["scenario"] for r in rows}),
        skipped=[r for r in rows if r["outcome"] == SKIPPED], refused=report.refused, history=report.history,
        above=report.history.above if report.history else [], shown=SHOWN)
