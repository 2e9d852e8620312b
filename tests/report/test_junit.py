"""junit.xml against the JUnit schema CI servers accept, and the text summary of `show`."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema

from checkers.configuration_result import ConfigurationResult
from harness.scenario import write_junit
from report import ReportError, case_from_run, render_junit, summary
from tests.report.runfolder import T0, verdict_of

SCHEMA = xmlschema.XMLSchema(Path(__file__).with_name("JUnit.xsd"))


def test_a_run_without_expectation_is_one_case_failing_on_its_errors(run_copy: Path) -> None:
    verdict = verdict_of(run_copy)
    del verdict["expectation"]
    (run_copy / "verdict.json").write_text(json.dumps(verdict))
    path = render_junit(run_copy)
    assert path == run_copy / "junit.xml"
    SCHEMA.validate(str(path))
    suite = ET.parse(path).getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("name"), suite.get("tests"), suite.get("failures"), suite.get("errors")) == (
        "isolate-az-leader",
        "1",
        "1",
        "0",
    )
    assert suite.get("timestamp") == "2026-05-28T20:26:40"
    case = suite.find("testcase")
    assert (
        case is not None
        and case.get("name") == "acks1"
        and case.get("classname") == "faultline.isolate-az-leader"
    )
    failure = case.find("failure")
    assert failure is not None
    assert failure.get("message") == (
        "expected: a valid verdict: no anomaly that this configuration forbids — "
        "observed: invalid: lost=3, divergence=3"
    )
    assert "allowed by this configuration: recovered=2" in (failure.text or "")
    assert render_junit(run_copy).read_bytes() == path.read_bytes()


def test_a_scenario_run_is_judged_by_its_expectation(run_copy: Path) -> None:
    path = render_junit(run_copy)
    SCHEMA.validate(str(path))
    case = ET.parse(path).getroot().find("testsuite/testcase")
    assert case is not None and list(case) == []  # invalid, but the scenario expected exactly that
    verdict = verdict_of(run_copy)
    verdict["expectation"].update(passed=False, mismatches=["two-leaders not observed"])
    (run_copy / "verdict.json").write_text(json.dumps(verdict))
    failure = ET.parse(render_junit(run_copy)).getroot().find("testsuite/testcase/failure")
    assert failure is not None
    assert failure.get("message") == (
        "expected: lost > 0, divergence > 0, two-leaders — "
        "observed: lost = 3, divergence = 3, two-leaders: yes, valid = False"
    )
    assert "mismatch: two-leaders not observed" in (failure.text or "")


def test_the_runners_results_are_cases(run_copy: Path, tmp_path: Path) -> None:
    results = [
        ConfigurationResult("isolate-az-leader", "acks1", "lost > 0", "lost = 3", True, 71.2, run_dir=run_copy,
                            status=1),
        ConfigurationResult("isolate-az-leader", "acksall", "no lost", "lost = 1", False, 70.0,
                            run_dir=tmp_path / "gone", status=1),
    ]
    write_junit(tmp_path, results)  # as the scenario runner writes it: each run folder adds its start and errors
    path = tmp_path / "junit.xml"
    SCHEMA.validate(str(path))
    suite = ET.parse(path).getroot().find("testsuite")
    assert suite is not None and suite.get("timestamp") == "2026-05-28T20:26:40"
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("2", "1", "0")


@pytest.mark.parametrize(("valid", "element"), [(True, None), ("unknown", "error")])
def test_valid_runs_pass_and_unknown_ones_are_errors(
    run_copy: Path, valid: object, element: str | None
) -> None:
    verdict = verdict_of(run_copy)
    verdict.update(valid=valid, errors={}, reason="no final reads: the drain never completed")
    (run_copy / "verdict.json").write_text(json.dumps(verdict))
    path = render_junit(run_copy)
    SCHEMA.validate(str(path))
    case = ET.parse(path).getroot().find("testsuite/testcase")
    assert case is not None
    children = [child.tag for child in case]
    assert children == ([element] if element else [])
    if element:
        assert "drain never completed" in (case.find("error").get("message") or "")  # type: ignore[union-attr]


def test_scenario_cases_make_one_suite_per_scenario(tmp_path: Path) -> None:
    cases = [
        ConfigurationResult(
            "isolate-az-leader",
            "acks=1",
            "lost > 0 and divergence > 0",
            "lost=3, divergence=3",
            True,
            61.5,
            started_ns=T0,
        ),
        ConfigurationResult(
            "isolate-az-leader",
            "acks=all idempotence=on",
            "no lost, no divergence",
            "lost=2",
            False,
            60.25,
            details="errors: lost=2\nexamples: p-az1-0-17",
            started_ns=T0 + 120 * 10**9,
        ),
        ConfigurationResult(
            "unclean-election", "unclean=true", "c lost", "no verdict: drain timed out\x00\x1b", None, 30.0
        ),
    ]
    path = render_junit(tmp_path / "nightly.xml", cases, hostname="ci-runner-1")
    SCHEMA.validate(str(path))
    suites = ET.parse(path).getroot().findall("testsuite")
    assert [
        (s.get("name"), s.get("id"), s.get("tests"), s.get("failures"), s.get("errors"), s.get("time"))
        for s in suites
    ] == [
        ("isolate-az-leader", "0", "2", "1", "0", "121.750"),
        ("unclean-election", "1", "1", "0", "1", "30.000"),
    ]
    assert (
        suites[0].get("timestamp") == "2026-05-28T20:26:40"
        and suites[1].get("timestamp") == "1970-01-01T00:00:00"
    )
    failure = suites[0].find("testcase[@name='acks=all idempotence=on']/failure")
    assert failure is not None
    assert failure.get("message") == "expected: no lost, no divergence — observed: lost=2"
    assert "examples: p-az1-0-17" in (failure.text or "")
    assert suites[0].find("testcase[@name='acks=1']/failure") is None
    error = suites[1].find("testcase/error")
    assert error is not None and "\x00" not in (error.get("message") or "")


def test_junit_input_errors(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="at least one test case"):
        render_junit(tmp_path, [])
    with pytest.raises(ReportError, match="name a run folder"):
        render_junit(tmp_path / "x.xml")
    with pytest.raises(ReportError, match="no such folder"):
        render_junit(tmp_path / "missing" / "x.xml", [case_from_run(tmp_path)])


def test_summary_states_verdict_faults_and_split_brain(built_run: Path) -> None:
    text = summary(built_run)
    lines = text.splitlines()
    assert lines[0] == ("isolate-az-leader [acks1] / 20260528T202640Z: PASS (expected) · INVALID: lost 3 acknowledged "
                        "writes, 3 offsets holding two values")
    assert "  errors:     lost=3, divergence=3" in lines
    assert "  allowed:    recovered=2" in lines
    assert any(line.startswith("  writes:     1,200 (acked 1,028") for line in lines)
    assert any("kill broker-2 at +14.000 s for 2.0 s" in line for line in lines)
    assert any(
        line.startswith("  split:      t/0: 2 leaders at once (0, 1) at +6.001 s for 6.0 s") for line in lines
    )
    assert len(lines) < 15


def test_summary_of_an_unknown_run(tmp_path: Path) -> None:
    text = summary(tmp_path)
    assert text.splitlines()[0].endswith(": FAIL · UNKNOWN: no verdict.json: the checker did not finish")
    assert "no verdict.json" in text and "not written yet" in text



def test_an_inconclusive_run_is_a_skipped_case_and_says_what_is_missing(run_copy: Path) -> None:
    missing = "precondition not shown: an AlterIsr in flight in broker-0's logs (precondition): 0 line(s)"
    verdict = verdict_of(run_copy)
    verdict["expectation"].update(passed=False, mismatches=[], inconclusive=[missing])
    (run_copy / "verdict.json").write_text(json.dumps(verdict))
    path = render_junit(run_copy)
    SCHEMA.validate(str(path))
    suite = ET.parse(path).getroot().find("testsuite")
    assert suite is not None and (suite.get("failures"), suite.get("skipped")) == ("0", "1")
    skipped = suite.find("testcase/skipped")
    assert skipped is not None and skipped.get("message") == f"inconclusive: {missing}"
    text = summary(run_copy)
    assert "INCONCLUSIVE (precondition not shown: " in text.splitlines()[0]
    assert f"  missing:    {missing}" in text
    from report import render_report
    page = render_report(run_copy).read_text()
    assert ">INCONCLUSIVE (precondition not shown: " in page and missing.replace("'", "&#39;") in page
