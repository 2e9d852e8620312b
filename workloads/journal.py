"""Each workload process's append-only JSONL journal: cheap to write, readable after a SIGKILL.

Writing: lines are kept in memory until `flush`, which hands them to the
kernel in one write() (so a killed process loses only what it had not
flushed, and a SIGKILL keeps everything flushed: the page cache survives the
process). A background thread fsyncs at most every `fsync_interval_s` while
anything is unsynced, so a machine crash loses at most that long. There is no
per-record fsync. A journal file belongs to one process incarnation: opening
an existing file is refused, so op ids and seqs never restart inside a file.

Reading: `JournalReader` yields every line as a dict. A last line that is
torn (no newline, or not valid JSON) is what a killed writer leaves: it is
skipped and counted. Any other bad line is corruption and raises
`JournalError` naming the file and line.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol


class JournalError(ValueError):
    """A journal line that cannot be read, other than a torn last line."""


class JournalSink(Protocol):
    """Where a workload records what it does; `enabled` is false for the benchmark's null journal."""

    enabled: bool

    def append(self, record: dict[str, Any]) -> None:
        """Queue one JSON object as a line; nothing reaches the file before `flush`."""

    def append_line(self, line: str) -> None:
        """Queue one line that is already the JSON text of an object (no newline)."""

    def flush(self) -> None:
        """Hand every queued line to the kernel in one write."""

    def close(self) -> None:
        """Flush, fsync and close; idempotent."""


def encode(record: dict[str, Any]) -> str:
    return json.dumps(record, separators=(",", ":"))


class Journal:
    """A journal file opened for appending by exactly one process."""

    enabled = True

    def __init__(self, path: Path, fsync_interval_s: float = 0.5) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC, 0o644)
        self._pending: list[str] = []
        self._dirty = False
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._syncer = threading.Thread(target=self._sync_every, args=(fsync_interval_s,),
                                        name="journal-fsync", daemon=True)
        self._syncer.start()

    def append(self, record: dict[str, Any]) -> None:
        self._pending.append(encode(record))

    def append_line(self, line: str) -> None:
        self._pending.append(line)

    def flush(self) -> None:
        if not self._pending:
            return
        data = memoryview(("\n".join(self._pending) + "\n").encode())
        self._pending.clear()
        while data:
            written = os.write(self._fd, data)
            data = data[written:]
        self._dirty = True

    def sync(self) -> None:
        """fsync if anything was written since the last fsync."""
        with self._lock:
            if self._dirty and not self._closed.is_set():
                self._dirty = False
                os.fsync(self._fd)

    def _sync_every(self, interval: float) -> None:
        while not self._closed.wait(interval):
            self.sync()

    def close(self) -> None:
        if self._closed.is_set():
            return
        self.flush()
        self.sync()
        with self._lock:
            self._closed.set()
            os.close(self._fd)
        self._syncer.join(timeout=5.0)


class NullJournal:
    """Discards everything: the benchmark's 'journaling off' producer."""

    enabled = False

    def append(self, record: dict[str, Any]) -> None:
        pass

    def append_line(self, line: str) -> None:
        pass

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


class JournalReader:
    """Iterate a journal's lines as (line number, object); `torn_tail` tells whether the last line was skipped."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.torn_tail = False

    def __iter__(self) -> Iterator[tuple[int, dict[str, Any]]]:
        self.torn_tail = False
        with open(self.path, "rb") as fh:
            previous: tuple[int, bytes] | None = None
            for lineno, raw in enumerate(fh, 1):
                if previous is not None:
                    yield previous[0], self._parse(*previous)
                previous = (lineno, raw)
        if previous is not None:
            try:
                record = self._parse(*previous)
            except JournalError:
                self.torn_tail = True
                return
            yield previous[0], record

    def _parse(self, lineno: int, raw: bytes) -> dict[str, Any]:
        if not raw.endswith(b"\n"):
            raise JournalError(f"{self.path}:{lineno}: line has no end (torn write)")
        try:
            record = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise JournalError(f"{self.path}:{lineno}: not JSON: {exc}") from exc
        if not isinstance(record, dict):
            raise JournalError(f"{self.path}:{lineno}: not a JSON object")
        return record
