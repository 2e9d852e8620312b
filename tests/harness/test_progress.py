"""The live status line: phase, elapsed and remaining time, writes and errors per second, active faults."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import pytest

from harness import progress as progress_mod
from harness.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(progress_mod.time, "monotonic", fake)
    return fake


def journal(path: Path, text: str) -> None:
    with open(path, "a") as fh:
        fh.write(text)


def test_on_a_terminal_one_line_is_redrawn_with_rates_time_left_and_faults(tmp_path: Path, clock: Clock) -> None:
    out = Terminal()
    progress = Progress("smoke", tmp_path, out)
    progress.phase("running", 20.0)
    clock.now += 2.0
    journal(tmp_path / "producer-az1-0.jsonl",
            '{"kind":"ack","t":1,"op":"1,2,3,4","offset":[1,2,3,4]}\n{"kind":"outcome","op":5,"status":"info"}\n'
            '{"kind":"outcome","op":9,"status":"fail"}\n{"kind":"ack","t":2,"op":"6,7')  # the last line torn
    progress.tick(["isolate-leader"])
    line = out.getvalue().split("\r\x1b[2K")[-1]
    assert line == ("[smoke] running   2.0 s remaining  18.0 s | writes       2/s errors     1/s "
                    "| faults: isolate-leader"), "4 acks and 2 outcomes in 2 s; a torn line waits until it is whole"
    clock.now += 1.0
    journal(tmp_path / "producer-az1-0.jsonl", ',8","offset":[6,7,8]}\n')
    progress.tick([])
    line = out.getvalue().split("\r\x1b[2K")[-1]
    assert "writes       3/s" in line and line.endswith("faults: none")
    progress.phase("healing")
    assert out.getvalue().endswith("\n[smoke] healing (t+3.0 s)\n"), "a new phase ends the live line"


def test_off_a_terminal_plain_lines_every_five_seconds_and_everything_to_the_log(tmp_path: Path, clock: Clock) -> None:
    out = io.StringIO()
    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    progress = Progress("smoke", tmp_path, out, log=Keep())
    progress.phase("running", 20.0)
    for _ in range(10):
        clock.now += 1.0
        progress.tick([])
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue()
    assert lines[0] == "[smoke] running (t+0.0 s)" and len(lines) == 1 + 2, lines
    assert [line.split("|")[0].strip() for line in lines[1:]] == [
        "[smoke] running   1.0 s remaining  19.0 s", "[smoke] running   6.0 s remaining  14.0 s"]
    assert records == lines, "harness.log gets the same lines"


def test_past_an_hour_times_read_as_hours_minutes_and_seconds(tmp_path: Path, clock: Clock) -> None:
    out = io.StringIO()
    progress = Progress("soak", tmp_path, out)
    progress.phase("running", 6 * 3600.0)
    clock.now += 3599.9
    progress.tick([])
    clock.now += 3725.1
    progress.tick(["kill-leader"])
    clock.now += 3 * 3600
    progress.phase("healing")
    lines = out.getvalue().splitlines()
    assert lines[1].split("|")[0].strip() == "[soak] running 3599.9 s remaining 5:00:00", "under an hour: seconds"
    assert lines[2].split("|")[0].strip() == "[soak] running 2:02:05 remaining 3:57:55"
    assert lines[3] == "[soak] healing (t+5:02:05)"
