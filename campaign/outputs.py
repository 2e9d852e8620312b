"""A campaign's files in results/campaigns/<timestamp>/: campaign.json, junit.xml and summary.md.

campaign.json has every case with each attempt's verdict (PASS/FAIL/ERROR/INCONCLUSIVE), expected and observed,
duration and run folder, the case's outcome (PASS/FLAKE/FAIL/REGRESSION/INCONCLUSIVE/SKIPPED), what was skipped
and why, the matrix cells Kafka refuses, the lake's state and what changed. junit.xml is one file
for the campaign, a suite per scenario and a case per configuration, in the format of
`report.junit` (a FLAKE passes and is named in the suite's output; a REGRESSION or an
unconfirmed FAIL fails; a case whose attempts all had no verdict is an error; SKIPPED and INCONCLUSIVE are
<skipped>).
summary.md is the job summary: the PASS/FAIL table and what changed. Every file is written whole.
Must never: run anything or change a run folder.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from campaign.campaign_report import CampaignReport, change_lines
from campaign.flakes import history_lines
from campaign.page import render_index
from campaign.records import (
    ERROR,
    FLAKE,
    INCONCLUSIVE,
    PASS,
    REGRESSION,
    SKIPPED,
    CaseResult,
)
from checkers.configuration_result import ConfigurationResult
from report.junit import junit_xml
from testbed.files import write_json_atomic, write_text_atomic
from testbed.runfolder import RunFolder

CAMPAIGN_FILE, JUNIT_FILE, INDEX_FILE, SUMMARY_FILE = "campaign.json", "junit.xml", "index.html", "summary.md"


def attempt_json(report: CampaignReport, result: CaseResult) -> list[dict[str, Any]]:
    return [{"attempt": a.number, "outcome": a.outcome, "expected": a.expected, "observed": a.observed,
             "mismatches": a.mismatches, "verdict_line": a.verdict_line, "valid": a.valid, "anomaly_kinds": a.kinds,
             "counts": {k: n for k, n in a.counts.items() if n}, "started_at": a.started_at.isoformat(),
             "duration_s": round(a.duration_s, 1), "run_dir": report.link(a.run_dir),
             "report": report.link(RunFolder(a.run_dir).report) if a.run_dir else None}
            for a in result.attempts]


def campaign_json(report: CampaignReport) -> dict[str, Any]:
    finished = report.finished_at
    return {
        "campaign_id": report.campaign_id, "name": report.name, "file": str(report.source), "seed": report.seed,
        "seed_from": report.seed_from, "budget_s": report.budget_s, "engine": report.engine,
        "started_at": report.started_at.isoformat(), "finished_at": finished.isoformat() if finished else None,
        "elapsed_s": round((finished - report.started_at).total_seconds(), 1) if finished else None,
        "status": report.status, "counts": report.counts,
        "cases": [{"entry": r.case.entry, "kind": r.case.kind, "scenario": r.case.scenario,
                   "configuration": r.case.label, "settings": r.case.settings, "outcome": r.outcome,
                   "skipped": r.skipped, "duration_s": round(r.duration_s, 1), "attempts": attempt_json(report, r)}
                  for r in report.results],
        "skipped": [{"scenario": r.case.scenario, "configuration": r.case.label, "reason": r.skipped}
                    for r in report.results if r.outcome == SKIPPED],
        "refused": report.refused, "lake": report.lake, "changes": report.changes.to_json(),
        "shard": report.shard, "shards": report.shards, "history": _history_json(report),
    }


def _history_json(report: CampaignReport) -> dict[str, Any] | None:
    """The outcomes of each case over the last campaigns of the name (campaign.flakes), None for a shard's."""
    history = report.history
    if history is None:
        return None
    return {"window": history.window, "runs": history.runs, "threshold": history.threshold, "campaigns": history.ids,
            "note": history.note,
            "cases": [{"scenario": t.scenario, "configuration": t.configuration, "runs": t.runs, "counts": t.counts,
                       "flake_rate": round(t.flake_rate, 4), "outcomes": [o for _, o in t.outcomes],
                       "above_threshold": t in history.above} for t in history.trends]}


def junit_case(result: CaseResult) -> ConfigurationResult:
    case, attempts = result.case, result.attempts
    last = attempts[-1]
    passed: bool | None = result.outcome in (PASS, FLAKE)
    if not passed and all(a.outcome == ERROR for a in attempts):
        passed = None
    observed = last.observed
    if result.outcome == FLAKE:
        observed = f"FLAKE: attempt 1 {attempts[0].outcome} ({attempts[0].observed}); passed when run again"
    elif result.outcome == INCONCLUSIVE:
        observed = f"INCONCLUSIVE: {len(attempts)} attempt(s), none showed its precondition; {observed}"
    elif result.outcome == REGRESSION:
        observed = f"REGRESSION: failed twice; {observed}"
    elif len(attempts) > 1:  # an inconclusive attempt and a conclusive one
        observed = f"{result.outcome}: {' then '.join(a.outcome for a in attempts)}; {observed}"
    details = "\n".join(f"attempt {a.number}: {a.outcome}: {a.observed}; report: {RunFolder(a.run_dir).report}"
                        for a in attempts if a.run_dir is not None)
    if result.skipped:
        details += f"\n{result.skipped}"
    inconclusive = "; ".join(m for m in last.mismatches if m.startswith("precondition not shown")) \
        if result.outcome == INCONCLUSIVE else ""
    return ConfigurationResult(case.scenario, case.label, last.expected, observed, passed, result.duration_s,
                               details=details, started_ns=int(attempts[0].started_at.timestamp() * 1e9),
                               inconclusive=inconclusive or ("every attempt inconclusive"
                                                             if result.outcome == INCONCLUSIVE else ""))


def junit_document(report: CampaignReport) -> str:
    """The campaign's JUnit XML: the run cases through `junit_xml`, the skipped ones added as <skipped/>."""
    ran = [r for r in report.results if r.attempts]
    if not ran:
        root = ET.Element("testsuites")
    else:
        root = ET.fromstring(junit_xml([junit_case(r) for r in ran]).split("\n", 1)[1])
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    for result in report.results:
        if result.attempts:
            continue
        suite = suites.get(result.case.scenario)
        if suite is None:
            suite = suites[result.case.scenario] = _empty_suite(root, result.case.scenario, len(suites))
        case = ET.Element("testcase", {"name": result.case.label, "classname": f"faultline.{result.case.scenario}",
                                       "time": "0.000"})
        ET.SubElement(case, "skipped", {"message": result.skipped or "not run"})
        position = len(suite.findall("testcase")) + (1 if suite.find("properties") is not None else 0)
        suite.insert(position, case)
        suite.set("tests", str(int(suite.get("tests", "0")) + 1))
        suite.set("skipped", str(int(suite.get("skipped", "0")) + 1))
    ET.indent(root, space="  ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _empty_suite(root: ET.Element, scenario: str, number: int) -> ET.Element:
    suite = ET.SubElement(root, "testsuite", {
        "name": scenario, "package": f"faultline.{scenario}", "id": str(number), "timestamp": "1970-01-01T00:00:00",
        "hostname": "localhost", "tests": "0", "failures": "0", "errors": "0", "time": "0.000"})
    properties = ET.SubElement(suite, "properties")
    ET.SubElement(properties, "property", {"name": "scenario", "value": scenario})
    ET.SubElement(suite, "system-out").text = ""
    ET.SubElement(suite, "system-err").text = ""
    return suite


def summary_markdown(report: CampaignReport) -> str:
    counts = ", ".join(f"{n} {o}" for o, n in report.counts.items() if n) or "nothing"
    lines = [f"## Campaign {report.name}: {report.headline}", "",
             f"`{report.campaign_id}`, seed {report.seed} (from {report.seed_from}), budget {report.budget_s:.0f} s: "
             f"{counts}. {report.lake}.", *([f"This campaign is {report.made_of}."] if report.made_of else []), "",
             "| scenario | configuration | outcome | attempts | observed |", "| --- | --- | --- | --- | --- |"]
    for r in sorted(report.results, key=lambda r: r.case.key):
        attempts = " → ".join(a.outcome for a in r.attempts) or "-"
        last = r.attempts[-1] if r.attempts else None
        observed = "; ".join(p for p in (last.verdict_line if last else "", last.observed if last else "",
                                         r.skipped or "") if p)
        observed = observed.replace("|", "\\|")
        lines.append(f"| {r.case.scenario} | {r.case.label} | **{r.outcome}** | {attempts} | {observed} |")
    lines += ["", f"### What changed since {report.changes.previous or 'the last campaign'}", ""]
    lines += [f"- {line}" for line in change_lines(report.changes)]
    if report.history is not None:
        lines += ["", f"### Outcomes over {report.history.span} of {report.name}", ""]
        lines += [f"- {line}" for line in history_lines(report.history)]
    skipped = [r for r in report.results if r.outcome == SKIPPED]
    if skipped:
        lines += ["", "### Skipped", ""] + [f"- {r.case.scenario} [{r.case.label}]: {r.skipped}" for r in skipped]
    return "\n".join(lines) + "\n"


def write_outputs(report: CampaignReport) -> None:
    """campaign.json, junit.xml, summary.md and index.html, each written whole."""
    write_json_atomic(report.folder / CAMPAIGN_FILE, campaign_json(report))
    write_text_atomic(report.folder / JUNIT_FILE, junit_document(report))
    write_text_atomic(report.folder / SUMMARY_FILE, summary_markdown(report))
    write_text_atomic(report.folder / INDEX_FILE, render_index(report))
