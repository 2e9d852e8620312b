"""What a run is doing, for the person watching: one live line on a terminal, plain log lines otherwise.

Counts come from the producers' journals as they grow (`ack` lines list the
acknowledged sends, `outcome` lines are failed or unknown ones; see
workloads.lines), so the status line costs the workloads nothing.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import TextIO

from harness.runlog import progress_record

ACK_MARK = b'{"kind":"ack"'
OUTCOME_MARK = b'{"kind":"outcome"'


class JournalTail:
    """Counts acknowledged and failed/unknown outcomes appended to producer journals since the last call."""

    def __init__(self, journal_dir: Path) -> None:
        self.journal_dir = journal_dir
        self.offsets: dict[Path, int] = {}

    def read(self) -> tuple[int, int]:
        ok = errors = 0
        for path in self.journal_dir.glob("producer-*.jsonl"):
            start = self.offsets.get(path, 0)
            try:
                with open(path, "rb") as fh:
                    fh.seek(start)
                    chunk = fh.read()
            except FileNotFoundError:
                continue
            whole = chunk[: chunk.rfind(b"\n") + 1]
            self.offsets[path] = start + len(whole)
            for line in whole.splitlines():
                if line.startswith(ACK_MARK):
                    # "op":"3,6,9": one acknowledged send per comma-separated op id
                    ops = line.split(b'"op":"', 1)[1].split(b'"', 1)[0]
                    ok += ops.count(b",") + 1
                elif line.startswith(OUTCOME_MARK):
                    errors += 1
        return ok, errors


def duration_text(seconds: float) -> str:
    """A time for a status line: `  12.3 s` under an hour, `1:02:03` (h:mm:ss) from an hour on."""
    if seconds < 3600:
        return f"{seconds:5.1f} s"
    whole = int(seconds)
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


class Progress:
    """`log`, when given, also gets every phase line and a status line every 5 s (the run's harness.log)."""

    def __init__(self, name: str, journal_dir: Path, stream: TextIO | None = None,
                 log: logging.Handler | None = None) -> None:
        self.name = name
        self.stream = stream or sys.stderr
        self.log = log
        self.live = self.stream.isatty()
        self.tail = JournalTail(journal_dir)
        self.phase_name = "provisioning"
        self.started = time.monotonic()
        self.phase_started = self.started
        self.last_tick = self.started
        self.last_plain = 0.0
        # Rates are over the window since the last plain line (5 s), not one tick: journals that reach the run
        # folder in batches (hosts that do not share its disk) still give a true rate.
        self.window: tuple[float, int, int] = (self.started, 0, 0)
        self.duration_s: float | None = None

    def phase(self, name: str, duration_s: float | None = None) -> None:
        self._end_live_line()
        self.phase_name, self.duration_s = name, duration_s
        self.phase_started = time.monotonic()
        line = f"[{self.name}] {name} (t+{duration_text(self.phase_started - self.started).strip()})"
        self._write(line + "\n")
        self._record(line)

    def tick(self, faults: list[str]) -> None:
        now = time.monotonic()
        new_ok, new_errors = self.tail.read()
        since, ok, errors = self.window
        ok, errors = ok + new_ok, errors + new_errors
        span = max(now - since, 1e-3)
        self.window = (since, ok, errors)
        self.last_tick = now
        elapsed = now - self.phase_started
        remaining = f" remaining {duration_text(max(self.duration_s - elapsed, 0))}" if self.duration_s else ""
        line = (f"[{self.name}] {self.phase_name} {duration_text(elapsed)}{remaining} | writes {ok / span:7.0f}/s "
                f"errors {errors / span:5.0f}/s | faults: {', '.join(faults) or 'none'}")
        every_5s = now - self.last_plain >= 5.0
        if every_5s:
            self.last_plain = now
            self.window = (now, 0, 0)
            self._record(line)
        if self.live:
            self._write("\r\x1b[2K" + line)
        elif every_5s:
            self._write(line + "\n")

    def _record(self, line: str) -> None:
        if self.log is not None:
            self.log.handle(progress_record(line))

    def _end_live_line(self) -> None:
        if self.live:
            self._write("\n")

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()
