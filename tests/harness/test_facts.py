"""Observed facts a scenario may require, from the observations table: only overlaps of a polling period count.

The report's split brains are the same ones: `show` lists a split exactly where the fact says there was one.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from checkers.facts import observed_facts
from report import summary

S = 1_000_000_000


def history(tmp_path: Path, rows: list[tuple[float, str, int | None, int | None]],
            statuses: tuple[str, ...] = ("ok",)) -> Path:
    """Observations (seconds, observer, leader of t/0, controller) and writes with these statuses."""
    obs = pd.DataFrame([{"time_ns": int(t * S), "observer": o, "topic": "t", "partition": 0, "leader": leader,
                         "isr": "[0, 1, 2]", "leader_epoch": 0, "controller": c} for t, o, leader, c in rows])
    obs["leader"] = obs["leader"].astype("Int64")
    obs["controller"] = obs["controller"].astype("Int64")
    obs.to_parquet(tmp_path / "observations.parquet")
    pd.DataFrame({"status": list(statuses)}).to_parquet(tmp_path / "writes.parquet")
    return tmp_path


def polls(observer: str, offset: float, views: list[tuple[int | None, int | None]]) -> list[tuple[float, str, int | None, int | None]]:
    """One poll a second from `offset`, each (leader, controller) in turn."""
    return [(offset + i, observer, leader, c) for i, (leader, c) in enumerate(views)]


def test_an_ordinary_leader_change_seen_a_moment_apart_is_no_split(tmp_path: Path) -> None:
    # Leadership moves from 0 to 1 at ~10.6 s. broker-0 polls at .4 (still itself at 10.4), broker-1 at .9
    # (itself from 10.9): both claim within the same second, for 0.5 s of overlapping views.
    rows = polls("broker-0", 0.4, [(0, 2)] * 11 + [(1, 2)] * 5) + polls("broker-1", 0.9, [(0, 2)] * 10 + [(1, 2)] * 6) \
        + polls("broker-2", 0.6, [(0, 2)] * 10 + [(1, 2)] * 6)
    facts = observed_facts(history(tmp_path, rows))
    assert facts == {"two-leaders": False, "two-controllers": False, "leader-disagreement": False,
                     "unavailability": False, "isr-shrink-grow": False}


def test_a_deposed_leader_that_goes_on_claiming_is_two_leaders(tmp_path: Path) -> None:
    rows = polls("broker-0", 0.4, [(0, 2)] * 16) + polls("broker-1", 0.9, [(0, 2)] * 5 + [(1, 2)] * 11) \
        + polls("broker-2", 0.6, [(0, 2)] * 5 + [(1, 2)] * 11)
    facts = observed_facts(history(tmp_path, rows, ("ok", "info")))
    assert facts == {"two-leaders": True, "two-controllers": False, "leader-disagreement": True,
                     "unavailability": True, "isr-shrink-grow": False}


def test_stale_views_disagree_without_two_brokers_claiming(tmp_path: Path) -> None:
    # broker-1 keeps naming broker-0 (stale metadata) while 0 and 2 moved to broker-2: no second self-claim.
    rows = polls("broker-0", 0.4, [(0, 0)] * 5 + [(2, 0)] * 10) + polls("broker-1", 0.9, [(0, 0)] * 15) \
        + polls("broker-2", 0.6, [(0, 0)] * 5 + [(2, 0)] * 10)
    facts = observed_facts(history(tmp_path, rows))
    assert facts["leader-disagreement"] and not facts["two-leaders"]


def test_two_controllers_need_a_polling_period_of_overlap(tmp_path: Path) -> None:
    isolated = polls("broker-0", 0.4, [(1, 0)] * 15) + polls("broker-1", 0.9, [(1, 0)] * 4 + [(1, 1)] * 11) \
        + polls("broker-2", 0.6, [(1, 0)] * 4 + [(1, 1)] * 11)
    assert observed_facts(history(tmp_path, isolated))["two-controllers"]
    handover = polls("broker-0", 0.4, [(1, 0)] * 5 + [(1, 1)] * 10) + polls("broker-1", 0.9, [(1, 0)] * 4 + [(1, 1)] * 11) \
        + polls("broker-2", 0.6, [(1, 0)] * 5 + [(1, 1)] * 10)
    assert not observed_facts(history(tmp_path, handover))["two-controllers"]


def test_no_observations_means_no_fact(tmp_path: Path) -> None:
    pd.DataFrame({"status": ["ok", "fail"]}).to_parquet(tmp_path / "writes.parquet")
    assert observed_facts(tmp_path) == {"two-leaders": False, "two-controllers": False,
                                        "leader-disagreement": False, "unavailability": True,
                                        "isr-shrink-grow": False}


def test_the_report_lists_the_splits_the_facts_stand_on(tmp_path: Path) -> None:
    ordinary = polls("broker-0", 0.4, [(0, 2)] * 11 + [(1, 2)] * 5) + polls("broker-1", 0.9, [(0, 2)] * 10 + [(1, 2)] * 6)
    deposed = polls("broker-0", 0.4, [(0, 2)] * 16) + polls("broker-1", 0.9, [(0, 2)] * 5 + [(1, 2)] * 11)
    for name, rows, split in (("ordinary", ordinary, False), ("deposed", deposed, True)):
        (tmp_path / name / "history").mkdir(parents=True)
        facts = observed_facts(history(tmp_path / name / "history", rows))
        shown = [line for line in summary(tmp_path / name).splitlines() if line.strip().startswith("split:")]
        assert facts["leader-disagreement"] is split and facts["two-leaders"] is split
        assert bool(shown) is split, shown


def test_an_isr_that_lost_a_follower_and_got_it_back_shrank_and_grew(tmp_path: Path) -> None:
    rows = polls("broker-0", 0.4, [(0, 2)] * 6)
    path = history(tmp_path, rows)
    obs = pd.read_parquet(path / "observations.parquet")
    obs["isr"] = ["[0, 1, 2]", "[0, 1, 2]", "[0, 2]", "[0, 2]", "[0, 1, 2]", "[0, 1, 2]"]
    obs.to_parquet(path / "observations.parquet")
    assert observed_facts(path)["isr-shrink-grow"]
    obs["isr"] = ["[0, 1, 2]", "[0, 1, 2]", "[0, 2]", "[0, 2]", "[0, 2]", "[0, 2]"]  # never back
    obs.to_parquet(path / "observations.parquet")
    assert not observed_facts(path)["isr-shrink-grow"]
