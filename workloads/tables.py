"""The contract tables' Arrow schemas (spec/history.md) and their atomic Parquet writing.

Types follow the contract exactly: times int64 nanoseconds, partitions and
broker ids int32, offsets and ids int64, JSON values as strings. Columns the
contract says are never null are declared non-nullable, so Arrow refuses a
table that breaks that instead of writing it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq


def _field(name: str, kind: pa.DataType, nullable: bool = True) -> pa.Field:
    return pa.field(name, kind, nullable=nullable)


S, I32, I64 = pa.string(), pa.int32(), pa.int64()

SCHEMAS: dict[str, pa.Schema] = {
    "writes": pa.schema([
        _field("process", S, False), _field("op_id", I64, False), _field("topic", S, False), _field("key", S),
        _field("value", S, False), _field("partition", I32), _field("offset", I64),
        _field("status", S, False), _field("error", S), _field("invoke_ns", I64, False),
        _field("complete_ns", I64), _field("az", S),
    ]),
    "reads": pa.schema([
        _field("process", S, False), _field("seq", I64, False), _field("phase", S, False),
        _field("topic", S, False), _field("partition", I32, False), _field("offset", I64, False),
        _field("key", S), _field("value", S, False), _field("leader_epoch", I32),
        _field("poll_ns", I64, False), _field("az", S), _field("group", S),
    ]),
    "processes": pa.schema([
        _field("process", S, False), _field("role", S), _field("az", S), _field("config", S),
    ]),
    "observations": pa.schema([
        _field("time_ns", I64, False), _field("observer", S, False), _field("topic", S),
        _field("partition", I32), _field("leader", I32), _field("isr", S), _field("leader_epoch", I32),
        _field("controller", I32),
    ]),
    "nemesis": pa.schema([
        _field("time_ns", I64, False), _field("type", S, False), _field("fault", S), _field("targets", S),
        _field("detail", S),
    ]),
}


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
