"""Sharded campaigns, pure: the split of a plan (union, disjoint, deterministic, balanced) and bad --shard input."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from campaign.command import Options, make_plan, print_plan, shards_for
from campaign.plan import Case
from campaign.shards import Shard, case_id, deal, fingerprint, parse_shard
from testbed.errors import UsageError
from tests.campaign.fake import write_campaign, write_scenario
from tests.conftest import REPO, faultline

DURATIONS = {"short": 10, "medium": 60, "long": 240, "odd": 35, "tiny": 1}


def mixed_campaign(folder: Path) -> Path:
    """Scenarios of different lengths, two of them with configurations, and random-chaos seeds: 16 cases."""
    configurations = {"configurations": {name: {"overrides": {"seed": i}} for i, name in enumerate("abc")}}
    for name, seconds in DURATIONS.items():
        write_scenario(folder, name, duration_s=seconds, **(configurations if name in ("short", "long") else {}))
    return write_campaign(folder, [{"scenario": f"{n}.yaml"} for n in DURATIONS] + [
        {"random-chaos": {"scenario": "medium.yaml", "seeds": [1, 1000], "count": 7}}])


def shares(path: Path, count: int, seed: int = 5) -> tuple[list[Case], list[list[Case]]]:
    plan = make_plan(Options(path, seed=seed))
    return plan.cases, [plan.share(Shard(i, count)) for i in range(1, count + 1)]


@pytest.mark.parametrize("count", [1, 2, 3, 4, 7, 16, 20])
def test_the_shares_are_the_plan_each_case_once_in_plan_order_and_balanced(tmp_path: Path, count: int) -> None:
    path = mixed_campaign(tmp_path)
    plan, dealt = shares(path, count)
    assert len(plan) == 16
    ids = [case_id(c) for share in dealt for c in share]
    assert sorted(ids) == sorted(case_id(c) for c in plan) and len(set(ids)) == len(ids)  # union, disjoint
    position = {case_id(c): i for i, c in enumerate(plan)}
    for share in dealt:
        assert [position[case_id(c)] for c in share] == sorted(position[case_id(c)] for c in share)
    loads = [sum(c.load().duration_s + 30 for c in share) for share in dealt]
    longest = max(c.load().duration_s + 30 for c in plan)
    assert max(loads) - min(loads) <= longest  # no share longer than another by more than one case
    if count == 2:
        assert max(loads) / min(loads) < 1.2, loads


def test_the_same_seed_deals_the_same_shares_another_seed_another_plan(tmp_path: Path) -> None:
    path = mixed_campaign(tmp_path)
    first = [[case_id(c) for c in s] for s in shares(path, 3)[1]]
    assert first == [[case_id(c) for c in s] for s in shares(path, 3)[1]]
    plan, _ = shares(path, 3)
    other, _ = shares(path, 3, seed=6)
    assert fingerprint("fake", 5, plan) == fingerprint("fake", 5, shares(path, 3)[0])
    assert fingerprint("fake", 5, plan) != fingerprint("fake", 6, other)


def test_dealing_prefers_the_least_loaded_then_the_lowest_shard() -> None:
    cases = [Case(i, "catalogue", f"s{i}", None, Path("x.yaml"), {}) for i in range(5)]
    seconds = {0: 100.0, 1: 10.0, 2: 10.0, 3: 50.0, 4: 10.0}
    dealt = deal(cases, 2, lambda c: seconds[c.entry])
    assert [[c.entry for c in share] for share in dealt] == [[0], [1, 2, 3, 4]]
    assert deal(cases, 8, lambda c: 1.0)[5:] == [[], [], []]  # more shards than cases: some run nothing


def test_how_many_shards_a_budget_needs() -> None:
    assert shards_for(3600, 100, 3600) == 2  # one share may take total / N plus one case
    assert shards_for(1000, 100, 3600) == 1
    assert shards_for(10 * 3600, 600, 3600) == 12
    out = io.StringIO()
    print_plan(Options(REPO / "campaigns" / "nightly.yaml", budget="60m", seed=1), out)
    assert "shards (--shard I/" in out.getvalue().splitlines()[-1]


@pytest.mark.parametrize("text", ["1/2", " 2 / 2 ", "1/1", "8/8"])
def test_a_shard_is_i_of_n(text: str) -> None:
    shard = parse_shard(text)
    assert 1 <= shard.index <= shard.count and str(shard) == text.replace(" ", "")


@pytest.mark.parametrize("text", ["0/2", "3/2", "x", "1/0", "-1/2", "1/2/3", "", "1 of 2"])
def test_a_bad_shard_is_refused(text: str) -> None:
    with pytest.raises(UsageError, match="--shard"):
        parse_shard(text)


@pytest.mark.parametrize("text", ["0/2", "3/2", "x"])
def test_a_bad_shard_on_the_command_line_is_one_line_and_exit_3(tmp_path: Path, text: str) -> None:
    done = faultline("campaign", str(REPO / "campaigns" / "quick.yaml"), "--shard", text, "--results",
                     str(tmp_path / "results"))
    assert done.returncode == 3 and done.stdout == "", done
    assert len(done.stderr.strip().splitlines()) == 1 and "--shard" in done.stderr, done.stderr
    assert not (tmp_path / "results").exists()


def test_plan_prints_a_shards_share(tmp_path: Path) -> None:
    path = mixed_campaign(tmp_path)
    out = io.StringIO()
    print_plan(Options(path, seed=5, shard=Shard(2, 3)), out)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("shard 2/3: ") and "of the plan's 16 runs" in lines[0]
    _, dealt = shares(path, 3)
    assert len(lines) == len(dealt[1]) + 3
