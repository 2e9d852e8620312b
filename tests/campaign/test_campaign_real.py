"""A short campaign on the real cluster, end to end through the CLI, its index.html opened in headless Chromium.

Two catalogue scenarios, a two-cell matrix and one random-chaos seed, shortened by the campaign's
overrides (~4 minutes on 2 cores): campaign.json, a JUnit file that validates, an index.html without
console errors that links every run's report, the campaign's rows in the lake.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from campaign import lake as lakes
from report.browser import view_page
from tests.campaign.pages import JUNIT_SCHEMA, links, text_of
from tests.conftest import faultline

pytestmark = [pytest.mark.cluster, pytest.mark.browser, pytest.mark.campaign]  # `make test-campaign`, not `make test`

CAMPAIGN: dict[str, Any] = {
    "name": "short", "budget": "12m", "engine": "pandas", "overrides": {"settle_timeout_s": 60},
    "entries": [
        {"scenario": "smoke", "overrides": {"duration_s": 8}},
        {"scenario": "isolate-az-follower", "configurations": ["acksall"], "overrides": {
            "duration_s": 16, "nemesis": [{"at": 3, "fault": "isolate-az", "target": "follower", "name": "iso"},
                                          {"at": 11, "stop": "iso"}]}},
        {"random-chaos": {"seeds": [1, 1000], "count": 1, "overrides": {
            "duration_s": 20, "nemesis": [{"random-chaos": {"from": 3, "until": 15, "duration": [3, 5],
                                                            "interval": [2, 4]}}]}}},
        {"matrix": {"scenario": "smoke", "overrides": {"duration_s": 8},
                    "grid": {"acks": [1, "all"], "enable.idempotence": [False]},
                    "rules": [{"expect": {"absent": ["lost", "phantom"]}}]}},
    ],
}


def test_a_short_campaign_end_to_end(tmp_path: Path) -> None:
    path = tmp_path / "short.yaml"
    path.write_text(yaml.safe_dump(CAMPAIGN, sort_keys=False))
    results, lake = tmp_path / "results", tmp_path / "lake"
    proc = faultline("campaign", str(path), "--seed", "7", "--results", str(results), "--lake", str(lake), timeout=900)
    folder = (results / "campaigns" / "latest").resolve()
    data = json.loads((folder / "campaign.json").read_text())
    assert proc.returncode == data["status"] in (0, 1), proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (data["status"] == 1) == any(c["outcome"] in ("REGRESSION", "FAIL") for c in data["cases"])

    cases = {(c["scenario"], c["configuration"]): c for c in data["cases"]}
    assert set(cases) == {("smoke", "default"), ("isolate-az-follower", "acksall"), ("random-chaos", "seed-8"),
                          ("smoke", "acks-1.idem-false"), ("smoke", "acks-all.idem-false")}, set(cases)
    assert data["skipped"] == [] and data["seed"] == 7
    reports = set()
    for case in data["cases"]:
        assert case["outcome"] in ("PASS", "FLAKE", "REGRESSION") and case["attempts"], case
        for attempt in case["attempts"]:
            run_dir = folder / attempt["run_dir"]
            verdict = json.loads((run_dir / "verdict.json").read_text())
            assert verdict["valid"] in (True, False) and verdict["stats"]["final_reads"] > 0, attempt
            assert attempt["outcome"] == ("PASS" if verdict["expectation"]["passed"] else "FAIL") \
                if "expectation" in verdict else attempt["outcome"] in ("PASS", "FAIL")
            reports.add((folder / attempt["report"]).resolve())
    spec = yaml.safe_load((folder / cases[("random-chaos", "seed-8")]["attempts"][0]["run_dir"] / "spec.yaml")
                          .read_text())
    assert spec["seed"] == 8 and spec["duration_s"] == 20  # seed 8 of [1, 1000] on night 7, the override applied
    cell = yaml.safe_load((folder / cases[("smoke", "acks-1.idem-false")]["attempts"][0]["run_dir"] / "spec.yaml")
                          .read_text())
    assert cell["workloads"]["producers"][0]["settings"]["acks"] == 1 and cell["duration_s"] == 8

    JUNIT_SCHEMA.validate(str(folder / "junit.xml"))
    page = folder / "index.html"
    assert {(folder / href).resolve() for href in links(page)} == reports and all(r.is_file() for r in reports)
    view = view_page(page, tmp_path / "index.png", width=1400, height=900)
    assert view.errors == [], view.errors
    assert all(url.startswith(("file://", "data:", "about:")) for url in view.requests), view.requests
    assert "PASS/FAIL per scenario × configuration" in text_of(page)

    rows = lakes.read_campaigns(lake)
    assert {(r["scenario"], r["configuration"]) for r in rows} == set(cases)
    assert {r["campaign_id"] for r in rows} == {data["campaign_id"]}
    assert "lake" in proc.stdout and (folder / "summary.md").read_text().startswith("## Campaign short")
