"""The history contract is declared once (checkers.schema) and everything that restates it is derived from it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa
import pytest

from checkers import history_docs, schema
from checkers.schema import TABLES, Column, arrow_schema, read_type
from checkers.sources import locate_history
from checkers.tables import load_table
from spark_analysis import lake_tables as lake
from tests.checkers.histories import T0, r, reads, w, write
from workloads.tables import SCHEMAS, TableWriter


def test_docs_history_md_is_current() -> None:
    assert history_docs.main(["--check"]) == 0, "docs/history.md is stale: run make history-docs"


def test_a_stale_or_unmarked_column_table_is_caught() -> None:
    doc = history_docs.HISTORY_DOC.read_text()
    stale = doc.replace("| `op_id` | int64 |", "| `op_id` | int32 |", 1)
    assert stale != doc and history_docs.render(stale) == doc
    begin, _ = history_docs.markers("columns:reads")
    with pytest.raises(SystemExit, match="columns:reads"):
        history_docs.render(doc.replace(begin, ""))


def test_a_new_table_gets_its_section_in_the_docs(monkeypatch: pytest.MonkeyPatch) -> None:
    new = schema.TableSpec("offsets", required=False, doc="one offset",
                           columns=(Column("at", "string", nullable=False, required=True, doc="its id"),))
    monkeypatch.setitem(schema.TABLES, "offsets", new)
    doc = history_docs.render(history_docs.HISTORY_DOC.read_text())
    assert "| [`offsets`](#offsets-optional) | no | one offset |" in doc
    section = doc.index("### offsets (optional)")
    assert doc.index("### transactions (optional)") < section < doc.index("## Anomalies")
    assert "| `at` | string | its id |" in doc[section:]
    assert history_docs.render(doc) == doc


def test_every_table_and_column_is_in_the_docs() -> None:
    doc = history_docs.HISTORY_DOC.read_text()
    for name, spec in TABLES.items():
        assert f"| [`{name}`](#" in doc
        for col in spec.columns:
            assert f"| `{col.name}` | {col.type_text()} |" in doc, (name, col.name)


def test_the_rules_name_columns_the_table_has() -> None:
    for spec in TABLES.values():
        names = set(spec.names)
        assert len(names) == len(spec.columns), spec.name
        assert set(spec.domains) <= names and set(spec.unique) <= names, spec.name
        assert all(c.required for c in spec.columns if not c.nullable), spec.name
    assert [n for n, s in TABLES.items() if s.required] == ["writes", "reads"]


def test_the_workloads_write_the_declared_arrow_types() -> None:
    assert set(SCHEMAS) == set(TABLES)
    for name, spec in TABLES.items():
        written = SCHEMAS[name]
        assert written.names == list(spec.names)
        for col in spec.columns:
            f = written.field(col.name)
            assert f.nullable == col.nullable, (name, col.name)
            expected = {"int32": pa.int32(), "int64": pa.int64()}.get(col.type, pa.string())
            assert f.type == expected, (name, col.name)
    assert SCHEMAS["reads"].field("partition").type == pa.int32()
    assert SCHEMAS["reads"].field("offset").type == pa.int64()


def test_a_non_nullable_column_refuses_a_null_when_written(tmp_path: Path) -> None:
    writer = TableWriter(tmp_path, "nemesis")
    writer.row(time_ns=None, type="start")
    with pytest.raises((pa.ArrowInvalid, pa.ArrowTypeError, ValueError)):
        writer.commit()


def test_the_lake_copies_contract_columns_with_the_checker_s_types() -> None:
    copied = {"anomalies": ("writes", ("value", "topic", "partition", "offset", "process")),
              "leadership": ("observations", ("topic", "partition", "observer", "leader", "leader_epoch", "isr")),
              "faults": ("nemesis", ("fault", "targets")), "availability": ("nemesis", ("fault", "targets")),
              "commits": ("commits", tuple(c.name for c in TABLES["commits"].columns))}
    for table, (source, columns) in copied.items():
        for name in columns:
            assert lake.TABLES[table].field(name).type == read_type(TABLES[source].column(name)), (table, name)
    assert lake.TABLES["leadership"].field("partition").type == pa.int64()  # every integer widened
    assert [f.name for f in lake.THROUGHPUT][5:8] == list(schema.STATUSES)


def test_a_new_column_is_one_edit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A column added to the declaration is written, read by the checker and documented, with no other change."""
    extended = dataclasses.replace(schema.WRITES, columns=(*schema.WRITES.columns, Column("note", "string", doc="t")))
    monkeypatch.setitem(schema.TABLES, "writes", extended)
    assert arrow_schema("writes").field("note").type == pa.string()
    assert "| `note` | string or null | t |" in history_docs.columns_markdown(extended)
    rows = [{**w("v1", 1, offset=0), "note": "n1"}]
    history = write(tmp_path / "h", {"writes": rows, "reads": reads(r("v1", 0))}, fmt="parquet")
    loaded = load_table(locate_history(history)["writes"])
    assert loaded.column("note").to_pylist() == ["n1"] and loaded.column("invoke_ns").to_pylist() == [T0 + 10**6]
