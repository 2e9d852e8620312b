"""Contract v3 by the Spark engine: the hand-worked cases against their counts and the pandas engine, and
synthetic group histories with planted skips, rewinds and lost commits on which both engines agree."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from checkers import check
from checkers.errors import HistoryError
from tests.checkers.group_cases import GROUP_CASES, final
from tests.checkers.histories import assert_spark_judges_cases_together, without_engine, write

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_v3_cases_together(tmp_path: Path, spark: object, fmt: str) -> None:
    assert_spark_judges_cases_together(tmp_path, GROUP_CASES, fmt)


@pytest.mark.parametrize("name", ["rewound", *(pytest.param(n, marks=pytest.mark.extended)
                                               for n in ("group-skip-before", "lost-commit"))])
def test_v3_cases_alone_give_the_same_verdict_bytes(tmp_path: Path, spark: object, name: str) -> None:
    history = write(tmp_path, GROUP_CASES[name].tables(), "parquet")
    assert without_engine(check(history, engine="spark")) == without_engine(check(history, engine="pandas"))


def test_a_second_final_row_is_malformed_for_spark_too(tmp_path: Path, spark: object) -> None:
    tables = GROUP_CASES["clean-group"].tables()
    tables["commits"] = [*tables["commits"], final(5)]
    with pytest.raises(HistoryError, match="second final row"):
        check(write(tmp_path, tables, "parquet"), engine="spark")


@pytest.mark.parametrize("seed", [1, *(pytest.param(s, marks=pytest.mark.extended) for s in (2, 3))])
def test_engines_agree_on_synthetic_group_histories(tmp_path: Path, spark: object, seed: int) -> None:
    from checkers.synth import SynthSpec, generate, write_history
    from checkers.synth_groups import grouped

    tables = grouped(generate(SynthSpec(operations=6_000, seed=seed)), seed=seed)
    history = write_history(tables, tmp_path)
    verdict = check(history, engine="spark")
    assert without_engine(verdict) == without_engine(check(history, engine="pandas"))
    for name in ("group-skip", "redelivered", "rewound", "lost-commit"):
        assert verdict["counts"][name] > 0, (name, verdict["counts"])


def test_past_max_groups_the_general_plan_judges_the_cases_alike(tmp_path: Path, spark: object,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A history of more groups than checkers.groups_spark has bits for is judged by groups_spark_general's
    own shuffles, and to the same counts."""
    from checkers import groups_spark, groups_spark_general

    calls = []
    general = groups_spark_general.instances
    monkeypatch.setattr(groups_spark, "MAX_GROUPS", 1)
    monkeypatch.setattr(groups_spark_general, "instances", lambda *args: calls.append(1) or general(*args))
    assert_spark_judges_cases_together(tmp_path, GROUP_CASES, "parquet")
    assert calls, "the general plan did not judge the history"



def test_rewound_and_redelivered_take_no_shuffle_of_their_own(tmp_path: Path, spark: object,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Plan.polls shuffles the live reads and the commits once, by (topic, partition): the poll order's window and
    rewound's both run on that one shuffle, and redelivered's look-up is a broadcast join on it, not a scan."""
    from checkers import groups_spark

    plans: list[str] = []
    polls = groups_spark.Plan.polls

    def recorded(*args: Any) -> Any:
        frame = polls(*args)
        plans.append(frame._jdf.queryExecution().executedPlan().toString())
        return frame

    monkeypatch.setattr(groups_spark.Plan, "polls", recorded)
    history = write(tmp_path, GROUP_CASES["rewound"].tables(), "parquet")
    assert check(history, engine="spark")["counts"]["rewound"] == GROUP_CASES["rewound"].counts["rewound"]
    (plan,) = plans
    # the cached per-value facts' plan shows too, with v1's shuffle by value; every other shuffle is the polls' own
    shuffles = [line for line in plan.splitlines()
                if "Exchange hashpartitioning(" in line and "hashpartitioning(value#" not in line]
    assert len(shuffles) == 1 and "hashpartitioning(topic#" in shuffles[0] and "partition#" in shuffles[0], plan
    assert plan.count("Window [") == 2 and "BroadcastHashJoin [value#" in plan, plan
