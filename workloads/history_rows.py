"""The journal-to-table primitives every journal reader of the history builds on.

`workloads/history.py` (producers, readers, observers, the nemesis journal), `history_transformer.py` and
`history_stray.py` each turn one kind of journal into contract rows with these pieces: `Build` (the tables
being written and the summary of what went in), `field` (a line's field, or a `HistoryError` naming the file
and line), `Outcomes` (each op's one outcome from ``ack`` / ``outcome`` lines), `Transactions` (``txn_*``
lines as `transactions` rows) and `poll_rows` (a ``poll`` line as `reads` rows).

Must never: decide which journal a role has, or read a file itself (the modules above it do both).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Container, Iterator
from pathlib import Path
from typing import Any

from testbed.journal_names import KILL_CLIENT
from workloads.tables import TableWriter

Lines = Iterator[tuple[int, dict[str, Any]]]


class HistoryError(ValueError):
    """A journal that cannot become history rows; the message names the file and line."""


class Build:
    """The tables being written, and the summary of what went in."""

    def __init__(self, history_dir: Path) -> None:
        self.history_dir = history_dir
        # `transactions` stays empty unless a transactional producer ran (contract v2): an empty table is a history
        # without transactions, judged by the v1 rules alone; so does `commits` unless a group member committed
        # (contract v3: a history without a commits row has no group commits).
        self.tables = {name: TableWriter(history_dir, name) for name in ("writes", "reads", "processes",
                                                                       "observations", "transactions", "commits")}
        self.nemesis: TableWriter | None = None
        self.statuses: Counter[str] = Counter()
        self.phases: Counter[str] = Counter()
        self.journals = 0
        self.empty: list[str] = []
        self.torn = 0
        self.drains: dict[str, str] = {}
        self.unfinished: list[str] = []
        self.crashed: list[str] = []

    def nemesis_table(self) -> TableWriter:
        if self.nemesis is None:
            self.nemesis = TableWriter(self.history_dir, "nemesis")
        return self.nemesis

    def writers(self) -> list[TableWriter]:
        return [*self.tables.values(), *([self.nemesis] if self.nemesis is not None else [])]

    def client_killed(self, header: dict[str, Any], by: str) -> None:
        """An instance started after its supervisor killed the one before: a `kill-client` fault from the kill
        until this instance started (workloads/supervisor.py), if its process line says so."""
        if header.get("after_kill_ns") is None:
            return
        targets = json.dumps({"processes": [header["process"]]})
        detail = json.dumps({"instance": header.get("instance"), "by": by})
        for kind, t in (("start", header["after_kill_ns"]), ("stop", header["start_ns"])):
            self.nemesis_table().row(time_ns=t, type=kind, fault=KILL_CLIENT, targets=targets, detail=detail)


def field(path: Path, lineno: int, record: dict[str, Any], name: str) -> Any:
    try:
        return record[name]
    except KeyError:
        raise HistoryError(f"{path}:{lineno}: {record.get('kind')} line without {name!r}") from None


Outcome = tuple[str, str | None, int | None, int | None]  # status, error, offset, complete_ns
UNKNOWN: Outcome = ("info", None, None, None)  # invoked, but the process ended before its outcome


class Outcomes:
    """Each op's one outcome, from a producing journal's ``ack`` and ``outcome`` lines; an outcome for an op
    that `invoked` does not hold (`never`: "invoked" or "sent"), or a second one, is a HistoryError."""

    KINDS = ("ack", "outcome")

    def __init__(self, path: Path, invoked: Container[int], never: str) -> None:
        self.path, self.invoked, self.never = path, invoked, never
        self.outcomes: dict[int, Outcome] = {}

    def _settle(self, lineno: int, op: int, outcome: Outcome) -> None:
        if op not in self.invoked:
            raise HistoryError(f"{self.path}:{lineno}: outcome for op {op}, which was never {self.never}")
        if op in self.outcomes:
            raise HistoryError(f"{self.path}:{lineno}: a second outcome for op {op}")
        self.outcomes[op] = outcome

    def line(self, lineno: int, kind: str, rec: dict[str, Any]) -> None:
        if kind == "ack":
            t = field(self.path, lineno, rec, "t")
            ops = [int(digits) for digits in rec["op"].split(",")] if rec["op"] else []
            for op, offset in zip(ops, rec["offset"], strict=True):
                self._settle(lineno, op, ("ok", None, offset if offset is not None and offset >= 0 else None, t))
        else:
            op = field(self.path, lineno, rec, "op")
            self._settle(lineno, op, (rec["status"], rec.get("error"), None, rec.get("t")))

    def of(self, op: int) -> Outcome:
        return self.outcomes.get(op, UNKNOWN)


class Transactions:
    """A transactional producer's ``txn_begin`` / ``txn_end`` / ``txn_done`` lines, as `transactions` rows.

    A transaction begun and never ended (the process died) is `info` with null intent and end_ns; one whose
    end was asked for but whose outcome never came is `info` with its intent and end_ns."""

    KINDS = ("txn_begin", "txn_end", "txn_done")

    def __init__(self, path: Path, header: dict[str, Any]) -> None:
        self.path, self.header = path, header
        self.rows: dict[str, dict[str, Any]] = {}

    def _row(self, lineno: int, txn: str) -> dict[str, Any]:
        if txn not in self.rows:
            raise HistoryError(f"{self.path}:{lineno}: transaction {txn} was never begun")
        return self.rows[txn]

    def check_open(self, lineno: int, txn: str) -> None:
        if self._row(lineno, txn)["complete_ns"] is not None:
            raise HistoryError(f"{self.path}:{lineno}: a send in transaction {txn}, which had ended")

    def line(self, lineno: int, kind: str, rec: dict[str, Any]) -> None:
        txn, t = field(self.path, lineno, rec, "txn"), field(self.path, lineno, rec, "t")
        if kind == "txn_begin":
            if txn in self.rows:
                raise HistoryError(f"{self.path}:{lineno}: transaction {txn} begun twice")
            self.rows[txn] = {"txn": txn, "intent": None, "status": "info", "error": None, "begin_ns": t,
                              "end_ns": None, "complete_ns": None, "group": None, "consumed": None}
        elif kind == "txn_end":  # a transformer's also names the group and the input offsets it committed
            consumed = rec.get("consumed")
            self._row(lineno, txn).update(intent=field(self.path, lineno, rec, "intent"), end_ns=t,
                                          group=rec.get("group"),
                                          consumed=None if consumed is None else json.dumps(consumed))
        else:
            row = self._row(lineno, txn)
            if row["complete_ns"] is not None:
                raise HistoryError(f"{self.path}:{lineno}: a second outcome for transaction {txn}")
            row.update(status=field(self.path, lineno, rec, "status"), error=rec.get("error"), complete_ns=t)

    def write(self, table: TableWriter) -> None:
        for row in self.rows.values():
            table.row(process=self.header["process"], az=self.header.get("az"), **row)


def poll_rows(path: Path, lineno: int, rec: dict[str, Any], process: str, topic: str, az: str | None,
               build: Build) -> None:
    seq, records = field(path, lineno, rec, "seq"), rec["records"]
    if not records:
        return
    partitions, offsets, keys, values, epochs = (list(column) for column in zip(*records, strict=True))
    build.phases[rec["phase"]] += len(records)
    build.tables["reads"].rows(len(records), process=process, seq=list(range(seq, seq + len(records))),
               phase=rec["phase"], topic=topic, partition=partitions, offset=offsets, key=keys,
               value=values, leader_epoch=epochs, poll_ns=rec["t"], az=az, group=rec.get("group"))
