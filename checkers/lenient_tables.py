"""The lenient mode of the checker's table reading: history tables as pandas frames for views of a run.

The strict readers (checkers.tables over checkers.jsonl and checkers.parquet) refuse a history
that breaks the contract, because a verdict over a broken history would be wrong. A view of a
run (the report) must show what there is instead, so this mode never refuses: a table that is
missing reads as an empty frame with the contract's columns; a table that cannot be read reads
as the same empty frame plus a line in ``problems``; a torn last JSONL line (a crash mid-append)
is left out and noted; a JSONL line that is not an object is skipped. It does not check types,
domains, nulls or uniqueness (that is the strict mode's job).

Each contract column (checkers.schema) is held as one of three kinds: ``int`` as pandas
``Int64`` with full nanosecond precision (never float), ``str`` (``string`` and ``id``; an
integer id reads as its text) and ``json`` (``json`` and ``any``: the value's JSON text, keys
sorted, a string as itself); text columns are ``object`` with None for null.
Must never: raise on a table's contents, turn an integer into a float, or validate rows.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path
from typing import Any, Literal

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from checkers.schema import TABLES
from checkers.sources import table_paths

Kind = Literal["str", "int", "json"]

# How this mode holds each kind of contract column (checkers.schema.Column.kind).
_KINDS: dict[str, Kind] = {"string": "str", "id": "str", "int": "int", "json": "json", "any": "json"}


def frame_columns(table: str, skip: Collection[str] = ()) -> dict[str, Kind]:
    """The contract's columns of ``table`` (less ``skip``) and the kind this mode holds each as."""
    return {c.name: _KINDS[c.kind] for c in TABLES[table].columns if c.name not in skip}


def empty_frame(columns: dict[str, Kind]) -> pd.DataFrame:
    """A frame with no rows and ``columns`` in their kinds' dtypes."""
    return _frame([], columns)


def read_frame(history_dir: Path, table: str, problems: list[str], skip: Collection[str] = ()) -> pd.DataFrame:
    """``table`` of ``history_dir`` (Parquet file or dataset directory, else JSONL), never raising on its contents.

    Reads only the contract's columns less ``skip`` (others are ignored; a missing one is all null).
    A table that is absent is an empty frame; one that cannot be read is an empty frame and a
    line ``history/<table>: unreadable (<why>)`` in ``problems``.
    """
    columns = frame_columns(table, skip)
    parquet, jsonl = table_paths(history_dir, table)
    try:
        if parquet.exists():
            return _parquet_frame(parquet, columns)
        if jsonl.is_file():
            return _frame(_jsonl_rows(jsonl, problems), columns)
        return _frame([], columns)
    except (OSError, ValueError, TypeError, pa.ArrowException) as exc:
        problems.append(f"history/{table}: unreadable ({exc})")
        return _frame([], columns)


def _parquet_frame(path: Path, columns: dict[str, Kind]) -> pd.DataFrame:
    """A Parquet file or dataset directory, column by column (no per-row Python for the big tables)."""
    schema_names = set(pq.ParquetDataset(path).schema.names)
    table = pq.read_table(path, columns=[c for c in columns if c in schema_names])
    data: dict[str, Any] = {}
    for col, kind in columns.items():
        if col not in schema_names:
            data[col] = _frame([{}] * table.num_rows, {col: kind})[col]
            continue
        values = table.column(col)
        if kind == "int":
            ints = values.cast(pa.int64())
            mask = ints.is_null().to_numpy(zero_copy_only=False)
            data[col] = pd.Series(pd.arrays.IntegerArray(ints.fill_null(0).to_numpy(), mask))
        elif kind == "str" or pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
            data[col] = pd.Series(values.cast(pa.string()).to_pylist(), dtype=object)
        else:
            data[col] = pd.Series([_cell(v, kind) for v in values.to_pylist()], dtype=object)
    return pd.DataFrame(data)


def _jsonl_rows(path: Path, problems: list[str]) -> list[dict[str, Any]]:
    """The objects of a JSONL file. A torn last line is left out and noted; a bad line before it raises."""
    lines = [(n, line) for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if line.strip()]
    rows = []
    for index, (number, line) in enumerate(lines):
        try:
            row = json.loads(line)
        except ValueError as exc:
            if index == len(lines) - 1:
                problems.append(f"history/{path.name} line {number}: torn last line left out ({exc})")
                break
            raise ValueError(f"{path.name} line {number}: {exc}") from None
        if isinstance(row, dict):
            rows.append(row)
    return rows


def _cell(value: Any, kind: Kind) -> Any:
    if value is None:
        return None
    if kind == "int":
        return int(value)
    if kind == "json":
        return value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return str(value)


def _frame(rows: list[dict[str, Any]], columns: dict[str, Kind]) -> pd.DataFrame:
    # Text columns stay object with None for null (pandas would otherwise infer "str" with NaN).
    data = {
        col: pd.Series(pd.array([_cell(r.get(col), kind) for r in rows], dtype="Int64")) if kind == "int"
        else pd.Series([_cell(r.get(col), kind) for r in rows], dtype=object)
        for col, kind in columns.items()
    }
    return pd.DataFrame(data)
