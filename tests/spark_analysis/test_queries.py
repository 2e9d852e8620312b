"""The notebook's outcome tallies (spark_analysis.queries): every outcome a run can have is counted, INCONCLUSIVE
beside PASS, FAIL and ERROR; the pandas parts here, the Spark aggregation where a session may start."""

from __future__ import annotations

import pandas as pd
import pytest

from harness.manifest import outcome_of
from spark_analysis import queries as q


def test_every_outcome_a_run_can_have_is_a_column_of_the_lakes_tallies() -> None:
    judged = {outcome_of(None, None, True, False),  # no verdict: ERROR
              outcome_of({"valid": True}, {"passed": True}, True, False),
              outcome_of({"valid": False}, {"passed": False}, True, False),
              outcome_of({"valid": True}, {"passed": False, "inconclusive": ["precondition not shown"]}, True, False)}
    assert judged == set(q.OUTCOME_COLUMNS) == {"PASS", "FAIL", "ERROR", "INCONCLUSIVE"}
    assert q.OUTCOME_COLUMNS["INCONCLUSIVE"] == "inconclusive"


def test_flaky_counts_inconclusive_runs_but_none_makes_a_configuration_flaky() -> None:
    over_time = pd.DataFrame([
        {"scenario": "s", "configuration": "a", "day": "2026-11-27", "pass": 2, "fail": 0, "error": 0, "inconclusive": 3},
        {"scenario": "s", "configuration": "a", "day": "2026-11-28", "pass": 0, "fail": 1, "error": 0, "inconclusive": 1},
        {"scenario": "s", "configuration": "b", "day": "2026-11-28", "pass": 1, "fail": 0, "error": 0, "inconclusive": 4},
    ])
    flaky = q.flaky(over_time)
    assert list(flaky["configuration"]) == ["a"]  # b passed and was inconclusive: not flaky
    assert flaky.iloc[0][["pass", "fail", "error", "inconclusive", "runs"]].tolist() == [2, 1, 0, 4, 7]


@pytest.mark.spark
def test_the_spark_tallies_count_inconclusive_runs() -> None:
    from checkers.spark_session import spark_session

    rows = [("s", "a", "2026-11-28", outcome) for outcome in ("PASS", "INCONCLUSIVE", "INCONCLUSIVE", "FAIL", None)]
    runs = spark_session().createDataFrame(rows, "scenario string, configuration string, day string, outcome string")
    over_time = q.pass_fail_over_time(runs)
    assert over_time[["pass", "fail", "error", "inconclusive"]].iloc[0].tolist() == [1, 1, 0, 2]
