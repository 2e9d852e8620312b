"""Read and validate Parquet history tables with pyarrow.

`check_schema` reads only file footers (cheap at any size): missing required
columns and wrong column types, naming the file and column. `read_table`
also reads the rows into one canonical Arrow table (strings as ``string``,
integers as ``int64``: `checkers.schema.read_type`) and checks nulls, domains and uniqueness, naming the
file, the row (1-based within that file) and the column. `summarize` checks
the same row rules and counts in one streaming pass over a few columns,
never holding the table.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field
from functools import reduce
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from checkers.errors import HistoryError
from checkers.schema import Column, TableSpec, read_type
from checkers.sources import TableSource


def _value_type(dtype: pa.DataType) -> pa.DataType:
    return dtype.value_type if pa.types.is_dictionary(dtype) else dtype


def _is_stringish(dtype: pa.DataType) -> bool:
    return pa.types.is_string(dtype) or pa.types.is_large_string(dtype) or pa.types.is_string_view(dtype)


def _type_problem(col: Column, dtype: pa.DataType) -> str | None:
    value = _value_type(dtype)
    if pa.types.is_null(value):
        return None if col.nullable else "holds only nulls (type null)"
    if col.kind == "any":
        return None
    ok = {
        "string": _is_stringish(value),
        "int": pa.types.is_integer(value),
        "id": _is_stringish(value) or pa.types.is_integer(value),
        "json": _is_stringish(value),
    }[col.kind]
    if ok:
        return None
    expected = {
        "string": "a string",
        "int": "an integer",
        "id": "a string or an integer",
        "json": "a string holding a JSON object",
    }[col.kind]
    return f"has type {dtype}, expected {expected}"


def file_schema(path: Path) -> pa.Schema:
    """The Arrow schema of one Parquet file; HistoryError if it is not one."""
    try:
        return pq.read_schema(path)
    except (OSError, pa.ArrowException) as exc:
        raise HistoryError(str(path), f"not a readable Parquet file ({str(exc).splitlines()[0]})") from exc


def check_schema(source: TableSource, spec: TableSpec) -> dict[Path, pa.Schema]:
    """Check every file's columns and types against ``spec``; return the schemas."""
    schemas: dict[Path, pa.Schema] = {}
    for path in source.files:
        schema = file_schema(path)
        for col in spec.columns:
            index = schema.get_field_index(col.name)
            if index < 0:
                if col.required:
                    raise HistoryError(f"{path}: column '{col.name}'", "missing required column")
                continue
            problem = _type_problem(col, schema.field(index).type)
            if problem:
                raise HistoryError(f"{path}: column '{col.name}'", problem)
        schemas[path] = schema
    return schemas


def null_free_columns(source: TableSource, spec: TableSpec) -> set[str]:
    """Non-nullable columns whose file footers prove they hold no null (statistics only)."""
    proven = {c.name for c in spec.columns if not c.nullable}
    for path in source.files:
        meta = pq.ParquetFile(path).metadata
        seen: set[str] = set()
        for group in range(meta.num_row_groups):
            row_group = meta.row_group(group)
            for index in range(row_group.num_columns):
                chunk = row_group.column(index)
                stats = chunk.statistics
                seen.add(chunk.path_in_schema)
                if stats is None or not stats.has_null_count or stats.null_count > 0:
                    proven.discard(chunk.path_in_schema)
        if meta.num_row_groups:
            proven &= seen
    return proven


def _canonical_column(col: Column, array: pa.ChunkedArray | None, rows: int) -> pa.Array | pa.ChunkedArray:
    target = read_type(col)
    if array is None or pa.types.is_null(_value_type(array.type)):
        return pa.nulls(rows, type=target)
    if pa.types.is_dictionary(array.type):
        array = array.cast(array.type.value_type)
    if col.kind == "any" and not _is_stringish(array.type):
        return pa.array([None if v is None else json.dumps(v) for v in array.to_pylist()], type=target)
    return array.cast(target)


def _read_file(path: Path, spec: TableSpec, schema: pa.Schema) -> pa.Table:
    present = [c.name for c in spec.columns if schema.get_field_index(c.name) >= 0]
    try:
        raw = pq.read_table(path, columns=present)
    except (OSError, pa.ArrowException) as exc:
        raise HistoryError(str(path), f"cannot read rows ({str(exc).splitlines()[0]})") from exc
    arrays = []
    for col in spec.columns:
        array = raw.column(col.name) if col.name in present else None
        try:
            arrays.append(_canonical_column(col, array, raw.num_rows))
        except (pa.ArrowException, OverflowError) as exc:
            raise HistoryError(f"{path}: column '{col.name}'", f"cannot read as {col.kind}: {exc}") from exc
    return pa.table(arrays, names=[c.name for c in spec.columns])


def _first_true(mask: pa.ChunkedArray | pa.Array) -> int:
    return int(pc.index(mask, True).as_py())


def check_rows(table: pa.Table, spec: TableSpec, where: str) -> None:
    """Nulls in non-nullable columns and values outside domains, by row."""
    for col in spec.columns:
        array = table.column(col.name)
        if not col.nullable and array.null_count:
            row = _first_true(pc.is_null(array))
            raise HistoryError(f"{where}: row {row + 1}: column '{col.name}'", "is null")
        if col.kind == "json":
            _check_json_objects(array, col.name, where)
        allowed = spec.domains.get(col.name)
        if allowed is not None:
            bad = pc.invert(pc.fill_null(pc.is_in(array, value_set=pa.array(allowed)), True))
            if col.nullable:  # a null is no value outside the domain
                bad = pc.and_(bad, pc.is_valid(array))
            if pc.any(bad).as_py():
                row = _first_true(bad)
                value = array[row].as_py()
                raise HistoryError(
                    f"{where}: row {row + 1}: column '{col.name}'",
                    f"{value!r} is not one of {', '.join(allowed)}",
                )


def _check_json_objects(array: pa.ChunkedArray, name: str, where: str) -> None:
    for row, text in enumerate(array.to_pylist()):
        if text is None:
            continue
        try:
            parsed = json.loads(text)
        except ValueError as exc:
            raise HistoryError(
                f"{where}: row {row + 1}: column '{name}'", f"not a JSON object string ({exc})"
            ) from None
        if not isinstance(parsed, dict):
            raise HistoryError(
                f"{where}: row {row + 1}: column '{name}'",
                f"expected a JSON object, got {type(parsed).__name__}",
            )


def check_unique(table: pa.Table, column: str, describe: list[tuple[str, int]]) -> None:
    """Raise on the first repeated value of ``column``.

    ``describe`` lists (file, rows) in table order so the message can name
    the file and the row within it.
    """
    values = table.column(column)
    if pc.count_distinct(values).as_py() == len(values) - values.null_count:
        return
    series = values.to_pandas()
    dupes = series[series.duplicated(keep=False)]
    value = dupes.iloc[0]
    rows = dupes.index[dupes == value].tolist()[:2]
    first, second = (_locate(describe, r) for r in rows)
    raise HistoryError(
        f"{second[0]}: row {second[1]}: column '{column}'",
        f"duplicate value {value!r} (first at {first[0]} row {first[1]})",
    )


def _locate(describe: list[tuple[str, int]], row: int) -> tuple[str, int]:
    for name, rows in describe:
        if row < rows:
            return name, row + 1
        row -= rows
    return describe[-1][0], row + 1


def read_table(source: TableSource, spec: TableSpec) -> pa.Table:
    """All rows of a Parquet table, validated, in canonical types."""
    schemas = check_schema(source, spec)
    parts = []
    describe: list[tuple[str, int]] = []
    for path, schema in schemas.items():
        part = _read_file(path, spec, schema)
        check_rows(part, spec, str(path))
        parts.append(part)
        describe.append((str(path), part.num_rows))
    table = pa.concat_tables(parts)
    for column in spec.unique:
        check_unique(table, column, describe)
    return table


def pick_rows(source: TableSource, spec: TableSpec, values: Collection[str],
              positions: Collection[tuple[str, int, int]]) -> list[dict[str, Any]]:
    """The rows whose value is one of ``values`` or whose (topic, partition, offset) is one of ``positions``.

    Every column of ``spec``, in canonical types (as read_table gives them); a batch at a time, so
    only the picked rows are held. Batches are sieved by value and offset in Arrow; only the rows
    that pass are compared with the positions in Python.
    """
    wanted_values, wanted_positions = set(values), set(positions)
    value_set = pa.array(sorted(wanted_values), pa.string())
    offset_set = pa.array(sorted({p[2] for p in wanted_positions}), pa.int64())
    by_name = {c.name: c for c in spec.columns}
    picked: list[dict[str, Any]] = []
    for path, schema in check_schema(source, spec).items():
        present = [c.name for c in spec.columns if schema.get_field_index(c.name) >= 0]
        try:
            for batch in pq.ParquetFile(path).iter_batches(batch_size=SUMMARY_BATCH, columns=present):
                table = pa.Table.from_batches([batch])
                sieve = [pc.is_in(_canonical_column(by_name[name], table.column(name), table.num_rows), value_set=s)
                         for name, s in (("value", value_set), ("offset", offset_set)) if len(s)]
                if not sieve:
                    continue
                table = table.filter(reduce(pc.or_kleene, sieve))
                rows = pa.table([_canonical_column(c, table.column(c.name) if c.name in present else None,
                                                   table.num_rows) for c in spec.columns],
                                names=[c.name for c in spec.columns]).to_pylist()
                picked += [row for row in rows if row["value"] in wanted_values
                           or (row["topic"], row["partition"], row["offset"]) in wanted_positions]
        except (OSError, pa.ArrowException) as exc:
            raise HistoryError(str(path), f"cannot read rows ({str(exc).splitlines()[0]})") from exc
    return picked


@dataclass
class RowSummary:
    """One pass over a table's rows: counts, names, and whether some row breaks a rule."""

    rows: int = 0
    counts: Counter[str] = field(default_factory=Counter)  # rows per value of the domain column
    processes: set[str] = field(default_factory=set)
    topics: set[str] = field(default_factory=set)
    grouped: set[str] = field(default_factory=set)  # processes with a row whose `group` is set
    members: set[tuple[str, str]] = field(default_factory=set)  # (group, process) of live reads with a group
    by_process: Counter[tuple[str, str]] = field(default_factory=Counter)  # rows per (process, domain value)
    bad: bool = False


SUMMARY_BATCH = 1 << 20


def _distinct(array: pa.Array) -> set[str]:
    if pa.types.is_dictionary(array.type):
        used = pc.unique(array.indices).drop_null()
        return set(pc.take(array.dictionary, used).to_pylist())
    return set(pc.unique(array).drop_null().to_pylist())


def _value_counts(array: pa.Array) -> Counter[str]:
    counts: Counter[str] = Counter()
    if pa.types.is_dictionary(array.type):
        names = array.dictionary.to_pylist()
        for entry in pc.value_counts(array.indices.drop_null()).to_pylist():
            counts[names[entry["values"]]] += entry["counts"]
    else:
        for entry in pc.value_counts(array.drop_null()).to_pylist():
            counts[entry["values"]] += entry["counts"]
    return counts


def _pair_counts(first: pa.Array, second: pa.Array) -> Counter[tuple[str, str]]:
    """Rows per (first, second) pair of values (nulls left out); dictionary columns grouped by their indices."""
    keys, names = [], []
    for array in (first, second):
        if pa.types.is_dictionary(array.type):
            keys.append(array.indices)
            names.append(array.dictionary.to_pylist())
        else:
            keys.append(array)
            names.append(None)
    grouped = pa.table({"a": keys[0], "b": keys[1]}).group_by(["a", "b"]).aggregate([([], "count_all")])
    counts: Counter[tuple[str, str]] = Counter()
    for a, b, n in zip(*(grouped.column(c).to_pylist() for c in ("a", "b", "count_all")), strict=True):
        if a is not None and b is not None:
            counts[(names[0][a] if names[0] is not None else a, names[1][b] if names[1] is not None else b)] += n
    return counts


def summarize(source: TableSource, spec: TableSpec) -> RowSummary:
    """Counts by the domain column, process and topic names, and the row rules, streaming.

    Reads only process, topic, the domain column, `group` (where the table has one) and
    the non-nullable columns whose footers do not already prove them null-free, a batch
    at a time. ``bad`` says a row breaks a rule; finding and naming it is the caller's.
    """
    (domain,) = spec.domains
    allowed = set(spec.domains[domain])
    has_group = any(c.name == "group" for c in spec.columns)
    proven = null_free_columns(source, spec)
    unproven = [c.name for c in spec.columns if not c.nullable and c.name not in proven]
    wanted = list(dict.fromkeys(["process", "topic", domain, *(["group"] if has_group else []), *unproven]))
    out = RowSummary()
    for path, schema in check_schema(source, spec).items():
        present = [name for name in wanted if schema.get_field_index(name) >= 0]
        strings = [n for n in present if _is_stringish(_value_type(schema.field(n).type))]
        try:
            batches = pq.ParquetFile(path, read_dictionary=strings).iter_batches(
                batch_size=SUMMARY_BATCH, columns=present
            )
            for batch in batches:
                out.rows += batch.num_rows
                out.bad = out.bad or any(batch.column(n).null_count for n in unproven)
                out.processes |= _distinct(batch.column("process"))
                out.topics |= _distinct(batch.column("topic"))
                out.counts.update(_value_counts(batch.column(domain)))
                out.by_process.update(_pair_counts(batch.column("process"), batch.column(domain)))
                if "group" in present:
                    process = batch.column("process")
                    out.grouped |= _distinct(process.filter(pc.is_valid(batch.column("group"))))
                    # the reads' domain is `phase`: group members are the processes of live group reads
                    live = pc.and_(pc.is_valid(batch.column("group")), pc.equal(batch.column(domain), "live"))
                    out.members |= set(_pair_counts(batch.column("group").filter(live), process.filter(live)))
        except (OSError, pa.ArrowException) as exc:
            raise HistoryError(str(path), f"cannot read rows ({str(exc).splitlines()[0]})") from exc
    out.bad = out.bad or not set(out.counts) <= allowed
    return out
