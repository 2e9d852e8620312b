"""The Spark engine's helpers that need no Spark session: examples picked from Arrow, footer counts, and the
row-check pass's per-process counts (what the v2 plan counts read_committed final reads with)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from checkers import anomalies as a
from checkers.parquet import summarize
from checkers.schema import READS
from checkers.sources import locate_history
from checkers.synth import SynthSpec, generate, write_history


def _instances(rows: list[dict[str, object]]) -> pa.Table:
    cols = {"anomaly": pa.string(), "is_error": pa.bool_()}
    cols |= {c: (pa.string() if c in ("value", "topic", "process", "prev_value") else pa.int64())
             for c in a.INSTANCE_COLUMNS}
    return pa.table({c: pa.array([r.get(c) for r in rows], t) for c, t in cols.items()})


def test_examples_from_arrow_put_errors_first_then_the_sort_key() -> None:
    from checkers.spark_engine import top_from_arrow

    rows = [{"anomaly": a.LOST, "is_error": i % 3 == 0, "value": f"v{i:03d}", "invoke_ns": 1000 - i, "process": "p"}
            for i in range(40)]
    rows += [{"anomaly": a.PHANTOM, "is_error": True, "value": "z"}, {"anomaly": a.PHANTOM, "is_error": True,
                                                                       "value": "b"}]
    picked = top_from_arrow(_instances(rows))
    lost = picked[a.LOST]
    errors = sorted((r for r in rows if r["anomaly"] == a.LOST and r["is_error"]), key=lambda r: r["invoke_ns"])
    positions = a.example_positions(len(errors), 40)
    assert len(lost) == len(positions) and all(r["is_error"] for r in lost[: len(errors)][:1])
    assert lost[0]["value"] == errors[0]["value"]  # the earliest error first (sorted by invoke_ns, then value)
    assert [r["value"] for r in picked[a.PHANTOM]] == ["b", "z"]
    assert set(lost[0]) == {*a.INSTANCE_COLUMNS, "is_error"}
    assert top_from_arrow(_instances([])) == {}


def test_non_null_sources_are_counted_from_the_footers(tmp_path: Path) -> None:
    from checkers.txn_spark import _non_null

    history = write_history(generate(SynthSpec(operations=300, seed=1)), tmp_path / "h")
    sources = locate_history(history)
    assert _non_null(sources["writes"], "source") == 0  # v1 writes: the column is absent
    table = pq.read_table(history / "writes.parquet")
    sourced = pa.array(["in-1" if i % 7 == 0 else None for i in range(table.num_rows)], pa.string())
    pq.write_table(table.append_column("source", sourced), history / "writes.parquet", row_group_size=50)
    assert _non_null(locate_history(history)["writes"], "source") == sum(1 for v in sourced.to_pylist() if v)


def test_the_row_check_pass_counts_rows_per_process_and_phase(tmp_path: Path) -> None:
    history = write_history(generate(SynthSpec(operations=2000, seed=3)), tmp_path / "h")
    summary = summarize(locate_history(history)["reads"], READS)
    reads = pq.read_table(history / "reads.parquet").to_pylist()
    expected: dict[tuple[str, str], int] = {}
    for row in reads:
        expected[(row["process"], row["phase"])] = expected.get((row["process"], row["phase"]), 0) + 1
    assert dict(summary.by_process) == expected
    assert sum(n for (_, phase), n in expected.items() if phase == "final") == summary.counts["final"]
