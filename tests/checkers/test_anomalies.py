"""Each anomaly on a hand-worked history, counted by the pandas engine (the reference).

The Spark engine runs the same cases in test_spark_engine.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from checkers import check
from tests.checkers.cases import CASES
from tests.checkers.histories import write


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_hand_worked_counts(tmp_path: Path, name: str, fmt: str) -> None:
    case = CASES[name]
    verdict = check(write(tmp_path, case.tables(), fmt), engine="pandas")
    assert verdict["counts"] == case.expected_counts()
    assert verdict["errors"] == case.errors
    assert verdict["valid"] is (not case.errors)


def test_every_anomaly_has_a_hand_worked_case() -> None:
    from checkers.anomalies import ANOMALIES
    from tests.checkers.group_cases import GROUP_CASES
    from tests.checkers.txn_cases import TXN_CASES

    cases = (*CASES.values(), *TXN_CASES.values(), *GROUP_CASES.values())
    covered = {name for case in cases for name, n in case.counts.items() if n}

    assert covered == set(ANOMALIES)


def test_every_anomaly_is_described_once_in_its_order() -> None:
    from checkers.anomalies import ANOMALIES, DESCRIPTIONS

    assert tuple(DESCRIPTIONS) == ANOMALIES and all(DESCRIPTIONS.values())


def test_examples_locate_each_anomaly(tmp_path: Path) -> None:
    verdict = check(write(tmp_path, CASES["lost"].tables()), engine="pandas")
    assert verdict["examples"]["lost"] == [
        {
            "value": "b",
            "topic": "t",
            "partition": 0,
            "offset": 1,
            "process": "p",
            "status": "ok",
            "error": None,
            "op_id": 2,
            "invoke_ns": 1_700_000_000_002_000_000,
            "complete_ns": 1_700_000_000_007_000_000,
            "classified": "error",
        },
        {
            "value": "x",
            "topic": "t",
            "partition": 0,
            "offset": None,
            "process": "q",
            "status": "ok",
            "error": None,
            "op_id": 1,
            "invoke_ns": 1_700_000_000_001_000_000,
            "complete_ns": 1_700_000_000_006_000_000,
            "classified": "info",
        },
    ]


def test_reorder_example_names_both_writes(tmp_path: Path) -> None:
    verdict = check(write(tmp_path, CASES["reordered"].tables()), engine="pandas")
    first = verdict["examples"]["reordered"][0]
    assert (first["value"], first["offset"], first["previous"]["value"], first["previous"]["offset"]) == (
        "b",
        0,
        "a",
        1,
    )


def test_divergence_example_lists_the_values(tmp_path: Path) -> None:
    verdict = check(write(tmp_path, CASES["divergence"].tables()), engine="pandas")
    (example,) = verdict["examples"]["divergence"]
    assert (example["topic"], example["partition"], example["offset"]) == ("t", 0, 0)
    assert example["values"] == ["a", "b"]


def test_duplicate_example_lists_positions(tmp_path: Path) -> None:
    verdict = check(write(tmp_path, CASES["duplicate"].tables()), engine="pandas")
    first = verdict["examples"]["duplicate"][0]
    assert first["value"] == "b" and first["classified"] == "error"
    assert [p["offset"] for p in first["positions"]] == [1, 3, 4]


def test_example_positions_spread_over_errors_then_the_rest() -> None:
    from checkers.anomalies import example_positions

    assert example_positions(3, 5) == [0, 1, 2, 3, 4]
    assert example_positions(0, 39, k=3) == [0, 19, 38]
    spread = example_positions(0, 1000)
    assert len(spread) == 20 and spread[0] == 0 and spread[-1] == 999 and spread == sorted(set(spread))
    # errors come first and all of them fit: the room left goes to the info instances, spread
    assert example_positions(2, 102, k=4) == [0, 1, 2, 101]
    # more errors than room: only errors, spread over them
    assert example_positions(50, 60, k=3) == [0, 24, 49]


def test_examples_cover_the_whole_extent_of_an_anomaly(tmp_path: Path) -> None:
    # 45 acknowledged writes lost (ordered by invoke time), one kept: the examples run from the
    # first loss to the last, not the first 20 only
    from tests.checkers.histories import r, reads, w

    writes = [w(f"v{i:02d}", i, offset=i) for i in range(46)]
    history = write(tmp_path, {"writes": writes, "reads": reads(r("v45", 45))})
    verdict = check(history, engine="pandas")
    values = [e["value"] for e in verdict["examples"]["lost"]]
    assert verdict["counts"]["lost"] == 45 and len(values) == 20
    assert values[0] == "v00" and values[-1] == "v44" and values == sorted(values)
