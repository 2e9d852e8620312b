"""Load a whole history table, from JSONL or Parquet, as one validated Arrow table.

Both engines' inputs pass through here or through the same validation, so a
history that one engine rejects the other rejects too. Views of a run that
must show a broken history rather than refuse it read through the lenient
mode instead (checkers.lenient_tables).
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from checkers import jsonl, parquet
from checkers.schema import TABLES, read_type
from checkers.sources import TableSource


def _any_to_text(values: list[Any]) -> list[str | None]:
    return [v if v is None or isinstance(v, str) else json.dumps(v, sort_keys=True) for v in values]


def load_table(source: TableSource) -> pa.Table:
    """The validated table in canonical types (checkers.schema.read_type)."""
    spec = TABLES[source.table]
    if source.format == "parquet":
        return parquet.read_table(source, spec)
    columns = jsonl.read_jsonl(source, spec)
    arrays = []
    for col in spec.columns:
        values = columns[col.name]
        if col.kind == "any":
            values = _any_to_text(values)
        arrays.append(pa.array(values, type=read_type(col)))
    return pa.table(arrays, names=[c.name for c in spec.columns])


def validate_source(source: TableSource) -> None:
    """Validate without keeping rows: JSONL fully, Parquet by schema only.

    Row-level checks of Parquet tables are the reading engine's job (the
    Spark engine does them in Spark so no single process holds the table).
    """
    spec = TABLES[source.table]
    if source.format == "parquet":
        parquet.check_schema(source, spec)
    else:
        jsonl.read_jsonl(source, spec, keep=False)
