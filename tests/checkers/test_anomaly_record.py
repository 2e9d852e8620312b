"""Adding an anomaly is its record plus its logic: a new record in a fixture reaches every derived place.

The fixture's anomaly, `odd-write`, counts acknowledged writes with an odd `op_id` (trivial logic, for the
pandas engine only). Without another edit it is classified by its judge, counted in the verdict, given
examples by its builder, ordered in the report and traced in its transactions view, a column of the lake's
`runs` with a newer lake version, and a row of docs/history.md's anomaly table. The Spark engine's side of
the same proof needs a JVM (tests marked `spark`). Also here: both engines order instances by the record's
sort key and neither falls back to another for a name no record has.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

from checkers import anomalies as a
from checkers import example_builders
from checkers.classify import UNLESS_ACKS_0, Rule
from checkers.context import load_context
from checkers.errors import CheckerError
from checkers.examples import build_examples
from checkers.history_docs import HISTORY_DOC, anomalies_markdown, render
from checkers.pandas_engine import FINDERS, Logs, PandasEngine
from checkers.sources import locate_history
from checkers.verdict import assemble
from report.anomalies import anomaly_order, collect_examples
from spark_analysis.lake_tables import runs_schema, schema_version
from tests.checkers.cases import CASES
from tests.checkers.histories import write

ODD = "odd-write"
RECORD = a.Anomaly(ODD, 1, "Acknowledged writes with an odd op_id (a fixture's anomaly).", ("invoke_ns", "value"),
                   example_builders.write_example, UNLESS_ACKS_0, transactions_view=9, lake_version=schema_version() + 1)
REGISTRY = a.REGISTRY.plus(RECORD)


def odd_writes(logs: Logs) -> dict[str, pd.DataFrame]:
    """The fixture anomaly's logic in the pandas engine."""
    w = logs.w
    return {ODD: w.loc[(w["status"] == "ok") & (w["op_id"] % 2 == 1), ["value", "process", "invoke_ns"]]}


def _judge(tmp_path: Path, engine: PandasEngine) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    # The lost case: p (acks=all) wrote a (op 1) and b (op 2); q (acks=0) wrote x (op 1) and y (op 2).
    sources = locate_history(write(tmp_path, CASES["lost"].tables()))
    context = load_context(sources)
    analysis = engine.analyse(sources, context.configs)
    examples = build_examples(analysis, engine, context, engine.registry)
    return assemble(engine.name, analysis, examples, engine.registry), examples


def test_a_new_record_and_its_pandas_logic_reach_the_verdict(tmp_path: Path) -> None:
    verdict, examples = _judge(tmp_path, PandasEngine(REGISTRY, (*FINDERS, odd_writes)))

    # a (p, acks=all) is an error, x (q, acks=0) information: errors first
    assert verdict["counts"][ODD] == 2 and verdict["errors"][ODD] == 1
    assert [(e["value"], e["classified"], e["op_id"]) for e in examples[ODD]] == [("a", "error", 1), ("x", "info", 1)]
    assert list(verdict["counts"]) == [*a.ANOMALIES, ODD]


def test_a_new_record_is_judged_by_its_judge() -> None:
    from checkers.classify import parse_config

    configs = {"p": parse_config('{"acks": "all"}'), "q": parse_config('{"acks": 0}')}
    assert REGISTRY.rules(configs, [])[ODD] == Rule("by-process", frozenset({"q"}))


def test_an_anomaly_without_logic_in_the_engine_is_an_engine_failure(tmp_path: Path) -> None:
    with pytest.raises(CheckerError, match=ODD):
        _judge(tmp_path, PandasEngine(REGISTRY))


def test_a_new_record_has_its_place_in_the_report(tmp_path: Path) -> None:
    class Loaded:  # the report's loaded run, as far as collect_examples reads it
        verdict = {"examples": {ODD: [{"value": "a", "invoke_ns": 5, "complete_ns": 7, "classified": "error"}]},
                   "errors": {ODD: 1}, "counts": {"made-up": 1}}

        def table(self, name: str) -> pd.DataFrame:
            return pd.DataFrame({"value": [], "invoke_ns": [], "complete_ns": [], "poll_ns": []})

    assert anomaly_order(Loaded.verdict, REGISTRY) == [*a.ANOMALIES, ODD, "made-up"]
    placed = collect_examples(Loaded(), [], REGISTRY)  # type: ignore[arg-type]
    assert [(e.anomaly, e.window) for e in placed[ODD]] == [(ODD, (5, 7))]
    assert REGISTRY.transactions_view == (*a.REGISTRY.transactions_view, ODD)


def test_a_new_record_is_a_lake_column_and_a_newer_lake() -> None:
    assert "odd_write" in runs_schema(REGISTRY).names and "odd_write" not in runs_schema().names
    assert runs_schema(REGISTRY).field("odd_write").type == pa.int64()
    assert schema_version(REGISTRY) == schema_version() + 1


def test_a_new_record_is_a_row_of_the_docs_table() -> None:
    row = f"| `{ODD}` | v1 | Acknowledged writes with an odd op_id (a fixture's anomaly). | the writer had acks=all"
    assert anomalies_markdown(REGISTRY)[-1].startswith(row)
    assert row in render(HISTORY_DOC.read_text(), REGISTRY) and row not in render(HISTORY_DOC.read_text())


def test_a_record_needs_a_unique_name_and_a_sort_key() -> None:
    with pytest.raises(ValueError, match="one name"):
        a.REGISTRY.plus(a.REGISTRY[a.LOST])
    with pytest.raises(ValueError, match="sort key"):
        a.REGISTRY.plus(a.Anomaly(ODD, 1, "x", (), example_builders.write_example, lake_version=1))


def test_both_engines_order_by_the_record_and_refuse_a_name_without_one() -> None:
    from checkers.spark_engine import sort_key, top_from_arrow

    assert all(sort_key(r.name) == r.sort_key for r in a.REGISTRY)
    rows = pa.table({"anomaly": [a.LOST] * 3, "is_error": [False, True, False], "value": ["c", "b", "a"],
                     "invoke_ns": [1, 2, 1], **{c: pa.nulls(3) for c in a.INSTANCE_COLUMNS
                                                if c not in ("value", "invoke_ns")}})
    assert [r["value"] for r in top_from_arrow(rows)[a.LOST]] == ["b", "a", "c"]  # errors, invoke_ns, value
    with pytest.raises(KeyError):
        top_from_arrow(rows.set_column(0, "anomaly", pa.array(["no-such-anomaly"] * 3)))
    with pytest.raises(KeyError):
        a.REGISTRY["no-such-anomaly"]  # the pandas engine's look-up of the same
