"""The nemesis journal: one row of the history's `nemesis` table per fault event, written as it happens.

Rows follow spec/history.md: `time_ns`, `type` (`start`, `stop`, `info`),
`fault`, `targets` (a JSON string) and `detail` (here also a JSON object
string, so tools can read it and people can too). Each row is appended and
flushed before the call that caused it returns: a harness that dies right
after a fault still leaves the fault on record.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any, Literal

EventType = Literal["start", "stop", "info"]


class NemesisJournal:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - lives as long as the journal
        self._lock = threading.Lock()

    def write(self, type_: EventType, fault: str, targets: dict[str, Any], detail: dict[str, Any],
              time_ns: int | None = None) -> dict[str, Any]:
        row = {
            "time_ns": time_ns if time_ns is not None else time.time_ns(),
            "type": type_,
            "fault": fault,
            "targets": json.dumps(targets, sort_keys=True),
            "detail": json.dumps(detail, sort_keys=True, default=str),
        }
        line = json.dumps(row) + "\n"
        with self._lock:
            self._file.write(line)
            self._file.flush()
        return row

    def close(self) -> None:
        with self._lock:
            self._file.close()


def read_journal(path: Path) -> list[dict[str, Any]]:
    """The rows of a journal, `targets` and `detail` decoded (for tests and reports)."""
    rows = []
    for line in path.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            row["targets"] = json.loads(row["targets"])
            row["detail"] = json.loads(row["detail"])
            rows.append(row)
    return rows


def unstopped(path: Path) -> list[dict[str, Any]]:
    """The `start` rows of a journal with no `stop` row of the same fault name after them (a dead harness's faults)."""
    if not path.exists():
        return []
    open_: dict[str, dict[str, Any]] = {}
    for row in read_journal(path):
        name = row["detail"].get("name")
        if row["type"] == "start" and name is not None:
            open_[name] = row
        elif row["type"] == "stop":
            open_.pop(name, None)
    return list(open_.values())
