"""Whole campaigns on the fake runtime: flakes told from regressions, the budget, what changed since last time.

Each run is the real run flow of `harness run` (run folder, verdict, report, junit.xml) on the fake
machine; the campaign's clock is moved on by the run function, so budgets need no waiting.
"""

from __future__ import annotations

import io
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from campaign import lake as lakes
from campaign.campaign_report import CampaignReport
from campaign.command import Options, run_campaign
from campaign.runner import CAMPAIGN_ENV
from checkers.anomalies import ANOMALIES
from harness.spec import Spec
from tests.campaign.fake import Driver, write_campaign, write_scenario
from tests.campaign.pages import JUNIT_SCHEMA, links, text_of
from tests.harness.test_run_fake import FakeMachine

FAILS = {"present": ["lost"]}  # the fake workloads lose nothing: a run expecting a loss fails
PASSES = {"absent": ["lost"]}


def campaign(path: Path, tmp_path: Path, driver: Driver, budget: str | None = None,
             overhead_s: float | None = None) -> tuple[CampaignReport, str]:
    out = io.StringIO()
    report = run_campaign(Options(path, budget=budget, seed=0, results=tmp_path / "results", lake=tmp_path / "lake",
                                  overhead_s=overhead_s),
                          out, driver, check=lambda cases, engine: None, ingest=lambda runs, lake: "lake: not in this test",
                          clock=driver.clock)
    return report, out.getvalue()


def outcomes(report: CampaignReport) -> dict[str, tuple[str, list[str]]]:
    data = json.loads((report.folder / "campaign.json").read_text())
    return {c["scenario"]: (c["outcome"], [a["outcome"] for a in c["attempts"]]) for c in data["cases"]}


def test_a_configuration_failing_once_is_a_flake_twice_a_regression(machine: FakeMachine, tmp_path: Path) -> None:
    flaky = write_scenario(tmp_path, "flaky", FAILS)
    write_scenario(tmp_path, "broken", FAILS)
    write_scenario(tmp_path, "steady", PASSES)
    seen_ids: list[str | None] = []

    def flip(spec: Spec, run_dir: Path, runs: int) -> None:
        seen_ids.append(os.environ.get(CAMPAIGN_ENV))
        if spec.name == "flaky":  # the expectation file flipped between the two attempts
            raw = yaml.safe_load(flaky.read_text())
            raw["expect"] = PASSES if raw["expect"] == FAILS else FAILS
            flaky.write_text(yaml.safe_dump(raw))

    path = write_campaign(tmp_path, [{"scenario": f"{n}.yaml"} for n in ("flaky", "broken", "steady")])
    report, said = campaign(path, tmp_path, Driver(machine.machine, after=flip))

    assert outcomes(report) == {"flaky": ("FLAKE", ["FAIL", "PASS"]), "broken": ("REGRESSION", ["FAIL", "FAIL"]),
                                "steady": ("PASS", ["PASS"])}
    assert report.status == 1
    assert set(seen_ids) == {report.campaign_id} and os.environ.get(CAMPAIGN_ENV) is None
    assert "[1/3] flaky [default] attempt 2: PASS" in said and "broken [default]: REGRESSION" in said
    data = json.loads((report.folder / "campaign.json").read_text())
    assert data["status"] == 1 and data["counts"]["FLAKE"] == 1 and data["counts"]["REGRESSION"] == 1
    for case in data["cases"]:
        for attempt in case["attempts"]:  # every attempt is its own run folder, with its verdict and report
            run_dir = report.folder / attempt["run_dir"]
            assert (run_dir / "verdict.json").is_file() and (report.folder / attempt["report"]).is_file()
            assert attempt["duration_s"] > 0 and attempt["expected"]

    junit = report.folder / "junit.xml"
    JUNIT_SCHEMA.validate(str(junit))
    suites = {s.get("name"): s for s in yaml_free_suites(junit)}
    assert suites["flaky"].get("failures") == "0" and "FLAKE" in suites["flaky"].findtext("system-out", "")
    assert suites["broken"].get("failures") == "1"
    assert "REGRESSION" in suites["broken"].find("testcase/failure").get("message", "")  # type: ignore[union-attr]

    page = report.folder / "index.html"
    reports = {str(report.folder / a["report"]) for c in data["cases"] for a in c["attempts"]}
    assert {str(report.folder / href) for href in links(page)} == reports  # every run linked, nothing else
    text = text_of(page)
    assert "flaky default catalogue FLAKE attempt 1 : FAIL attempt 2 : PASS" in text
    # each attempt shows the run's own line, the expectation and the history's safety apart
    assert "FAIL (expected lost > 0) · VALID" in text and "PASS (expected) · VALID" in text
    assert {a["verdict_line"] for c in data["cases"] for a in c["attempts"]} == {
        "FAIL (expected lost > 0) · VALID", "PASS (expected) · VALID"}
    assert "no earlier campaign of this name in the lake" in text

    # The same flaky configuration alone: a flake is no regression, the exit status is 0.
    flaky.write_text(yaml.safe_dump({**yaml.safe_load(flaky.read_text()), "expect": FAILS}))
    alone, _ = campaign(write_campaign(tmp_path, [{"scenario": "flaky.yaml"}], name="alone"), tmp_path,
                        Driver(machine.machine, after=flip))
    assert outcomes(alone) == {"flaky": ("FLAKE", ["FAIL", "PASS"])} and alone.status == 0


def yaml_free_suites(junit: Path) -> list[Any]:
    import xml.etree.ElementTree as ET

    return ET.parse(junit).getroot().findall("testsuite")


def test_over_budget_it_stops_between_runs_heals_and_says_what_it_skipped(machine: FakeMachine, tmp_path: Path) -> None:
    for name in ("first", "second", "third"):
        write_scenario(tmp_path, name, FAILS if name == "first" else PASSES)
    path = write_campaign(tmp_path, [{"scenario": f"{n}.yaml"} for n in ("first", "second", "third")])
    # The first run is estimated at 11 s and takes 200 s of a 150 s budget: it runs to its end, nothing after it.
    driver = Driver(machine.machine, seconds_per_run=200)
    report, said = campaign(path, tmp_path, driver, budget="150s", overhead_s=10)

    assert outcomes(report) == {"first": ("FAIL", ["FAIL"]), "second": ("SKIPPED", []), "third": ("SKIPPED", [])}
    assert report.status == 1  # a failure the budget left no time to run again is not a pass
    (run,) = driver.runs
    assert json.loads((run / "verdict.json").read_text())["valid"] is True  # the run was never cut short
    runtime = machine.runtime
    assert runtime.destroyed >= 1 and runtime.alive() == []
    assert runtime.cleared_last() == sorted(h.name for h in runtime.plan.hosts)  # healed
    data = json.loads((report.folder / "campaign.json").read_text())
    assert [(s["scenario"], s["reason"].split(":")[0]) for s in data["skipped"]] == [
        ("second", "over budget"), ("third", "over budget")]
    assert data["cases"][0]["skipped"].startswith("not run again (over budget: 0 s of 150 s left")
    assert "skipped: second [default]: over budget" in said and "skipped: third [default]: over budget" in said
    junit = report.folder / "junit.xml"
    JUNIT_SCHEMA.validate(str(junit))
    assert [s.get("skipped") for s in yaml_free_suites(junit)] == [None, "1", "1"]
    text = text_of(report.folder / "index.html")
    assert "Skipped (2) second default : over budget" in text
    assert "not run again (over budget" in (report.folder / "summary.md").read_text()


def plant(lake: Path, campaign_id: str, cases: dict[str, tuple[str, list[str]]]) -> None:
    """An earlier campaign named "fake" in the lake's campaigns table: per scenario, its outcome and anomaly kinds."""
    rows = [{"campaign": "fake", "started_at": datetime(2026, 11, 1, 2, tzinfo=UTC), "seed": 1, "entry": i,
             "kind": "catalogue", "scenario": name, "configuration": "default", "settings": "{}", "attempt": 1,
             "attempt_outcome": "PASS" if outcome == "PASS" else "FAIL", "outcome": outcome,
             **{a: int(a in kinds) for a in ANOMALIES}, "anomaly_kinds": kinds}
            for i, (name, (outcome, kinds)) in enumerate(cases.items())]
    lakes.write_campaign(lake, campaign_id, rows)


def test_against_an_earlier_campaign_in_the_lake_it_says_what_changed(machine: FakeMachine, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    plant(lake, "fake-20261101T020000.00Z", {"steady": ("REGRESSION", []), "broken": ("PASS", []),
                                               "flaky": ("PASS", []), "dup": ("PASS", [])})
    plant(lake, "other-campaign", {})  # another campaign's name: never compared with
    flaky = write_scenario(tmp_path, "flaky", FAILS)
    for name, expect in (("steady", PASSES), ("broken", FAILS), ("dup", PASSES)):
        write_scenario(tmp_path, name, expect)

    def after(spec: Spec, run_dir: Path, runs: int) -> None:
        if spec.name == "flaky":
            flaky.write_text(yaml.safe_dump({**yaml.safe_load(flaky.read_text()), "expect": PASSES}))
        if spec.name == "dup":  # this run's verdict counts a duplicate (allowed here): a new anomaly kind
            verdict = json.loads((run_dir / "verdict.json").read_text())
            verdict["counts"]["duplicate"] = 2
            (run_dir / "verdict.json").write_text(json.dumps(verdict))

    path = write_campaign(tmp_path, [{"scenario": f"{n}.yaml"} for n in ("steady", "broken", "flaky", "dup")])
    report, said = campaign(path, tmp_path, Driver(machine.machine, after=after))

    expected = ["newly failing: broken [default]", "fixed: steady [default]", "flaky: flaky [default]",
                "new anomaly kinds: dup [default]: duplicate"]
    summary = (report.folder / "summary.md").read_text()
    page = text_of(report.folder / "index.html")
    assert "What changed since fake-20261101T020000.00Z" in page
    assert "### What changed since fake-20261101T020000.00Z" in summary
    for line in expected:
        assert f"- {line}" in summary and line in page and line in said, line
    assert json.loads((report.folder / "campaign.json").read_text())["changes"]["fixed"] == [
        {"scenario": "steady", "configuration": "default"}]
    # This campaign is in the table now: the next one compares with it.
    previous, rows = lakes.previous_campaign(lake, "fake", "a-later-one")
    assert previous == report.campaign_id
    assert {(r["scenario"], r["attempt"], r["outcome"]) for r in rows} == {
        ("steady", 1, "PASS"), ("broken", 1, "REGRESSION"), ("broken", 2, "REGRESSION"), ("flaky", 1, "FLAKE"),
        ("flaky", 2, "FLAKE"), ("dup", 1, "PASS")}
    assert [r["anomaly_kinds"] for r in rows if r["scenario"] == "dup"] == [["duplicate"]]
    # Outcomes over time: the earlier campaign and this one, per case, in the index, summary.md and campaign.json.
    history = json.loads((report.folder / "campaign.json").read_text())["history"]
    assert history["window"] == 7 and history["campaigns"] == ["fake-20261101T020000.00Z", report.campaign_id]
    cases = {c["scenario"]: (c["outcomes"], c["runs"], c["flake_rate"]) for c in history["cases"]}
    assert cases == {"broken": ([["PASS"], ["REGRESSION"]], 2, 0), "dup": ([["PASS"], ["PASS"]], 2, 0),
                     "flaky": ([["PASS"], ["FLAKE"]], 2, 0.5), "steady": ([["REGRESSION"], ["PASS"]], 2, 0)}
    assert "Outcomes over the last 7 campaigns of fake" in page and "flaky default 2 1 1 0 0 0 50 % P F" in page
    assert "- flaky [default]: P F (flake rate 50% (1/2))" in summary and "flaky [default]: P F" in said


def test_an_interrupted_campaign_says_what_ran_and_ingests_nothing(machine: FakeMachine, tmp_path: Path) -> None:
    for name in ("first", "second"):
        write_scenario(tmp_path, name, PASSES)
    path = write_campaign(tmp_path, [{"scenario": "first.yaml"}, {"scenario": "second.yaml"}])
    ingested: list[Path] = []

    def interrupt(spec: Spec, run_dir: Path, runs: int) -> None:
        raise KeyboardInterrupt

    driver = Driver(machine.machine, after=interrupt)
    with pytest.raises(KeyboardInterrupt):
        run_campaign(Options(path, seed=0, results=tmp_path / "results", lake=tmp_path / "lake"), io.StringIO(),
                     driver, check=lambda cases, engine: None, ingest=lambda runs, lake: str(ingested.append(runs)),
                     clock=driver.clock)
    data = json.loads((tmp_path / "results" / "campaigns" / "latest" / "campaign.json").read_text())
    assert [(c["scenario"], c["outcome"], c["skipped"]) for c in data["cases"]] == [
        ("first", "SKIPPED", "the campaign was interrupted"), ("second", "SKIPPED", "the campaign was interrupted")]
    assert ingested == [] and "runs not ingested (the campaign was interrupted)" in data["lake"]
    assert machine.runtime.alive() == []
