"""Turn a run's journals into the contract tables of spec/history.md, as Parquet files.

`build_history(journal_dir, history_dir, nemesis_journal=None)` reads every
``*.jsonl`` journal in `journal_dir` (``nemesis.jsonl`` holds contract rows
already and is converted as is) and writes ``writes``, ``reads``,
``processes``, ``observations``, ``transactions`` and ``commits`` (always, possibly empty) and ``nemesis``
(when a nemesis journal exists) into `history_dir`, each atomically. It works
on the journals of a killed run: a torn last line is skipped, a send with an
invoke but no outcome becomes `info` with a null complete_ns, a journal with
no lines at all (its process died before writing its first) or that starts
with a ``crash`` line is skipped and counted. Any other unreadable line
raises `HistoryError` naming the file and line (and no table changes), and
so does an op with a second outcome: the producer gives each send exactly
one, even across the librdkafka instances a fatal error makes it replace,
so two would mean a producer bug, not a history to pick from.
Tables are streamed in row groups, so memory stays bounded by the largest
producer journal. Observers are not client processes: they get no
`processes` row. A transactional producer's ``txn_*`` lines become `transactions` rows and
its sends' `txn` (contract v2); a group consumer's commits and the drain's committed offsets become
`commits` rows, and its process line's ``commit`` `processes.commit` (contract v3, history_commits.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from testbed.journal_names import STRAY_PRODUCE
from testbed.runfolder import NEMESIS_JOURNAL  # the run folder owns its names
from workloads.history_commits import Commits
from workloads.history_rows import Build, HistoryError, Lines, Outcomes, Transactions, field, poll_rows
from workloads.history_stray import stray_rows
from workloads.history_transformer import transformer_rows
from workloads.journal import JournalError, JournalReader
from workloads.values import ValuePlan


def _producer(path: Path, header: dict[str, Any], lines: Lines, build: Build) -> None:
    invoked: dict[int, int] = {}  # op -> invoke_ns; value, key and partition follow from the plan
    outcomes = Outcomes(path, invoked, "invoked")
    plan = ValuePlan.from_json(field(path, 1, header, "values"))
    txn_of: dict[int, str] = {}  # op -> its transaction (transactional producers only)
    txns = Transactions(path, header)
    for lineno, rec in lines:
        kind = rec.get("kind")
        if kind == "invoke":
            first, t = field(path, lineno, rec, "op"), field(path, lineno, rec, "t")
            ops_of = range(first, first + field(path, lineno, rec, "n"))
            invoked.update(dict.fromkeys(ops_of, t))
            if rec.get("txn") is not None:
                txns.check_open(lineno, rec["txn"])
                txn_of.update(dict.fromkeys(ops_of, str(rec["txn"])))
        elif kind in Transactions.KINDS:
            txns.line(lineno, kind, rec)
        elif kind in Outcomes.KINDS:
            outcomes.line(lineno, kind, rec)
    ops = sorted(invoked)
    values = [plan.value(op) for op in ops]
    settled = [outcomes.of(op) for op in ops]
    statuses = [o[0] for o in settled]
    build.statuses.update(statuses)
    build.tables["writes"].rows(len(ops), process=header["process"], op_id=ops, topic=header["topic"],
               key=None if plan.key == "none" else [plan.key_of(op, v) for op, v in zip(ops, values, strict=True)],
               value=values, partition=[plan.partition(op) for op in ops],
               offset=[o[2] for o in settled], status=statuses, error=[o[1] for o in settled],
               invoke_ns=[invoked[op] for op in ops], complete_ns=[o[3] for o in settled], az=header.get("az"),
               txn=[txn_of.get(op) for op in ops] if txn_of else None)
    txns.write(build.tables["transactions"])


def _reader(path: Path, header: dict[str, Any], lines: Lines, build: Build) -> None:
    process, topic, az = header["process"], header["topic"], header.get("az")
    commits = Commits(path, header, build)
    for lineno, rec in lines:
        kind = rec.get("kind")
        if kind == "poll":
            poll_rows(path, lineno, rec, process, topic, az, build)
        elif kind in Commits.KINDS:
            commits.line(lineno, kind, rec)
        elif kind == "drain_end":
            build.drains[process] = "complete" if rec.get("complete") else "incomplete"
    commits.finish()
    build.client_killed(header, "the consumer's supervisor")
    if header["role"] == "drain":
        build.drains.setdefault(process, "unfinished")


def _observer(path: Path, header: dict[str, Any], lines: Lines, build: Build) -> None:
    for _lineno, rec in lines:
        if rec.get("kind") != "observation":
            continue
        for topic, partition, leader, isr, epoch, _error, *ends in rec["partitions"]:
            high, stable = ends if ends else (None, None)  # older journals hold no end offsets
            build.tables["observations"].row(time_ns=rec["t"], observer=rec["observer"], topic=topic,
                      partition=partition, leader=leader, isr=json.dumps(isr), leader_epoch=epoch,
                      controller=rec.get("controller"), high_watermark=high, last_stable_offset=stable)


_ROLES = {"producer": _producer, "consumer": _reader, "drain": _reader, "observer": _observer,
          "transformer": transformer_rows}
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


def _add_journal(path: Path, build: Build) -> None:
    reader = JournalReader(path)
    lines = iter(reader)
    try:
        first = next(lines, None)
        if first is None:
            build.empty.append(path.name)
        elif first[1].get("kind") == "crash":  # died before it could say who it was
            build.crashed.append(path.stem)
        else:
            lineno, header = first
            if header.get("kind") != "process" or header.get("role") not in _ROLES:
                raise HistoryError(f"{path}:{lineno}: the first line must be a process line with a known role")
            build.journals += 1
            ends: set[str] = set()
            crashes: set[str] = set()
            _ROLES[header["role"]](path, header, _watch(lines, ends, crashes), build)
            if header["role"] != "observer":
                build.tables["processes"].row(process=header["process"], role=header["role"], az=header.get("az"),
                          config=json.dumps(header.get("config") or {}, sort_keys=True), commit=header.get("commit"))
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


def _add_nemesis(path: Path, build: Build) -> None:
    table = build.nemesis_table()
    reader = JournalReader(path)
    try:
        for lineno, rec in reader:
            table.row(time_ns=field(path, lineno, rec, "time_ns"), type=field(path, lineno, rec, "type"),
                      fault=rec.get("fault"), targets=_json_text(rec.get("targets")),
                      detail=_json_text(rec.get("detail")))
            if rec.get("type") == "start" and rec.get("fault") == STRAY_PRODUCE:
                stray_rows(path, lineno, rec, build)
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
    build = Build(history_dir)
    paths = sorted(journal_dir.glob("*.jsonl"))
    nemesis = [p for p in paths if p.name == NEMESIS_JOURNAL]
    if nemesis_journal is not None and nemesis_journal.exists() \
            and not any(p.resolve() == nemesis_journal.resolve() for p in nemesis):
        nemesis.append(nemesis_journal)
    try:
        for path in paths:
            if path.name != NEMESIS_JOURNAL:
                _add_journal(path, build)
        for path in nemesis:
            _add_nemesis(path, build)
        written = {writer.table: writer.commit() for writer in build.writers()}
    except BaseException:
        for writer in build.writers():
            writer.abort()
        raise
    counts = {writer.table: writer.count for writer in build.writers()}
    return {
        "journals": build.journals, "writes": counts["writes"],
        "ok": build.statuses["ok"], "fail": build.statuses["fail"], "info": build.statuses["info"],
        "reads": counts["reads"], "live_reads": build.phases["live"], "final_reads": build.phases["final"],
        "processes": counts["processes"], "observations": counts["observations"],
        "nemesis": counts.get("nemesis", 0), "commits": counts["commits"],
        "drains": dict(sorted(build.drains.items())), "unfinished": sorted(build.unfinished),
        "crashed": sorted(build.crashed), "empty": build.empty, "torn": build.torn,
        "tables": {name: str(path) for name, path in sorted(written.items())},
    }
