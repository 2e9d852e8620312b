"""junit.xml: runs as a CI server shows test results, one test case per scenario configuration.

The file follows the JUnit XML format of Apache Ant's JUnit task, the one
Jenkins, GitLab and the other CI servers read: a ``<testsuites>`` root with one
``<testsuite>`` per scenario (all the attributes that format requires) and a
``<testcase>`` per configuration. A case that did not show what was expected
is a ``<failure>`` whose message is the expected-versus-observed line; a case
with no verdict (unknown) is an ``<error>``; an inconclusive one (its
expectation's precondition never shown) is ``<skipped>``. The bytes depend only on the
cases given: no clock, no host name unless one is passed.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from checkers.configuration_result import ConfigurationResult
from report import fmt
from report.errors import ReportError
from report.files import write_atomically
from report.loaded_run import load_run
from report.verdict_view import read_expectation, read_outcome
from testbed.runfolder import RunFolder

PACKAGE = "faultline"
VALID_EXPECTATION = "a valid verdict: no anomaly that this configuration forbids"
# XML 1.0 cannot carry most control characters, even escaped; error texts from clients may hold some.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def with_run(case: ConfigurationResult) -> ConfigurationResult:
    """`case` with what its run folder adds: the run's start and its errors (what the scenario runner writes).

    Where the run's verdict is unknown the case is an error (no verdict), not a failure. A case without
    a run folder, or whose run has no verdict (its harness failed), is given back as it is.
    """
    run_dir = case.run_dir
    if run_dir is None or not RunFolder(run_dir).finished:
        return case
    from_run = case_from_run(run_dir)
    details = "\n".join(part for part in (case.details, from_run.details) if part)
    passed = None if from_run.passed is None else case.passed
    return replace(case, passed=passed, details=details, started_ns=from_run.started_ns,
                   inconclusive=case.inconclusive or from_run.inconclusive)


def case_from_run(run_dir: str | Path, scenario: str | None = None,
                  configuration: str | None = None) -> ConfigurationResult:
    """The case of one run folder from its verdict.json.

    Where the verdict holds the scenario's ``expectation`` (expected, observed, passed), that is the case;
    otherwise the run is judged by its verdict alone: valid passes, invalid fails. Unknown is an error.
    """
    run = load_run(run_dir, tables=("nemesis", "observations"))
    outcome = read_outcome(run.verdict)
    span = run.span_ns()
    details = [f"run: {run.run_dir}", f"report: {run.run_dir / 'report.html'}"]
    if outcome.errors:
        details.append(f"errors: {outcome.errors_line}")
    if outcome.information:
        details.append(f"allowed by this configuration: {outcome.information_line}")
    expected, observed = VALID_EXPECTATION, outcome.headline
    passed = {"valid": True, "invalid": False}.get(outcome.state)
    expectation = read_expectation(run.verdict)
    inconclusive = ""
    if expectation is not None:
        expected = expectation.expected
        inconclusive = "; ".join(expectation.inconclusive)
        if outcome.state != "unknown":  # no verdict stays an error, whatever was expected
            observed, passed = expectation.observed, expectation.passed
        details += [f"mismatch: {m}" for m in expectation.mismatches]
    seconds = round((span[1] - span[0]) / fmt.NS, 3) if span else 0.0
    return ConfigurationResult(scenario or run.scenario, configuration or run.configuration or run.run_id, expected,
                               observed, passed, seconds, details="\n".join(details), run_dir=run.run_dir,
                               started_ns=span[0] if span else None, inconclusive=inconclusive)


def _clean(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def _timestamp(cases: Sequence[ConfigurationResult]) -> str:
    """When the suite began, as the format wants it: ISO 8601 without a time zone (UTC here)."""
    starts = [c.started_ns for c in cases if c.started_ns is not None]
    seconds = min(starts) // fmt.NS if starts else 0
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")


def _seconds(value: float) -> str:
    return f"{max(value, 0.0):.3f}"


def _testcase(suite: ET.Element, case: ConfigurationResult) -> None:
    element = ET.SubElement(suite, "testcase", {
        "name": _clean(case.configuration), "classname": _clean(f"{PACKAGE}.{case.scenario}"),
        "time": _seconds(case.seconds),
    })
    if case.passed is True:
        return
    body = f"expected: {case.expected}\nobserved: {case.observed}\n"
    if case.details:
        body += "\n" + case.details.rstrip("\n") + "\n"
    if case.passed is False and case.inconclusive:
        outcome = ET.SubElement(element, "skipped", {"message": _clean(f"inconclusive: {case.inconclusive}")})
    elif case.passed is False:
        outcome = ET.SubElement(element, "failure", {
            "message": _clean(f"expected: {case.expected} — observed: {case.observed}"),
            "type": "unexpected-outcome"})
    else:
        outcome = ET.SubElement(element, "error", {
            "message": _clean(f"no verdict: {case.observed}"), "type": "no-verdict"})
    outcome.text = _clean(body)


def _suite(root: ET.Element, number: int, scenario: str, cases: Sequence[ConfigurationResult],
           hostname: str) -> None:
    suite = ET.SubElement(root, "testsuite", {
        "name": _clean(scenario), "package": _clean(f"{PACKAGE}.{scenario}"), "id": str(number),
        "timestamp": _timestamp(cases), "hostname": _clean(hostname), "tests": str(len(cases)),
        "failures": str(sum(c.passed is False and not c.inconclusive for c in cases)),
        "errors": str(sum(c.passed is None for c in cases)),
        "time": _seconds(sum(c.seconds for c in cases)),
    })
    inconclusive = sum(c.passed is False and bool(c.inconclusive) for c in cases)
    if inconclusive:
        suite.set("skipped", str(inconclusive))
    properties = ET.SubElement(suite, "properties")
    ET.SubElement(properties, "property", {"name": "scenario", "value": _clean(scenario)})
    for case in cases:
        _testcase(suite, case)
    out = ET.SubElement(suite, "system-out")
    out.text = _clean("".join(f"{c.configuration}: {_said(c)}: {c.observed}\n" for c in cases))
    ET.SubElement(suite, "system-err").text = ""


def _said(case: ConfigurationResult) -> str:
    if case.passed is False and case.inconclusive:
        return "INCONCLUSIVE"
    return {True: "passed", False: "FAILED", None: "ERROR (no verdict)"}[case.passed]


def junit_xml(results: Sequence[ConfigurationResult], hostname: str = "localhost") -> str:
    """The document for ``results``: a suite per scenario, in order of first appearance."""
    if not results:
        raise ReportError("junit.xml needs at least one test case")
    scenarios: dict[str, list[ConfigurationResult]] = {}
    for case in results:
        scenarios.setdefault(case.scenario, []).append(case)
    root = ET.Element("testsuites")
    for number, (scenario, mine) in enumerate(scenarios.items()):
        _suite(root, number, scenario, mine, hostname)
    ET.indent(root, space="  ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def render_junit(target: str | Path, cases: Sequence[ConfigurationResult] | None = None,
                 hostname: str = "localhost") -> Path:
    """Write junit.xml and return its path.

    ``target`` is a folder (the file goes in it as junit.xml) or a path ending in .xml. ``cases`` are
    `ConfigurationResult`s, written as they are (`with_run` adds a run folder's lines). Without ``cases``, ``target``
    must be a run folder: its one case comes from its verdict (`case_from_run`).
    """
    path = Path(target)
    out = path if path.suffix == ".xml" else RunFolder(path).junit
    if cases is None:
        if path.suffix == ".xml":
            raise ReportError(f"{path}: without test cases, name a run folder")
        cases = [case_from_run(path)]
    if not out.parent.is_dir():
        raise ReportError(f"{out.parent}: no such folder")
    return write_atomically(out, junit_xml(cases, hostname))


def render_junit_cases(target: str | Path, cases: Sequence[ConfigurationResult],
                       hostname: str = "localhost") -> Path:
    """`render_junit` with the cases required: what the scenario runner calls after its configurations."""
    return render_junit(target, cases, hostname)
