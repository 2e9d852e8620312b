"""Contract v3 (consumer groups) by the pandas engine, the reference; in JSONL and Parquet.

The Spark engine runs the same cases in test_groups_spark.py and must agree with these verdicts.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from checkers import check
from checkers.anomalies import V3_ANOMALIES
from checkers.errors import HistoryError
from tests.checkers.cases import CASES
from tests.checkers.group_cases import GROUP_CASES, cm, final
from tests.checkers.histories import write

FORMATS = ["jsonl", "parquet"]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", sorted(GROUP_CASES))
def test_hand_worked_v3_counts(tmp_path: Path, name: str, fmt: str) -> None:
    case = GROUP_CASES[name]
    verdict = check(write(tmp_path, case.tables(), fmt), engine="pandas")
    assert verdict["counts"] == case.expected_counts()
    assert verdict["errors"] == case.errors
    assert verdict["valid"] is (not case.errors)


def test_every_v3_anomaly_has_a_case() -> None:
    covered = {name for case in GROUP_CASES.values() for name, n in case.counts.items() if n}
    assert set(V3_ANOMALIES) <= covered
