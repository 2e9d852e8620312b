"""One finished run folder, loaded for reporting: spec, verdict and history tables.

Reads only files (DESIGN.md's results layout and spec/history.md's tables);
never imports the workloads, the nemesis or the checker's engines. It is
lenient where the checker is strict: a table that is missing or unreadable
becomes an empty table plus a line in ``problems``, so a report of a broken
run still shows what there is. Integer columns keep full nanosecond precision (pandas
``Int64``), never float.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from checkers.schema import TABLES
from report.errors import ReportError
from testbed.runfolder import RunFolder

Kind = Literal["str", "int", "json"]

# How the report holds each kind of contract column (checkers.schema): integers exact, JSON values as their text.
_KINDS: dict[str, Kind] = {"string": "str", "id": "str", "int": "int", "json": "json", "any": "json"}
# Contract columns the report never shows, left unread (the big tables' cost).
_UNUSED = {("reads", "key"), ("reads", "leader_epoch"), ("writes", "source")}
# The columns the report uses, per table (the history contract's, checkers.schema); others are ignored.
COLUMNS: dict[str, dict[str, Kind]] = {
    name: {c.name: _KINDS[c.kind] for c in spec.columns if (name, c.name) not in _UNUSED}
    for name, spec in TABLES.items()
}


@dataclass
class Run:
    """A run folder's contents as the report needs them."""

    run_dir: Path
    spec: dict[str, Any]
    verdict: dict[str, Any] | None
    tables: dict[str, pd.DataFrame]
    problems: list[str] = field(default_factory=list)

    def table(self, name: str) -> pd.DataFrame:
        return self.tables[name]

    @property
    def configuration(self) -> str | None:
        """The scenario configuration this run is (spec.yaml's ``configuration``), if any."""
        value = self.spec.get("configuration")
        return str(value) if isinstance(value, str | int) and str(value) else None

    @property
    def scenario(self) -> str:
        """The scenario id: the spec's ``name``, else the folder above the run's timestamp folder."""
        for key in ("name", "scenario"):
            if isinstance(self.spec.get(key), str) and self.spec[key]:
                return str(self.spec[key])
        return self._timestamp_dir.parent.name or "run"

    @property
    def run_id(self) -> str:
        """The run's timestamp folder (results/<scenario>/<timestamp>[/<configuration>])."""
        return self._timestamp_dir.name

    @property
    def _timestamp_dir(self) -> Path:
        here = self.run_dir.resolve()
        return here.parent if self.configuration and here.name == self.configuration else here

    def span_ns(self) -> tuple[int, int] | None:
        """(first, last) time in the history (sends, polls, faults, observations), or None if it is empty."""
        times: list[int] = []
        for name, cols in (("writes", ("invoke_ns", "complete_ns")), ("reads", ("poll_ns",)),
                           ("nemesis", ("time_ns",)), ("observations", ("time_ns",))):
            frame = self.tables[name]
            for col in cols:
                series = frame[col].dropna()
                if len(series):
                    times += [int(series.min()), int(series.max())]
        return (min(times), max(times)) if times else None


def load_run(run_dir: str | Path, tables: Iterable[str] | None = None) -> Run:
    """Load ``run_dir``; only a missing folder raises (ReportError).

    ``tables`` names the history tables to read (default: all); the others are left empty.
    """
    root = Path(run_dir)
    if not root.is_dir():
        raise ReportError(f"{root}: not a run folder")
    problems: list[str] = []
    folder = RunFolder(root)
    spec = _load_spec(folder.spec, problems)
    verdict = load_json_object(folder.verdict, problems)
    wanted = set(COLUMNS if tables is None else tables)
    loaded = {name: _load_table(folder.history_dir, name, problems) if name in wanted else _frame([], COLUMNS[name])
              for name in COLUMNS}
    return Run(root, spec, verdict, loaded, problems)


def _load_spec(path: Path, problems: list[str]) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        problems.append(f"{path.name}: unreadable ({exc.__class__.__name__})")
        return {}
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        problems.append(f"{path.name}: not a mapping")
        return {}
    return loaded


def load_json_object(path: Path, problems: list[str]) -> dict[str, Any] | None:
    """A run file holding one JSON object; None if absent (not a problem) or unreadable (a line in `problems`)."""
    if not path.is_file():  # not a reading problem: the section that shows it says there is none
        return None
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        problems.append(f"{path.name}: unreadable ({exc})")
        return None
    if not isinstance(loaded, dict):
        problems.append(f"{path.name}: not a JSON object")
        return None
    return loaded


def _load_table(history: Path, name: str, problems: list[str]) -> pd.DataFrame:
    parquet, jsonl = history / f"{name}.parquet", history / f"{name}.jsonl"
    try:
        if parquet.exists():
            return _parquet_frame(parquet, COLUMNS[name])
        if jsonl.is_file():
            return _frame(_jsonl_rows(jsonl, problems), COLUMNS[name])
        return _frame([], COLUMNS[name])
    except (OSError, ValueError, TypeError, pa.ArrowException) as exc:
        problems.append(f"history/{name}: unreadable ({exc})")
        return _frame([], COLUMNS[name])


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
    """The objects of a JSONL file. A torn last line (a crash mid-append) is left out and noted."""
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


def parse_json(text: Any) -> Any:
    """A json column's cell as a Python value (text that is not JSON stays text)."""
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text
