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


def write_table(history_dir: Path, table: str, columns: dict[str, list[Any]]) -> Path:
    """Write `<table>.parquet` so that no reader ever sees a partial file: temp name, fsync, rename."""
    history_dir.mkdir(parents=True, exist_ok=True)
    arrow = pa.Table.from_pydict(columns, schema=SCHEMAS[table])
    target = history_dir / f"{table}.parquet"
    temp = history_dir / f".{table}.parquet.{os.getpid()}.tmp"
    try:
        pq.write_table(arrow, temp)
        fd = os.open(temp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    dir_fd = os.open(history_dir, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return target
