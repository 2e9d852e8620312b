"""Read and validate one JSONL history table, line by line.

Every problem is reported with its line number (1-based, counting blank
lines). Validation covers malformed JSON, non-object lines, wrong types,
nulls in non-nullable columns, values outside a column's domain and repeated
values in a unique column. Absent keys of nullable columns read as null;
unknown keys are ignored.
"""

from __future__ import annotations

import json
from typing import Any

from checkers.errors import HistoryError
from checkers.schema import Column, TableSpec
from checkers.sources import TableSource

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _json_object_text(value: Any) -> str:
    parsed = value
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError as exc:
            raise TypeError(f"not a JSON object string ({exc})") from None
    if not isinstance(parsed, dict):
        raise TypeError(f"expected a JSON object, got {type(parsed).__name__}")
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _coerce(col: Column, value: Any) -> Any | str:
    """The value as the column holds it, or raises TypeError with the problem."""
    if col.kind == "any":
        return value
    if col.kind == "json":
        return _json_object_text(value)
    if col.kind == "string":
        if isinstance(value, str):
            return value
        raise TypeError(f"expected a string, got {type(value).__name__} {json.dumps(value)[:40]}")
    if isinstance(value, int) and not isinstance(value, bool):
        if col.kind == "id":
            return str(value)
        if INT64_MIN <= value <= INT64_MAX:
            return value
        raise TypeError(f"integer {value} is outside the int64 range")
    if col.kind == "id" and isinstance(value, str):
        return value
    expected = "a string or an integer" if col.kind == "id" else "an integer"
    raise TypeError(f"expected {expected}, got {type(value).__name__} {json.dumps(value)[:40]}")


def read_jsonl(source: TableSource, spec: TableSpec, keep: bool = True) -> dict[str, list[Any]]:
    """Validate ``source`` against ``spec``; return its columns when ``keep``.

    With ``keep`` false only the validation runs (the Spark engine reads the
    rows itself) and the returned columns are empty.
    """
    path = source.files[0]
    columns: dict[str, list[Any]] = {col.name: [] for col in spec.columns}
    seen: dict[str, dict[Any, int]] = {name: {} for name in spec.unique}
    try:
        handle = path.open("r", encoding="utf-8")
    except OSError as exc:
        raise HistoryError(str(path), f"cannot open: {exc.strerror or exc}") from exc
    with handle:
        lineno = 0
        try:
            for lineno, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                row = _parse_line(path.name, line, lineno, source)
                _check_row(row, spec, lineno, source, columns if keep else None, seen)
        except UnicodeDecodeError as exc:
            raise HistoryError(f"{path}: line {lineno + 1}", f"not UTF-8 text ({exc.reason})") from exc
    return columns


def _parse_line(name: str, line: str, lineno: int, source: TableSource) -> dict[str, Any]:
    try:
        row = json.loads(line, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise HistoryError(
            f"{source.path}: line {lineno}", f"malformed JSON: {exc.msg} at column {exc.colno}"
        ) from exc
    except ValueError as exc:
        raise HistoryError(f"{source.path}: line {lineno}", f"malformed JSON: {exc}") from exc
    if not isinstance(row, dict):
        raise HistoryError(
            f"{source.path}: line {lineno}", f"expected a JSON object, got {type(row).__name__}"
        )
    return row


def _check_row(
    row: dict[str, Any],
    spec: TableSpec,
    lineno: int,
    source: TableSource,
    columns: dict[str, list[Any]] | None,
    seen: dict[str, dict[Any, int]],
) -> None:
    for col in spec.columns:
        value = row.get(col.name)
        if value is None:
            if not col.nullable:
                problem = "is null" if col.name in row else "is missing (a required column)"
                raise HistoryError(f"{source.path}: line {lineno}", f"column '{col.name}' {problem}")
        else:
            try:
                value = _coerce(col, value)
            except TypeError as exc:
                raise HistoryError(f"{source.path}: line {lineno}", f"column '{col.name}': {exc}") from None
            allowed = spec.domains.get(col.name)
            if allowed is not None and value not in allowed:
                raise HistoryError(
                    f"{source.path}: line {lineno}",
                    f"column '{col.name}': {value!r} is not one of {', '.join(allowed)}",
                )
            if col.name in seen:
                first = seen[col.name].setdefault(value, lineno)
                if first != lineno:
                    raise HistoryError(
                        f"{source.path}: line {lineno}",
                        f"column '{col.name}': duplicate value {value!r} (first on line {first})",
                    )
        if columns is not None:
            columns[col.name].append(value)
