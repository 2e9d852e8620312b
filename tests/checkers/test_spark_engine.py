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
from checkers.anomalies import ANOMALIES
from checkers.synth import SynthSpec, generate, write_history
from tests.checkers.cases import CASES
from tests.checkers.histories import merge, namespaced, r, reads, w, write

pytestmark = pytest.mark.spark


def _without_engine(verdict: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in verdict.items() if k != "engine"}


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_hand_worked_cases_together(tmp_path: Path, spark: object, fmt: str) -> None:
    history = write(tmp_path, merge([namespaced(n, c.tables()) for n, c in CASES.items()]), fmt)
    counts: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    for case in CASES.values():
        counts.update(case.counts)
        errors.update(case.errors)
    verdict = check(history, engine="spark")
    assert verdict["counts"] == {name: counts[name] for name in ANOMALIES}
    assert verdict["errors"] == {name: errors[name] for name in ANOMALIES if errors[name]}
    assert _without_engine(verdict) == _without_engine(check(history, engine="pandas"))


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


@pytest.mark.parametrize("seed", range(30))
def test_engines_agree_on_random_histories(tmp_path: Path, spark: object, seed: int) -> None:
    history = write_history(generate(_random_spec(seed)), tmp_path, "parquet" if seed % 3 else "jsonl")
    reference = check(history, engine="pandas")
    verdict = check(history, engine="spark")
    assert verdict["counts"] == reference["counts"]
    assert verdict["valid"] == reference["valid"]
    assert _without_engine(verdict) == _without_engine(reference)
    assert sum(reference["counts"].values()) > 0
