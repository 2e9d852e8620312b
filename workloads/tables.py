"""The contract tables' Arrow schemas (spec/history.md) and their atomic Parquet writing.

The schemas are derived from the contract's one declaration (`checkers.schema`): types
exactly as declared (times int64 nanoseconds, partitions and broker ids int32, offsets and
ids int64, JSON values as strings). Columns the contract says are never null are declared
non-nullable, so Arrow refuses a table that breaks that instead of writing it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from checkers.schema import TABLES, arrow_schema

SCHEMAS: dict[str, pa.Schema] = {name: arrow_schema(name) for name in TABLES}


def empty_columns(table: str) -> dict[str, list[Any]]:
    return {name: [] for name in SCHEMAS[table].names}


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class TableWriter:
    """Streams rows into ``<table>.parquet`` under a temporary name; `commit` renames it into place.

    Rows are buffered as columns and written as one row group per
    `flush_rows`, so memory stays bounded however long the run was. Until
    `commit` nothing named ``<table>.parquet`` changes: a crash leaves at most
    a hidden temp file, never a half-written table that looks complete.
    """

    def __init__(self, history_dir: Path, table: str, flush_rows: int = 250_000) -> None:
        history_dir.mkdir(parents=True, exist_ok=True)
        self.table = table
        self.schema = SCHEMAS[table]
        self.target = history_dir / f"{table}.parquet"
        self.temp = history_dir / f".{table}.parquet.{os.getpid()}.tmp"
        self.flush_rows = flush_rows
        self.columns = empty_columns(table)
        self.count = 0
        self._buffered = 0
        self._writer: pq.ParquetWriter | None = None

    def row(self, **values: Any) -> None:
        for name, column in self.columns.items():
            column.append(values.get(name))
        self._added(1)

    def rows(self, count: int, **values: Any) -> None:
        """Append `count` rows: each value is a list of `count` items, or one value for every row."""
        for name, column in self.columns.items():
            value = values.get(name)
            column.extend(value if isinstance(value, list) else [value] * count)
        self._added(count)

    def _added(self, count: int) -> None:
        self.count += count
        self._buffered += count
        if self._buffered >= self.flush_rows:
            self._flush()

    def _flush(self) -> None:
        arrow = pa.Table.from_pydict(self.columns, schema=self.schema)
        if self._writer is None:
            self._writer = pq.ParquetWriter(self.temp, self.schema)
        self._writer.write_table(arrow)
        self.columns = empty_columns(self.table)
        self._buffered = 0

    def commit(self) -> Path:
        """Write what is buffered, then put the finished file in place (fsynced, atomically)."""
        try:
            if self._buffered or self._writer is None:
                self._flush()
            assert self._writer is not None
            self._writer.close()
            self._writer = None
            _fsync(self.temp)
            os.replace(self.temp, self.target)
        except BaseException:
            self.abort()
            raise
        _fsync(self.target.parent)
        return self.target

    def abort(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        self.temp.unlink(missing_ok=True)


def write_table(history_dir: Path, table: str, columns: dict[str, list[Any]]) -> Path:
    """Write a whole table at once, atomically (see TableWriter)."""
    writer = TableWriter(history_dir, table)
    try:
        writer.rows(len(next(iter(columns.values()), [])), **columns)
        return writer.commit()
    except BaseException:
        writer.abort()
        raise
