"""Turn a run's journals into the contract tables of spec/history.md, as Parquet files.

`build_history(journal_dir, history_dir, nemesis_journal=None)` reads every
``*.jsonl`` journal in `journal_dir` (``nemesis.jsonl`` holds contract rows
already and is converted as is) and writes ``writes``, ``reads``,
``processes`` and ``observations`` (always, possibly empty) and ``nemesis``
(when a nemesis journal exists) into `history_dir`, each atomically. It works
on the journals of a killed run: a torn last line is skipped, a send with an
invoke but no outcome becomes `info` with a null complete_ns, a journal with
no lines at all (its process died before writing its first) is skipped. Any
other unreadable line raises `HistoryError` naming the file and line.
Observers are not client processes: they get no `processes` row.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from workloads.journal import JournalError, JournalReader
from workloads.tables import empty_columns, write_table
from workloads.values import ValuePlan

NEMESIS_JOURNAL = "nemesis.jsonl"
Lines = Iterator[tuple[int, dict[str, Any]]]


class HistoryError(ValueError):
    """A journal that cannot become history rows; the message names the file and line."""


class _Build:
    """The tables being filled, column by column, and the summary of what went in."""

    def __init__(self) -> None:
        self.tables = {name: empty_columns(name) for name in ("writes", "reads", "processes", "observations")}
        self.nemesis: dict[str, list[Any]] | None = None
        self.journals = 0
        self.empty: list[str] = []
        self.torn = 0
        self.drains: dict[str, str] = {}
        self.unfinished: list[str] = []
        self.crashed: list[str] = []

    def row(self, table: str, **values: Any) -> None:
        columns = self.tables[table]
        for name, column in columns.items():
            column.append(values.get(name))


def _field(path: Path, lineno: int, record: dict[str, Any], name: str) -> Any:
    try:
        return record[name]
    except KeyError:
        raise HistoryError(f"{path}:{lineno}: {record.get('kind')} line without {name!r}") from None


def _producer(path: Path, header: dict[str, Any], lines: Lines, build: _Build) -> None:
    invoked: dict[int, tuple[int, int | None, str | None, str]] = {}
    outcomes: dict[int, tuple[str, str | None, int | None, int | None]] = {}

    def settle(lineno: int, op: int, outcome: tuple[str, str | None, int | None, int | None]) -> None:
        if op not in invoked:
            raise HistoryError(f"{path}:{lineno}: outcome for op {op}, which was never invoked")
        if op in outcomes:
            raise HistoryError(f"{path}:{lineno}: a second outcome for op {op}")
        outcomes[op] = outcome

    plan = ValuePlan.from_json(_field(path, 1, header, "values"))
    for lineno, rec in lines:
        kind = rec.get("kind")
        if kind == "invoke":
            first, t = _field(path, lineno, rec, "op"), _field(path, lineno, rec, "t")
            for op in range(first, first + _field(path, lineno, rec, "n")):
                value = plan.value(op)
                invoked[op] = (t, plan.partition(op), plan.key_of(op, value), value)
        elif kind == "ack":
            t = _field(path, lineno, rec, "t")
            ops = [int(digits) for digits in rec["op"].split(",")] if rec["op"] else []
            for op, offset in zip(ops, rec["offset"], strict=True):
                settle(lineno, op, ("ok", None, offset if offset is not None and offset >= 0 else None, t))
        elif kind == "outcome":
            op = _field(path, lineno, rec, "op")
            settle(lineno, op, (rec["status"], rec.get("error"), None, rec.get("t")))
    process, topic, az = header["process"], header["topic"], header.get("az")
    for op in sorted(invoked):
        invoke_ns, partition, key, value = invoked[op]
        status, error, offset, complete_ns = outcomes.get(op, ("info", None, None, None))
        build.row("writes", process=process, op_id=op, topic=topic, key=key, value=value, partition=partition,
                  offset=offset, status=status, error=error, invoke_ns=invoke_ns, complete_ns=complete_ns, az=az)


def _reader(path: Path, header: dict[str, Any], lines: Lines, build: _Build) -> None:
    process, topic, az = header["process"], header["topic"], header.get("az")
    for lineno, rec in lines:
        kind = rec.get("kind")
        if kind == "poll":
            seq, t, phase = _field(path, lineno, rec, "seq"), rec["t"], rec["phase"]
            group = rec.get("group")
            for i, (partition, offset, key, value, epoch) in enumerate(rec["records"]):
                build.row("reads", process=process, seq=seq + i, phase=phase, topic=topic, partition=partition,
                          offset=offset, key=key, value=value, leader_epoch=epoch, poll_ns=t, az=az, group=group)
        elif kind == "drain_end":
            build.drains[process] = "complete" if rec.get("complete") else "incomplete"
    if header["role"] == "drain":
        build.drains.setdefault(process, "unfinished")


def _observer(path: Path, header: dict[str, Any], lines: Lines, build: _Build) -> None:
    for _lineno, rec in lines:
        if rec.get("kind") != "observation":
            continue
        for topic, partition, leader, isr, epoch, _error in rec["partitions"]:
            build.row("observations", time_ns=rec["t"], observer=rec["observer"], topic=topic,
                      partition=partition, leader=leader, isr=json.dumps(isr), leader_epoch=epoch,
                      controller=rec.get("controller"))


_ROLES = {"producer": _producer, "consumer": _reader, "drain": _reader, "observer": _observer}
_ENDINGS = {"end", "drain_end"}


def _watch(lines: Lines, ends: set[str], crashes: set[str]) -> Lines:
    """Pass lines through, noting ending and crash lines on the way."""
    for lineno, rec in lines:
        kind = rec.get("kind")
        if kind in _ENDINGS:
            ends.add(kind)
        elif kind == "crash":
            crashes.add(str(rec.get("error")))
        yield lineno, rec


def _add_journal(path: Path, build: _Build) -> None:
    reader = JournalReader(path)
    lines = iter(reader)
    try:
        first = next(lines, None)
        if first is None:
            build.empty.append(path.name)
        else:
            lineno, header = first
            if header.get("kind") != "process" or header.get("role") not in _ROLES:
                raise HistoryError(f"{path}:{lineno}: the first line must be a process line with a known role")
            build.journals += 1
            ends: set[str] = set()
            crashes: set[str] = set()
            _ROLES[header["role"]](path, header, _watch(lines, ends, crashes), build)
            if header["role"] != "observer":
                build.row("processes", process=header["process"], role=header["role"], az=header.get("az"),
                          config=json.dumps(header.get("config") or {}, sort_keys=True))
            if not ends:
                build.unfinished.append(header["process"])
            if crashes:
                build.crashed.append(header["process"])
    except HistoryError:
        raise
    except JournalError as exc:
        raise HistoryError(str(exc)) from exc
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise HistoryError(f"{path}: malformed journal line: {type(exc).__name__}: {exc}") from exc
    build.torn += int(reader.torn_tail)


def _json_text(value: Any) -> str | None:
    return value if value is None or isinstance(value, str) else json.dumps(value, sort_keys=True)


def _add_nemesis(path: Path, build: _Build) -> None:
    columns = build.nemesis if build.nemesis is not None else empty_columns("nemesis")
    build.nemesis = columns
    reader = JournalReader(path)
    try:
        for lineno, rec in reader:
            row = {"time_ns": _field(path, lineno, rec, "time_ns"), "type": _field(path, lineno, rec, "type"),
                   "fault": rec.get("fault"), "targets": _json_text(rec.get("targets")),
                   "detail": _json_text(rec.get("detail"))}
            for name, column in columns.items():
                column.append(row[name])
    except JournalError as exc:
        raise HistoryError(str(exc)) from exc
    build.torn += int(reader.torn_tail)


def build_history(journal_dir: Path, history_dir: Path, nemesis_journal: Path | None = None) -> dict[str, Any]:
    """Write the contract tables for every journal in `journal_dir`; return a summary of what they hold.

    The summary: row counts per table and per write status, `drains` (process
    -> complete | incomplete | unfinished), `unfinished` (processes whose
    journal has no end line: killed or still running), `crashed`, `empty`
    journals skipped, `torn` last lines skipped, and the written `tables`.
    """
    build = _Build()
    paths = sorted(journal_dir.glob("*.jsonl"))
    nemesis = [p for p in paths if p.name == NEMESIS_JOURNAL]
    if nemesis_journal is not None and nemesis_journal.exists() \
            and not any(p.resolve() == nemesis_journal.resolve() for p in nemesis):
        nemesis.append(nemesis_journal)
    for path in paths:
        if path.name != NEMESIS_JOURNAL:
            _add_journal(path, build)
    for path in nemesis:
        _add_nemesis(path, build)
    written = {name: write_table(history_dir, name, columns) for name, columns in build.tables.items()}
    if build.nemesis is not None:
        written["nemesis"] = write_table(history_dir, "nemesis", build.nemesis)
    statuses = Counter(build.tables["writes"]["status"])
    phases = Counter(build.tables["reads"]["phase"])
    return {
        "journals": build.journals, "writes": len(build.tables["writes"]["op_id"]),
        "ok": statuses["ok"], "fail": statuses["fail"], "info": statuses["info"],
        "reads": len(build.tables["reads"]["seq"]), "live_reads": phases["live"], "final_reads": phases["final"],
        "processes": len(build.tables["processes"]["process"]),
        "observations": len(build.tables["observations"]["time_ns"]),
        "nemesis": len(build.nemesis["time_ns"]) if build.nemesis is not None else 0,
        "drains": dict(sorted(build.drains.items())), "unfinished": sorted(build.unfinished),
        "crashed": sorted(build.crashed), "empty": build.empty, "torn": build.torn,
        "tables": {name: str(path) for name, path in sorted(written.items())},
    }
