"""Hand-written histories for the checker tests: builders and a writer.

Rows are plain dicts in the contract's columns; `Case` bundles a history
with the counts and errors worked out by hand. `namespaced` renames every
process, topic and value of a case so several cases can share one history
without touching each other (their counts then add up).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from checkers import check
from checkers.anomalies import ANOMALIES
from checkers.schema import TABLES, read_type

Row = dict[str, Any]
T0 = 1_700_000_000_000_000_000


def w(
    value: str,
    op_id: int,
    offset: int | None = None,
    status: str = "ok",
    process: str = "p",
    partition: int | None = 0,
    topic: str = "t",
    error: str | None = None,
    complete: bool = True,
) -> Row:
    """One `writes` row; times derive from op_id (invoke = T0 + op_id ms, complete 5 ms later)."""
    invoke = T0 + op_id * 1_000_000
    return {
        "process": process,
        "op_id": op_id,
        "topic": topic,
        "key": None,
        "value": value,
        "partition": partition,
        "offset": offset,
        "status": status,
        "error": error
        if error or status == "ok"
        else ("TIMEOUT" if status == "info" else "NOT_ENOUGH_REPLICAS"),
        "invoke_ns": invoke,
        "complete_ns": invoke + 5_000_000 if complete else None,
        "az": "az1",
    }


def r(
    value: str,
    offset: int,
    phase: str = "final",
    process: str | None = None,
    partition: int = 0,
    topic: str = "t",
    group: str | None = None,
    poll_ms: int | None = None,
) -> Row:
    """One `reads` row; seq and poll time are filled in by `reads` in list order."""
    return {
        "process": process or ("drain" if phase == "final" else "c"),
        "seq": None,
        "phase": phase,
        "topic": topic,
        "partition": partition,
        "offset": offset,
        "key": None,
        "value": value,
        "leader_epoch": None,
        "poll_ns": None if poll_ms is None else T0 + poll_ms * 1_000_000,
        "az": "az1",
        "group": group,
    }


def reads(*rows: Row) -> list[Row]:
    """Number each process's rows in list order (seq) and give each a poll time."""
    seqs: dict[str, int] = defaultdict(int)
    out = []
    for i, row in enumerate(rows):
        row = dict(row)
        seqs[row["process"]] += 1
        row["seq"] = seqs[row["process"]]
        if row["poll_ns"] is None:
            row["poll_ns"] = T0 + 1_000_000_000 + i * 1_000_000 + (10**9 if row["phase"] == "final" else 0)
        out.append(row)
    return out


def proc(process: str, role: str = "producer", **config: Any) -> Row:
    """One `processes` row; config keys use underscores for dots (enable_idempotence)."""
    settings = {k.replace("_", "."): v for k, v in config.items()}
    return {"process": process, "role": role, "az": "az1", "config": json.dumps(settings)}


@dataclass
class Case:
    """A hand-worked history and the counts and errors it must give."""

    writes: list[Row]
    reads: list[Row]
    counts: dict[str, int]
    errors: dict[str, int]
    processes: list[Row] | None = None
    extra: dict[str, list[Row]] = field(default_factory=dict)

    def tables(self) -> dict[str, list[Row]]:
        out = {"writes": self.writes, "reads": self.reads, **self.extra}
        if self.processes is not None:
            out["processes"] = self.processes
        return out

    def expected_counts(self) -> dict[str, int]:
        return {name: self.counts.get(name, 0) for name in ANOMALIES}


def namespaced(prefix: str, tables: dict[str, list[Row]]) -> dict[str, list[Row]]:
    """The same history with every process, topic, value and transaction prefixed."""
    out: dict[str, list[Row]] = {}
    for name, rows in tables.items():
        renamed = []
        for row in rows:
            row = dict(row)
            for col in ("process", "topic", "value", "txn", "source", "group"):
                if row.get(col) is not None:
                    row[col] = f"{prefix}/{row[col]}"
            if row.get("consumed") is not None:  # transactions: the topics of the offsets it committed
                row["consumed"] = json.dumps([{**c, "topic": f"{prefix}/{c['topic']}"}
                                              for c in json.loads(row["consumed"])])
            renamed.append(row)
        out[name] = renamed
    return out


def merge(histories: list[dict[str, list[Row]]]) -> dict[str, list[Row]]:
    """Concatenate tables of several histories (processes table kept where any has one)."""
    out: dict[str, list[Row]] = defaultdict(list)
    for tables in histories:
        for name, rows in tables.items():
            out[name].extend(rows)
    return dict(out)


def write(directory: Path, tables: dict[str, list[Row]], fmt: str = "jsonl") -> Path:
    """Write row lists as `<table>.jsonl` or `<table>.parquet` (the checker's canonical types, integers int64)."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, rows in tables.items():
        if fmt == "jsonl":
            with (directory / f"{name}.jsonl").open("w") as handle:
                handle.writelines(json.dumps(row) + "\n" for row in rows)
        else:
            arrays = {c.name: pa.array([row.get(c.name) for row in rows], type=read_type(c)) for c in TABLES[name].columns}
            pq.write_table(pa.table(arrays), directory / f"{name}.parquet")
    return directory


def without_engine(verdict: dict[str, Any]) -> dict[str, Any]:
    """A verdict less what names its engine (`engine`, `engine_reason`): what two engines must agree on."""
    return {k: v for k, v in verdict.items() if k not in ("engine", "engine_reason")}


def assert_spark_judges_cases_together(tmp_path: Path, cases: dict[str, Case], fmt: str = "jsonl") -> None:
    """Every case in one namespaced history: Spark counts what the cases add up to, and pandas agrees."""
    history = write(tmp_path, merge([namespaced(n, c.tables()) for n, c in cases.items()]), fmt)
    counts: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    for case in cases.values():
        counts.update(case.counts)
        errors.update(case.errors)
    verdict = check(history, engine="spark")
    assert verdict["counts"] == {name: counts[name] for name in ANOMALIES}
    assert verdict["errors"] == {name: errors[name] for name in ANOMALIES if errors[name]}
    assert without_engine(verdict) == without_engine(check(history, engine="pandas"))
