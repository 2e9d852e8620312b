"""Outcomes over time from a synthetic lake: the flake table, the threshold's exit status, the table written between
its markers, `repeat` and `flake_rate` in a campaign file."""

from __future__ import annotations

import io
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from campaign import flakes
from campaign import lake as lakes
from campaign.config import FlakeRate, load_campaign
from campaign.plan import plan_cases
from tests.campaign.fake import write_campaign, write_scenario
from tests.conftest import REPO

START = datetime(2026, 11, 20, 2, 17, tzinfo=UTC)


def night(lake: Path, n: int, outcomes: dict[tuple[str, str], list[str]], name: str = "fake") -> str:
    """Campaign `n` (a night after START) of `name` in the lake: per (scenario, configuration) its cases' outcomes."""
    campaign_id = f"{name}-night{n}"
    rows: list[dict[str, Any]] = []
    for entry, ((scenario, configuration), seen) in enumerate(outcomes.items()):
        for k, outcome in enumerate(seen):
            base = {"campaign": name, "started_at": START + timedelta(days=n), "seed": n, "entry": entry + 10 * k,
                    "kind": "catalogue", "scenario": scenario, "configuration": configuration, "settings": "{}",
                    "outcome": outcome, "anomaly_kinds": []}
            attempts = {"PASS": ["PASS"], "FLAKE": ["FAIL", "PASS"], "REGRESSION": ["FAIL", "FAIL"],
                        "FAIL": ["FAIL"], "INCONCLUSIVE": ["ERROR"], "SKIPPED": []}[outcome]
            rows += [{**base, "attempt": i, "attempt_outcome": a} for i, a in enumerate(attempts, 1)] or [
                {**base, "attempt": 0}]
    lakes.write_campaign(lake, campaign_id, rows)
    return campaign_id


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    lake = tmp_path / "lake"
    night(lake, 1, {("a", "x"): ["FLAKE"], ("b", "y"): ["PASS"]})
    night(lake, 2, {("a", "x"): ["PASS"], ("b", "y"): ["PASS"], ("c", "z"): ["SKIPPED"]})
    night(lake, 3, {("a", "x"): ["FLAKE"], ("b", "y"): ["REGRESSION"], ("c", "z"): ["INCONCLUSIVE"]})
    night(lake, 4, {("a", "x"): ["PASS"], ("b", "y"): ["PASS"]}, name="other")  # another campaign's: not counted
    return lake


def test_trends_count_each_case_outcome_over_the_window(lake: Path) -> None:
    ids, items = flakes.trends(lakes.read_campaigns(lake), "fake", 3)
    assert ids == ["fake-night1", "fake-night2", "fake-night3"]
    a, b, c = items
    assert (a.scenario, a.configuration, a.runs, a.counts["FLAKE"], a.counts["PASS"]) == ("a", "x", 3, 2, 1)
    assert a.flake_rate == pytest.approx(2 / 3) and a.letters == "F P F"
    assert b.counts["REGRESSION"] == 1 and b.flake_rate == 0 and b.letters == "P P R"
    assert c.runs == 1 and c.counts["INCONCLUSIVE"] == 1 and c.letters == "- I"  # a SKIPPED case is no run
    ids, items = flakes.trends(lakes.read_campaigns(lake), "fake", 2)  # the window: the last two only
    assert ids == ["fake-night2", "fake-night3"] and items[0].letters == "P F" and items[0].flake_rate == 0.5


def test_the_threshold_fails_the_check_and_the_table_is_written_between_its_markers(lake: Path,
                                                                                    tmp_path: Path) -> None:
    write_scenario(tmp_path, "s")
    path = write_campaign(tmp_path, [{"scenario": "s.yaml"}], flake_rate={"window": 3, "threshold": 0.5})
    out = io.StringIO()
    assert flakes.main([str(path), "--lake", str(lake)], out) == 1  # a [x]: 2 flakes in 3 runs > 50 %
    said = out.getvalue()
    assert "| a | x | 3 | 1 | 2 | 0 | 0 | 0 | 67% (2/3) | `F P F` |" in said
    assert "FLAKE RATE ABOVE 50%: a [x]: 67% (2/3) over 3 campaigns (F P F)" in said
    assert "b [y]" not in said.split("FLAKE RATE")[1]
    assert flakes.main([str(path), "--lake", str(lake), "--threshold", "0.7"], io.StringIO()) == 0
    assert flakes.main([str(path), "--lake", str(lake), "--window", "1"], io.StringIO()) == 1  # night 3: 1 of 1

    doc = tmp_path / "BENCHMARKS.md"
    doc.write_text("# B\n\n<!-- flake-table:fake -->\nstale table\n<!-- /flake-table:fake -->\nafter\n")
    assert flakes.main([str(path), "--lake", str(lake), "--threshold", "0.9", "--write", str(doc)],
                       io.StringIO()) == 0
    text = doc.read_text()
    assert "stale table" not in text and text.endswith("<!-- /flake-table:fake -->\nafter\n")
    assert "Over 3 campaigns (fake-night1 to fake-night3):" in text and "| c | z | 1 | 0 | 0 | 0 | 0 | 1 |" in text


def test_bad_input_is_one_line_and_exit_3(lake: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_scenario(tmp_path, "s")
    plain = write_campaign(tmp_path, [{"scenario": "s.yaml"}], name="plain")
    out = io.StringIO()
    assert flakes.main([str(plain), "--lake", str(lake)], out) == 0  # no threshold: the table only (quick.yaml)
    assert "sets no flake_rate threshold (nor --threshold): nothing to fail" in out.getvalue()
    assert flakes.main([str(plain), "--lake", str(lake), "--window", "0"], io.StringIO()) == 3
    assert capsys.readouterr().err.count("\n") == 1
    bad = write_campaign(tmp_path, [{"scenario": "s.yaml"}], name="bad", flake_rate={"window": 3, "threshold": 2})
    assert flakes.main([str(bad), "--lake", str(lake)], io.StringIO()) == 3
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "flake_rate.threshold: must be a share of runs" in err
    doc = tmp_path / "NO-MARKERS.md"
    doc.write_text("nothing\n")
    assert flakes.main([str(plain), "--lake", str(lake), "--window", "2", "--write", str(doc)], io.StringIO()) == 3
    assert "no <!-- flake-table:plain --> ... <!-- /flake-table:plain --> markers" in capsys.readouterr().err


def test_repeat_plans_every_case_n_times_each_its_own_entry(tmp_path: Path) -> None:
    write_scenario(tmp_path, "s", configurations={"one": {}, "two": {}})
    write_scenario(tmp_path, "t")
    path = write_campaign(tmp_path, [{"scenario": "s.yaml"}, {"scenario": "t.yaml"}], repeat=3)
    campaign = load_campaign(path)
    assert campaign.repeat == 3 and len(campaign.entries) == 6
    cases, _ = plan_cases(campaign, 0)
    assert sorted((c.scenario, c.label) for c in cases) == sorted([("s", "one"), ("s", "two"), ("t", "default")] * 3)
    assert len({(c.entry, c.scenario, c.label) for c in cases}) == 9  # each its own case id (shards, merge)
    with pytest.raises(Exception, match="repeat: must be how many times"):
        load_campaign(write_campaign(tmp_path, [{"scenario": "s.yaml"}], name="zero", repeat=0))


def test_the_stability_campaign_runs_every_catalogue_configuration_at_least_five_times() -> None:
    campaign = load_campaign(REPO / "campaigns" / "stability.yaml")
    per_copy = len(campaign.entries) // campaign.repeat
    assert campaign.repeat >= 5 and campaign.flake_rate is not None and campaign.flake_rate.threshold == 0
    assert campaign.flake_rate.runs == 20  # none in 20, counted over runs that add up across partial campaigns
    sources = [e.source for e in campaign.entries[:per_copy]]  # type: ignore[union-attr]
    # A new scenario is added here too; but soak: a six-hour run cannot be one of 335 cases (make test-soak).
    assert sorted(sources) == sorted(p for p in (REPO / "scenarios").glob("*.yaml") if p.stem != "soak")
    assert all(e.configurations is None for e in campaign.entries)  # type: ignore[union-attr]  # every configuration


def test_benchmarks_holds_the_stability_tables_markers(tmp_path: Path) -> None:
    """`make stability-table` writes between them: they are there, in order, once."""
    text = (REPO / "BENCHMARKS.md").read_text()
    assert text.count("<!-- flake-table:stability -->") == 1 and text.count("<!-- /flake-table:stability -->") == 1
    copy = tmp_path / "BENCHMARKS.md"
    copy.write_text(text)
    flakes.write_between_markers(copy, "stability", "| a table |\n")
    assert "| a table |" in copy.read_text() and len(copy.read_text()) < len(text) + 100


def test_a_runs_window_takes_each_cases_last_runs_across_partial_campaigns(tmp_path: Path) -> None:
    """flake_rate.runs: a campaign run in parts (a budget's share a day) adds up; each case's last N runs count,
    however many campaigns that takes, and a campaign that did not reach a case leaves its runs alone."""
    lake = tmp_path / "lake"
    night(lake, 1, {("a", "x"): ["FLAKE", "PASS"], ("b", "y"): ["PASS"]})
    night(lake, 2, {("a", "x"): ["PASS", "SKIPPED"]})  # this part did not reach b [y] (nor a second a [x])
    night(lake, 3, {("a", "x"): ["PASS", "PASS"], ("c", "z"): ["FLAKE"]})
    ids, items = flakes.trends(lakes.read_campaigns(lake), "fake", None, runs=4)
    a, b, c = items
    assert a.runs == 4 and a.letters == "P P- PP" and a.counts["FLAKE"] == 0  # night 1's flake is 5 runs back
    assert b.runs == 1 and b.letters == "P" and c.letters == "F"
    assert ids == ["fake-night1", "fake-night2", "fake-night3"]
    _, items = flakes.trends(lakes.read_campaigns(lake), "fake", None, runs=5)
    assert items[0].counts["FLAKE"] == 1 and items[0].letters == "FP P- PP"
    _, items = flakes.trends(lakes.read_campaigns(lake), "fake", 1)  # a campaign window: night 3 alone
    assert [t.scenario for t in items] == ["a", "c"]

    write_scenario(tmp_path, "s")
    path = write_campaign(tmp_path, [{"scenario": "s.yaml"}], flake_rate={"runs": 4, "threshold": 0})
    out = io.StringIO()
    assert flakes.main([str(path), "--lake", str(lake)], out) == 1  # c [z]: 1 flake in its 1 run
    said = out.getvalue()
    assert "Each case's last 4 runs, in 3 campaigns (fake-night1 to fake-night3):" in said
    assert "FLAKE RATE ABOVE 0%: c [z]: 100% (1/1) over its last 4 runs (F)" in said and "a [x]: " not in said
    out = io.StringIO()
    assert flakes.main([str(path), "--lake", str(lake), "--window", "2"], out) == 1  # the flag wins over the file's
    assert "Over 2 campaigns (fake-night2 to fake-night3):" in out.getvalue()


def test_the_window_is_the_flags_else_the_files_flake_rate_else_the_default_in_every_reader(tmp_path: Path) -> None:
    """span_of owns the default: the command's flags win (runs over window), then the file's flake_rate, then
    DEFAULT_WINDOW campaigns; the index's history, the command and a bare `trends` all count over what it says."""
    by_window, by_runs = FlakeRate(4, 0.2), FlakeRate(None, 0.2, runs=9)
    assert flakes.span_of(None) == (flakes.DEFAULT_WINDOW, None) == (7, None)
    assert flakes.span_of(by_window) == (4, None) and flakes.span_of(by_runs) == (None, 9)
    assert flakes.span_of(by_runs, window=2) == (2, None) and flakes.span_of(by_window, runs=3) == (None, 3)
    lake = tmp_path / "lake"
    for n in range(1, 10):
        night(lake, n, {("a", "x"): ["PASS"]})
    ids, _ = flakes.trends(lakes.read_campaigns(lake), "fake", None)
    assert ids == [f"fake-night{n}" for n in range(3, 10)]  # the last DEFAULT_WINDOW
    write_scenario(tmp_path, "s")
    bare = write_campaign(tmp_path, [{"scenario": "s.yaml"}])
    history = flakes.history_of(lake, "fake", bare)
    assert (history.window, history.runs, len(history.ids)) == (7, None, 7)
    out = io.StringIO()
    assert flakes.main([str(bare), "--lake", str(lake)], out) == 0
    assert "fake-night3 to fake-night9" in out.getvalue(), out.getvalue()


def test_several_lakes_read_as_one_and_a_campaign_in_both_counts_once(tmp_path: Path) -> None:
    """The kept stability campaigns (campaigns/lake/) beside results/lake/: one copied into both is one campaign."""
    here, kept = tmp_path / "here", tmp_path / "kept"
    night(here, 1, {("a", "x"): ["PASS"]})
    night(kept, 1, {("a", "x"): ["PASS"]})  # the same campaign, kept
    night(kept, 2, {("a", "x"): ["FLAKE"]})  # another machine's, kept
    rows = flakes.read_lakes([here, kept])
    _, items = flakes.trends(rows, "fake", None, runs=20)
    assert items[0].runs == 2 and items[0].letters == "P F"
    write_scenario(tmp_path, "s")
    path = write_campaign(tmp_path, [{"scenario": "s.yaml"}], flake_rate={"runs": 20, "threshold": 0})
    assert flakes.main([str(path), "--lake", str(here), "--lake", str(kept)], io.StringIO()) == 1
    assert flakes.main([str(path), "--lake", str(here)], io.StringIO()) == 0


@pytest.mark.parametrize(("rate", "said"), [
    ({"window": 3, "runs": 20, "threshold": 0}, "flake_rate: give exactly one of window (campaigns) and runs"),
    ({"threshold": 0}, "flake_rate: give exactly one of window (campaigns) and runs"),
    ({"runs": 0, "threshold": 0}, "flake_rate.runs: must be a number of runs >= 1, got 0"),
])
def test_a_flake_rate_needs_exactly_one_window(tmp_path: Path, rate: dict[str, Any], said: str) -> None:
    write_scenario(tmp_path, "s")
    with pytest.raises(Exception, match=re.escape(said)):
        load_campaign(write_campaign(tmp_path, [{"scenario": "s.yaml"}], name="w", flake_rate=rate))


def test_resume_plans_only_the_runs_the_lakes_lack(tmp_path: Path) -> None:
    """`harness campaign --resume LAKE`: each configuration's runs on record in the campaigns of the name (a FLAKE is
    one run, a SKIPPED case none, another campaign's not at all) count toward its `repeat`; the plan keeps the rest,
    so the parts of a campaign too long for one day add up to its repeat and no further."""
    from campaign.command import Options, make_plan

    write_scenario(tmp_path, "s", configurations={"one": {}, "two": {}})
    write_scenario(tmp_path, "t")
    path = write_campaign(tmp_path, [{"scenario": "s.yaml"}, {"scenario": "t.yaml"}], repeat=3)
    here, kept = tmp_path / "here", tmp_path / "kept"
    night(here, 1, {("s", "one"): ["PASS", "FLAKE"], ("t", "default"): ["SKIPPED"]})
    night(kept, 2, {("s", "one"): ["PASS", "PASS"], ("s", "two"): ["INCONCLUSIVE"]})  # s [one]: 4 on record, past 3
    night(kept, 3, {("s", "two"): ["PASS", "PASS", "PASS"]}, name="other")  # another campaign's runs: not counted
    whole = make_plan(Options(path, seed=0)).cases
    plan = make_plan(Options(path, seed=0, resume=(here, kept))).cases
    assert len(whole) == 9
    assert sorted(c.key for c in plan) == [("s", "two"), ("s", "two"), ("t", "default"), ("t", "default"),
                                           ("t", "default")]
    assert [c.entry for c in plan if c.key == ("s", "two")] == sorted(c.entry for c in plan if c.key == ("s", "two"))
    assert {c.scenario for c in plan[:2]} == {"s", "t"}  # dealt round-robin again over what is left
    assert make_plan(Options(path, seed=0, resume=(tmp_path / "none",))).cases == whole  # an empty lake: all of it


def test_resume_runs_a_configuration_that_flaked_until_the_flake_leaves_its_window(tmp_path: Path) -> None:
    """With `flake_rate: {runs: N}`, `--resume` also plans, for each configuration with a FLAKE in its last N runs,
    as many runs past its repeat as its window needs (all passing) to hold none; one that passed is not run again.
    The old resume kept s [one] at its repeat, so the goal (none in N) was never reached by `make stability`."""
    from campaign.command import Options, make_plan, print_plan

    write_scenario(tmp_path, "s", configurations={"one": {}, "two": {}})
    write_scenario(tmp_path, "t")
    path = write_campaign(tmp_path, [{"scenario": "s.yaml"}, {"scenario": "t.yaml"}], repeat=2,
                          flake_rate={"runs": 4, "threshold": 0})
    here = tmp_path / "here"
    night(here, 1, {("s", "one"): ["PASS", "FLAKE", "PASS"], ("s", "two"): ["PASS", "FAIL"]})
    night(here, 2, {("t", "default"): ["FLAKE"]})
    rows = flakes.read_lakes([here])
    owed = {("s", "one"): 3, ("t", "default"): 4}  # P F P needs 3 passes to push F out of 4; a lone F needs 4
    assert flakes.owed_runs(rows, "fake", load_campaign(path).flake_rate) == owed
    assert flakes.owed_runs(rows, "fake", FlakeRate(None, 0.25, runs=4)) == {("s", "one"): 1, ("t", "default"): 3}
    assert flakes.owed_runs(rows, "fake", FlakeRate(3, 0)) == {}  # a window of campaigns owes nothing
    plan = make_plan(Options(path, seed=0, resume=(here,)))
    assert sorted(c.key for c in plan.cases) == [("s", "one")] * 3 + [("t", "default")] * 4
    assert len({(c.entry, c.key) for c in plan.cases}) == 7  # each a case of its own
    assert plan.owed == owed
    out = io.StringIO()
    print_plan(Options(path, seed=0, resume=(here,)), out)
    assert "owed to the flake goal (runs until each flake leaves its window): s [one] 3, t [default] 4" in out.getvalue()
    night(here, 3, {("s", "one"): ["PASS"] * 3, ("t", "default"): ["PASS"] * 3 + ["FLAKE"]})
    again = make_plan(Options(path, seed=0, resume=(here,)))
    assert sorted(c.key for c in again.cases) == [("t", "default")] * 4 and again.owed == {("t", "default"): 4}


def test_make_stability_resumes_from_the_lake_and_the_kept_campaigns() -> None:
    makefile = (REPO / "Makefile").read_text()
    recipe = makefile.split("\nstability: ", 1)[1].split("\n\n", 1)[0]
    assert "--resume $(LAKE)" in recipe and "--resume $(KEPT_LAKE)" in recipe
