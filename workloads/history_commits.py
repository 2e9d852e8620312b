"""A group consumer's commits and the drain's committed offsets as `commits` rows (contract v3).

A group member journals each synchronous commit twice (workloads/consumer.py): ``commit_begin`` (id,
t, offsets [[partition, offset]]) before it asks, and ``commit`` (id, t, done, mode, error, offsets
[[partition, offset, error]]) once the answer came; an automatic commit is one ``commit`` line (mode
``auto``, no id) from librdkafka's commit callback. Each partition of each becomes one row, its status
from `workloads.classify_commit`; a commit begun whose outcome never came (the process was killed in it)
is `info` with a null complete_ns. The drain's ``committed`` lines (group, t, done, offsets [[partition,
offset or null]]) become the `final` rows. ``commit`` lines without ``done`` are the journals of
faultline before contract v3 and are skipped, so an old run's history is rebuilt as it was.

Must never: make a row from a journal line that is not a v3 commit line (a history whose journals hold
none keeps an empty `commits` table: no group commits, its v1 and v2 verdicts unchanged).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from checkers.schema import COMMIT_KINDS
from workloads.classify_commit import classify_commit
from workloads.history_rows import Build, HistoryError, field

# A commit line's mode is its rows' `commits.kind`: every kind but the drain's `final`.
MODES = tuple(kind for kind in COMMIT_KINDS if kind != "final")


class Commits:
    """One journal's commit lines, as `commits` rows once the journal has been read."""

    KINDS = ("commit_begin", "commit", "committed")

    def __init__(self, path: Path, header: dict[str, Any], build: Build) -> None:
        self.path, self.header, self.build = path, header, build
        self.pending: dict[int, dict[str, Any]] = {}  # commit id -> its commit_begin line
        self.settled: set[int] = set()

    def _rows(self, group: str, kind: str, rows: list[dict[str, Any]]) -> None:
        table = self.build.tables["commits"]
        for row in rows:
            table.row(process=self.header["process"], group=group, kind=kind, topic=self.header["topic"],
                      az=self.header.get("az"), **row)

    def line(self, lineno: int, kind: str, rec: dict[str, Any]) -> None:
        if kind == "committed":
            t, done = field(self.path, lineno, rec, "t"), field(self.path, lineno, rec, "done")
            self._rows(field(self.path, lineno, rec, "group"), "final",
                       [{"partition": p, "offset": o, "status": "ok", "invoke_ns": t, "complete_ns": done}
                        for p, o in field(self.path, lineno, rec, "offsets")])
            return
        group = field(self.path, 1, self.header.get("config") or {}, "group.id")
        if kind == "commit_begin":
            cid = field(self.path, lineno, rec, "id")
            if cid in self.pending:
                raise HistoryError(f"{self.path}:{lineno}: commit {cid} begun twice")
            self.pending[cid] = rec
            return
        if "done" not in rec:  # a journal from before contract v3: its commits were never part of the history
            return
        cid = rec.get("id")
        if cid is not None:
            if cid not in self.pending or cid in self.settled:
                raise HistoryError(f"{self.path}:{lineno}: an outcome for commit {cid}, "
                                   f"{'settled already' if cid in self.settled else 'never begun'}")
            self.settled.add(cid)
        mode = field(self.path, lineno, rec, "mode")
        if mode not in MODES:
            raise HistoryError(f"{self.path}:{lineno}: commit mode {mode!r} is none of {', '.join(MODES)}")
        rows = []
        for partition, offset, error in field(self.path, lineno, rec, "offsets"):
            status, name = classify_commit(error)
            rows.append({"partition": partition, "offset": offset, "status": status, "error": name,
                         "invoke_ns": rec["t"], "complete_ns": rec["done"]})
        self._rows(group, mode, rows)

    def finish(self) -> None:
        """Commits begun whose outcome never came: `info`, complete_ns null (the process ended first)."""
        group = (self.header.get("config") or {}).get("group.id")
        for cid, rec in sorted(self.pending.items()):
            if cid not in self.settled:
                self._rows(str(group), rec.get("mode", "sync"),
                           [{"partition": p, "offset": o, "status": "info", "invoke_ns": rec["t"]}
                            for p, o in rec["offsets"]])
