"""A campaign run as shards and merged tells what the same campaign unsharded tells; bad merges are refused.

The runs are the real run flow on the fake machine (tests/campaign/fake.py); the bad-input tests use
a stub run function that only writes a verdict, so they take no time.
"""

from __future__ import annotations

import io
import json
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, TextIO

import pytest
import yaml

from campaign import lake as lakes
from campaign.campaign_report import CampaignReport
from campaign.command import Options, run_campaign
from campaign.merge import MergeOptions, merge_campaign
from campaign.shards import Shard
from faultline.cli import main
from harness.spec import Spec
from tests.campaign.fake import Driver, write_campaign, write_scenario
from tests.campaign.pages import JUNIT_SCHEMA, links, text_of
from tests.harness.test_run_fake import FakeMachine

FAILS, PASSES = {"present": ["lost"]}, {"absent": ["lost"]}
NAMES = ("flaky", "broken", "steady", "long", "short", "other")


def run(path: Path, results: Path, driver: Any, lake: Path, shard: Shard | None = None, seed: int = 0,
        ingested: list[Path] | None = None) -> CampaignReport:
    def ingest(runs: Path, lake: Path) -> str:
        (ingested if ingested is not None else []).append(runs)
        return "runs ingested (test)"
    return run_campaign(Options(path, seed=seed, results=results, lake=lake, shard=shard), io.StringIO(), driver,
                        check=lambda cases, engine: None, ingest=ingest, clock=getattr(driver, "clock", None))


def cases_of(folder: Path) -> list[tuple[str, str, str, list[str]]]:
    data = json.loads((folder / "campaign.json").read_text())
    return [(c["scenario"], c["configuration"], c["outcome"], [a["outcome"] for a in c["attempts"]])
            for c in data["cases"]]


def junit_cases(folder: Path) -> set[tuple[str | None, str | None, str]]:
    JUNIT_SCHEMA.validate(str(folder / "junit.xml"))
    root = ET.parse(folder / "junit.xml").getroot()
    return {(suite.get("name"), case.get("name"), "/".join(child.tag for child in case if child.tag in
                                                          ("failure", "error", "skipped")))
            for suite in root.findall("testsuite") for case in suite.findall("testcase")}


def test_two_shards_merged_tell_what_the_campaign_unsharded_tells(machine: FakeMachine, tmp_path: Path) -> None:
    flaky = write_scenario(tmp_path, "flaky", FAILS)
    for name in NAMES[1:]:
        write_scenario(tmp_path, name, FAILS if name == "broken" else PASSES,
                       duration_s={"long": 3, "short": 1}.get(name, 2))

    def flip(spec: Spec, run_dir: Path, runs: int) -> None:  # the flaky expectation flips after each of its runs
        if spec.name == "flaky":
            raw = yaml.safe_load(flaky.read_text())
            flaky.write_text(yaml.safe_dump({**raw, "expect": PASSES if raw["expect"] == FAILS else FAILS}))

    path = write_campaign(tmp_path, [{"scenario": f"{n}.yaml"} for n in NAMES])
    whole = run(path, tmp_path / "whole", Driver(machine.machine, after=flip), tmp_path / "lake-whole")
    ingested: list[Path] = []
    shard_reports = [run(path, tmp_path / f"shard{i}", Driver(machine.machine, after=flip), tmp_path / "lake-ci",
                         Shard(i, 2), ingested=ingested) for i in (1, 2)]
    assert ingested == [] and not (tmp_path / "lake-ci").exists()  # a shard leaves the lake to the merge
    assert all("the lake is written when the shards are merged" in r.lake for r in shard_reports)
    assert all("compared with the last campaign when the shards are merged" in (r.folder / "summary.md").read_text()
               for r in shard_reports)
    assert sorted(len(r.results) for r in shard_reports) == [3, 3]

    lake = tmp_path / "lake"
    merged = merge_campaign(MergeOptions([tmp_path / "shard1" / "campaigns" / "latest", tmp_path / "shard2"],
                                         results=tmp_path / "merged", lake=lake), io.StringIO(),
                            ingest=lambda runs, lake: str(ingested.append(runs)))

    assert cases_of(merged.folder) == cases_of(whole.folder)  # the same runs, in the same order, the same verdicts
    assert ("flaky", "default", "FLAKE", ["FAIL", "PASS"]) in cases_of(merged.folder)
    assert ("broken", "default", "REGRESSION", ["FAIL", "FAIL"]) in cases_of(merged.folder)
    assert merged.status == whole.status == 1 and merged.counts == whole.counts
    assert junit_cases(merged.folder) == junit_cases(whole.folder)
    assert merged.folder == (tmp_path / "merged" / "campaigns" / "latest").resolve()
    data = json.loads((merged.folder / "campaign.json").read_text())
    assert [s["index"] for s in data["shards"]] == [1, 2] and data["shard"] is None
    assert {s["campaign_id"] for s in data["shards"]} == {r.campaign_id for r in shard_reports}

    # index.html: the same table, every attempt's report linked inside the merged folder
    page = merged.folder / "index.html"
    reports = [merged.folder / href for href in links(page)]
    assert len(reports) == sum(len(c[3]) for c in cases_of(whole.folder)) and all(r.is_file() for r in reports)
    table = text_of(page).split("PASS/FAIL per scenario × configuration")[1]
    whole_table = text_of(whole.folder / "index.html").split("PASS/FAIL per scenario × configuration")[1]
    assert _no_times(table) == _no_times(whole_table)
    assert "merged from 2 shards" in text_of(page) and "merged from 2 shards" in (merged.folder / "summary.md").read_text()

    # one lake: one campaigns partition with every case, one ingest of every run
    assert ingested == [merged.folder / "runs"]
    for case in data["cases"]:
        for attempt in case["attempts"]:
            assert (merged.folder / attempt["run_dir"] / "verdict.json").is_file()
            assert (merged.folder / attempt["run_dir"]).resolve().is_relative_to((merged.folder / "runs").resolve())
    previous, rows = lakes.previous_campaign(lake, "fake", "later")
    _, whole_rows = lakes.previous_campaign(tmp_path / "lake-whole", "fake", "later")
    assert previous == merged.campaign_id
    assert sorted((r["scenario"], r["attempt"], r["outcome"]) for r in rows) == sorted(
        (r["scenario"], r["attempt"], r["outcome"]) for r in whole_rows)

    # merged again (elsewhere): compared with the first merge, across the shards
    again = merge_campaign(MergeOptions([tmp_path / "shard1", tmp_path / "shard2"], out=tmp_path / "again", lake=lake),
                           io.StringIO(), ingest=lambda runs, lake: "ingested")
    assert again.changes.previous == merged.campaign_id
    assert again.changes.flaky == [("flaky", "default")] and again.changes.still_failing == [("broken", "default")]
    assert again.changes.newly_failing == [] and again.changes.fixed == []
    assert (tmp_path / "shard1" / "campaigns" / "latest" / "campaign.json").is_file()  # the shards are untouched


def _no_times(text: str) -> str:
    import re

    return re.sub(r"\d+(\.\d+)? s\b", "T", text)


class Stub:
    """A run function that runs nothing: each run a folder with a valid verdict (the bad-merge tests)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, specs: list[Spec], results: Path | None, engine: str | None,
                 out: TextIO) -> tuple[int, list[Any]]:
        self.count += 1
        assert results is not None
        run_dir = results / specs[0].name / f"{self.count:04d}" / (specs[0].configuration or "")
        run_dir.mkdir(parents=True)
        (run_dir / "verdict.json").write_text(json.dumps({"valid": True, "counts": {}}))
        return 0, [SimpleNamespace(run_dir=run_dir)]


@pytest.fixture
def stub_campaign(tmp_path: Path) -> Callable[..., Path]:
    for name in NAMES:
        write_scenario(tmp_path, name, duration_s=1)
    path = write_campaign(tmp_path, [{"scenario": f"{n}.yaml"} for n in NAMES])

    def make(folder: str, shard: Shard | None, seed: int = 0) -> Path:
        return run(path, tmp_path / folder, Stub(), tmp_path / "lake", shard, seed).folder
    return make


def refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    status = main(["campaign", "merge", *argv])
    err = capsys.readouterr().err.strip()
    assert status == 3 and len(err.splitlines()) == 1, err
    return err


def test_a_merge_of_shards_that_are_not_one_plan_is_refused_and_writes_nothing(
        stub_campaign: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one, two = stub_campaign("one", Shard(1, 2)), stub_campaign("two", Shard(2, 2))
    out = tmp_path / "out"
    assert "shard 2/2 missing" in refused([str(one), "--out", str(out)], capsys)
    again = stub_campaign("again", Shard(1, 2))
    assert "shard 1/2 given twice" in refused([str(one), str(again), str(two), "--out", str(out)], capsys)
    assert "shard 1/2 given twice" in refused([str(one), str(one), str(two), "--out", str(out)], capsys)
    other_seed = stub_campaign("seed1", Shard(2, 2), seed=1)
    assert "different plans" in refused([str(one), str(other_seed), "--out", str(out)], capsys)
    three = stub_campaign("three", Shard(2, 3))
    assert "is shard 2/3 but" in refused([str(one), str(three), "--out", str(out)], capsys)
    whole = stub_campaign("whole", None)
    assert "not a shard" in refused([str(whole), "--out", str(out)], capsys)
    assert "no campaign.json" in refused([str(tmp_path / "one" / "campaigns" / "latest" / "runs"), "--out", str(out)],
                                         capsys)
    assert "--budget is for running" in refused([str(one), str(two), "--budget", "1m"], capsys)
    assert "give the shards' folders" in refused([], capsys)
    assert main(["campaign", str(tmp_path / "fake.yaml"), str(one)]) == 3
    assert "one campaign file" in capsys.readouterr().err
    assert not out.exists()

    tampered = tmp_path / "tampered"
    shutil.copytree(two, tampered, symlinks=True)
    data = json.loads((tampered / "campaign.json").read_text())
    data["cases"] = data["cases"][1:]
    (tampered / "campaign.json").write_text(json.dumps(data))
    assert "in no shard" in refused([str(one), str(tampered), "--out", str(out)], capsys)
    data["cases"] = json.loads((one / "campaign.json").read_text())["cases"][:1] + json.loads(
        (two / "campaign.json").read_text())["cases"]
    (tampered / "campaign.json").write_text(json.dumps(data))
    assert "a run counted twice" in refused([str(one), str(tampered), "--out", str(out)], capsys)
    assert not out.exists()

    assert main(["campaign", "merge", str(one), str(two), "--out", str(out), "--lake", str(tmp_path / "lake")]) == 0
    assert len(cases_of(out)) == len(NAMES)
    assert "already holds a campaign" in refused([str(one), str(two), "--out", str(out)], capsys)


def test_the_merge_benchmark_builds_shards_and_merges_them(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    from tests.conftest import REPO

    done = subprocess.run([sys.executable, "bench/bench_merge.py", "--shards", "3", "--runs", "2", "--operations", "100",
                           "--no-ingest"], cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, "FAULTLINE_BENCH_CACHE": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert "merge of 3 shards × 2 runs (6 cases, no ingest)" in done.stdout, done.stdout
    assert len(list((tmp_path / "merge-3x2x100").glob("shard-*/campaign.json"))) == 3
