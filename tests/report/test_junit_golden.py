"""junit.xml byte for byte: every writer of it (the scenario runner, `report` on a timestamp folder, a lone
run, the campaign) gives the bytes in tests/report/golden/ for the same inputs.

The golden files were written by the code before configuration results became one record
(`checkers.configuration_result.ConfigurationResult`); paths under the test's temporary folder read TMP.
Regenerate them only for a change meant to change the bytes: FAULTLINE_GOLDEN=write pytest this file.
"""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from campaign.campaign_report import CampaignReport
from campaign.changes import Changes
from campaign.outputs import junit_document
from campaign.plan import Case
from campaign.records import Attempt, CaseResult
from checkers.configuration_result import ConfigurationResult as record
from harness.scenario import junit_of_folders, write_junit
from report import render_junit
from tests.report.runfolder import T0

GOLDEN = Path(__file__).with_name("golden")


def same_as_golden(name: str, text: str, tmp_path: Path) -> None:
    text = text.replace(str(tmp_path), "TMP")
    path = GOLDEN / name
    if os.environ.get("FAULTLINE_GOLDEN") == "write":
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


def test_the_scenario_runners_junit(run_copy: Path, tmp_path: Path) -> None:
    top = run_copy.parent
    shutil.copytree(run_copy, top / "acksall")  # a failure whose run folder adds its lines to the body
    cases = [
        record("isolate-az-leader", "acks1", "lost > 0", "lost = 3", True, 71.2, run_dir=run_copy, status=1),
        record("isolate-az-leader", "acksall", "no lost", "lost = 1", False, 70.0, run_dir=top / "acksall",
               status=1),
        record("isolate-az-leader", "crashes", "a verdict", "the harness failed: WorkloadError: died\x1b", None,
               3.5, run_dir=top / "crashes", status=3),
    ]
    write_junit(top, cases)
    same_as_golden("scenario.xml", (top / "junit.xml").read_text(encoding="utf-8"), tmp_path)


def test_a_timestamp_folders_and_a_lone_runs_junit(run_copy: Path, tmp_path: Path) -> None:
    top = run_copy.parent
    (top / "unfinished").mkdir()
    same_as_golden("folders.xml", junit_of_folders(top, [run_copy], [top / "unfinished"]).read_text(), tmp_path)
    same_as_golden("run.xml", render_junit(run_copy).read_text(encoding="utf-8"), tmp_path)


def test_given_cases_with_a_host_name(tmp_path: Path) -> None:
    cases = [
        record("isolate-az-leader", "acks=1", "lost > 0", "lost=3", True, 61.5, started_ns=T0),
        record("isolate-az-leader", "acks=all", "no lost", "lost=2", False, 60.25,
               details="errors: lost=2\nexamples: p-az1-0-17", started_ns=T0 + 120 * 10**9),
        record("unclean-election", "unclean=true", "c lost", "no verdict: drain timed out\x00", None, 30.0),
    ]
    same_as_golden("cases.xml", render_junit(tmp_path / "x.xml", cases, hostname="ci-1").read_text(), tmp_path)


def attempt(number: int, outcome: str, run_dir: Path | None) -> Attempt:
    return Attempt(number, outcome, "no lost", f"lost = {number}", datetime.fromtimestamp(T0 / 1e9 + number, UTC),
                   40.0 + number, run_dir)


@pytest.mark.parametrize("with_runs", [True, False])
def test_the_campaigns_junit(tmp_path: Path, with_runs: bool) -> None:
    def case(scenario: str, configuration: str | None) -> Case:
        return Case(0, "catalogue", scenario, configuration, tmp_path / f"{scenario}.yaml", {})

    run = tmp_path / "runs" / "a"
    results = [
        CaseResult(case("skipped-first", None), [], "over budget: 10 s left"),
        CaseResult(case("a", "pass"), [attempt(1, "PASS", run)]),
        CaseResult(case("a", "flake"), [attempt(1, "FAIL", run), attempt(2, "PASS", None)]),
        CaseResult(case("a", "regression"), [attempt(1, "FAIL", run), attempt(2, "FAIL", run)],
                   "not run again (over budget)"),
        CaseResult(case("b", "errors"), [attempt(1, "ERROR", None)]),
        CaseResult(case("b", "skipped"), [], None),
    ]
    if not with_runs:
        results = [r for r in results if not r.attempts]
    report = CampaignReport("c-1", "c", tmp_path / "c.yaml", tmp_path, 7, "--seed", 3600.0, None,
                            datetime.fromtimestamp(T0 / 1e9, UTC), results, changes=Changes(None))
    same_as_golden(f"campaign-{'runs' if with_runs else 'skipped'}.xml", junit_document(report), tmp_path)
