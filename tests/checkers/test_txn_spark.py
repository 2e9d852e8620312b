"""Contract v2 by the Spark engine: the hand-worked cases, against their counts and against the pandas engine.

The cases that have a read_committed final read are judged together (each in its own namespace, so their
counts add up); the others alone, as their verdicts depend on the whole history having none.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from checkers import check
from checkers.errors import HistoryError
from tests.checkers.cases import CASES
from tests.checkers.histories import (
    assert_spark_judges_cases_together,
    merge,
    namespaced,
    r,
    reads,
    without_engine,
    write,
)
from tests.checkers.test_txn import _malformed
from tests.checkers.txn_cases import TXN_CASES, tw, tx

pytestmark = pytest.mark.spark

ALONE = ("reprocessed",)  # no read_committed drain: O is F



@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_v2_cases_together(tmp_path: Path, spark: object, fmt: str) -> None:
    assert_spark_judges_cases_together(tmp_path, {n: c for n, c in TXN_CASES.items() if n not in ALONE}, fmt)


def test_v2_cases_alone(tmp_path: Path, spark: object) -> None:
    unknown = {
        "writes": [tw("i", 1, None, offset=0, process="src", topic="in"),
                   {**tw("o1", 1, "t1", offset=0, topic="out"), "source": "i"},
                   {**tw("o2", 2, "t2", offset=1, topic="out"), "source": "i"}],
        "reads": reads(r("i", 0, topic="in"), r("o1", 0, topic="out"), r("o2", 1, topic="out")),
        "transactions": [tx("t1"), tx("t2")],
    }
    for name, tables in [*((n, TXN_CASES[n].tables()) for n in ALONE), ("unknown", unknown)]:
        for fmt in ("jsonl", "parquet"):
            history = write(tmp_path / f"{name}-{fmt}", tables, fmt)
            verdict = check(history, engine="spark")
            assert without_engine(verdict) == without_engine(check(history, engine="pandas")), (name, fmt)
    assert verdict["valid"] == "unknown" and verdict["counts"]["reprocessed"] == 1


def test_v1_cases_with_null_v2_columns_agree(tmp_path: Path, spark: object) -> None:
    """A v1 history whose writes carry txn and source keys, all null (JSONL: the v2 path runs, finds nothing)."""
    tables = merge([namespaced(n, c.tables()) for n, c in CASES.items()])
    tables["writes"] = [{**row, "txn": None, "source": None} for row in tables["writes"]]
    history = write(tmp_path, tables)
    verdict = check(history, engine="spark")
    plain = check(write(tmp_path / "plain", merge([namespaced(n, c.tables()) for n, c in CASES.items()])),
                  engine="spark")
    assert verdict["counts"] == plain["counts"] and verdict["stats"] == plain["stats"]
    assert without_engine(verdict) == without_engine(check(history, engine="pandas"))


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_a_txn_without_its_row_is_malformed(tmp_path: Path, spark: object, fmt: str) -> None:
    with pytest.raises(HistoryError, match=r"writes\.\w+: column 'txn'.*'t1'.*no transactions table"):
        check(_malformed(tmp_path / "none", fmt, None), engine="spark")
    with pytest.raises(HistoryError, match=r"writes\.\w+: column 'txn'.*'t2' has no row in .*transactions\."):
        check(_malformed(tmp_path / "one", fmt, [tx("t1")]), engine="spark")


@pytest.mark.parametrize("seed", [1, pytest.param(2, marks=pytest.mark.extended)])
def test_engines_agree_on_synthetic_transactional_histories(tmp_path: Path, spark: object, seed: int) -> None:
    from checkers.synth import SynthSpec, generate, write_history
    from checkers.synth_txn import transactional

    tables = transactional(generate(SynthSpec(operations=1500 * seed, producers=3, partitions=3, seed=seed,
                                              random_configs=True)), seed=seed, txn_size=2 + seed)
    for fmt in ("parquet", "jsonl"):
        history = write_history(tables, tmp_path / fmt, fmt)
        reference = check(history, engine="pandas")
        assert all(reference["counts"][name] for name in ("aborted-read", "torn-transaction", "reprocessed"))
        assert without_engine(check(history, engine="spark")) == without_engine(reference), fmt


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_consumed_offsets_of_a_topic_the_history_never_saw_skip_nothing(tmp_path: Path, spark: object,
                                                                        fmt: str) -> None:
    """skipped-input matches O's rows by topic id: a consumed topic with no id (no row of it) finds none.

    JSONL has no footers to count the sourced writes, so its sources are not broadcast: both joins run.
    """
    tables = TXN_CASES["skipped-input"].tables()
    for row in tables["transactions"]:
        if row["consumed"] is not None:
            consumed = json.loads(row["consumed"]) + [{"topic": "elsewhere", "partition": 0, "offset": 9}]
            row["consumed"] = json.dumps(consumed)
    history = write(tmp_path / fmt, tables, fmt)
    verdict = check(history, engine="spark")
    assert verdict["counts"]["skipped-input"] == 1
    assert without_engine(verdict) == without_engine(check(history, engine="pandas"))
