"""The Spark engine against the hand-worked cases and against the pandas engine.

Every test here shares one Spark session (the session-scoped ``spark``
fixture). To keep the run short, the hand-worked cases are judged together:
each case is renamed into its own namespace (processes, topics, values), so
in the merged history the counts of the cases simply add up.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from checkers import check
from checkers.anomalies import ANOMALIES, V2_ANOMALIES, V3_ANOMALIES
from checkers.synth import SynthSpec, generate, write_history
from tests.checkers.cases import CASES
from tests.checkers.histories import (
    assert_spark_judges_cases_together,
    merge,
    namespaced,
    r,
    reads,
    w,
    without_engine,
    write,
)

pytestmark = pytest.mark.spark



def test_hand_worked_cases_together(tmp_path: Path, spark: object) -> None:
    assert_spark_judges_cases_together(tmp_path, CASES)


def test_no_final_reads_is_unknown(tmp_path: Path, spark: object) -> None:
    history = write(tmp_path, {"writes": [w("a", 1, offset=0)], "reads": reads(r("a", 0, "live"))})
    verdict = check(history, engine="spark")
    assert verdict["valid"] == "unknown" and verdict["counts"]["lost"] == 1


def _random_spec(seed: int) -> SynthSpec:
    import random

    rnd = random.Random(seed)
    return SynthSpec(
        operations=rnd.randrange(200, 1200),
        producers=rnd.randrange(1, 5),
        partitions=rnd.randrange(1, 5),
        consumers=rnd.randrange(1, 4),
        drains=rnd.randrange(1, 3),
        seed=seed,
        fail_rate=rnd.choice([0.0, 0.01, 0.05]),
        info_rate=rnd.choice([0.0, 0.02, 0.1]),
        random_configs=True,
        plant={name: rnd.randrange(0, 4) for name in ANOMALIES},
    )


SEEDS = 30
GROUPS = 3


def _seed_tables(seed: int) -> dict[str, list[dict[str, Any]]]:
    return {name: table.to_pylist() for name, table in generate(_random_spec(seed)).items()}


@pytest.mark.parametrize("group", [0, *(pytest.param(g, marks=pytest.mark.extended) for g in range(1, GROUPS))])
def test_engines_agree_on_random_histories(tmp_path: Path, spark: object, group: int) -> None:
    """30 seeded random histories with planted anomalies of every kind, in 3 batches.

    Each seed is judged alone by pandas; the batch (seeds renamed apart) is judged
    by both engines, which must give the same verdict, and its counts must be the
    sum of the seeds' counts. Batching keeps the number of Spark jobs small.
    """
    seeds = range(group * SEEDS // GROUPS, (group + 1) * SEEDS // GROUPS)
    fmt = "jsonl" if group == 0 else "parquet"
    expected: Counter[str] = Counter()
    any_error = False
    batch = []
    for seed in seeds:
        tables = _seed_tables(seed)
        alone = check(write(tmp_path / f"seed-{seed}", tables, fmt), engine="pandas")
        expected.update({k: n for k, n in alone["counts"].items() if n})
        any_error = any_error or bool(alone["errors"])
        batch.append(namespaced(f"s{seed}", tables))
    history = write(tmp_path / "batch", merge(batch), fmt)
    reference = check(history, engine="pandas")
    verdict = check(history, engine="spark")
    assert verdict["counts"] == {name: expected[name] for name in ANOMALIES}
    assert verdict["valid"] == reference["valid"] == (not any_error)
    assert without_engine(verdict) == without_engine(reference)
    assert all(expected[name] > 0 for name in ANOMALIES if name not in (*V2_ANOMALIES, *V3_ANOMALIES))  # v1: v2, v3 0


@pytest.mark.parametrize("seed", [101, 102])
def test_engines_agree_on_one_random_history(tmp_path: Path, spark: object, seed: int) -> None:
    history = write_history(generate(_random_spec(seed)), tmp_path, "parquet" if seed % 2 else "jsonl")
    reference = check(history, engine="pandas")
    verdict = check(history, engine="spark")
    assert without_engine(verdict) == without_engine(reference)


@pytest.mark.parametrize("small", [10, 5000])
def test_spread_examples_match_pandas(
    tmp_path: Path, spark: object, monkeypatch: pytest.MonkeyPatch, small: int
) -> None:
    """Examples spread over 45 lost writes; past SMALL_INSTANCES Spark picks them itself."""
    from checkers import spark_engine

    monkeypatch.setattr(spark_engine, "SMALL_INSTANCES", small)
    writes = [w(f"v{i:02d}", i, offset=i, process=f"p{i % 2}") for i in range(46)]
    history = write(tmp_path, {"writes": writes, "reads": reads(r("v45", 45))}, "parquet")
    reference = check(history, engine="pandas")
    verdict = check(history, engine="spark")
    assert verdict["counts"]["lost"] == 45 and verdict["examples"]["lost"][-1]["value"] == "v44"
    assert without_engine(verdict) == without_engine(reference)


def test_the_check_plans_under_its_own_settings_and_gives_the_session_back(
    tmp_path: Path, spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from checkers import spark_engine, spark_session

    seen: list[str] = []
    flagged = spark_engine.SparkEngine._flagged

    def spy(self: Any, *args: Any) -> Any:
        seen.append(spark.conf.get("spark.sql.adaptive.enabled"))
        return flagged(self, *args)

    monkeypatch.setattr(spark_engine.SparkEngine, "_flagged", spy)
    spark.conf.set("spark.sql.adaptive.enabled", "true")
    history = write_history(generate(SynthSpec(operations=300, seed=4)), tmp_path / "h")
    check(history, engine="spark")
    assert seen == [spark_session.CHECKER_SQL["spark.sql.adaptive.enabled"]] == ["false"]
    assert spark.conf.get("spark.sql.adaptive.enabled") == "true"  # the session's own value again
    with pytest.raises(RuntimeError), spark_session.checker_settings(spark):
        raise RuntimeError("a failed check")
    assert spark.conf.get("spark.sql.adaptive.enabled") == "true"
