"""What the clock-fault cluster tests read from a run folder: which node the coordinator's jumps hit, and where a
broker's log stamps (its JVM's wall clock, log4j) went back."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from nemesis.journal import read_journal
from testbed.runfolder import RunFolder

LOG_STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]")


def coordinator_jumps(run: RunFolder) -> str:
    """The node both clock-jump faults hit (the transaction coordinator's, resolved at each), checked: one broker,
    30 s back at the first, back to true time at the second."""
    starts = [row for row in read_journal(run.nemesis_journal) if row["fault"] == "clock-jump" and row["type"] == "start"]
    assert [row["detail"]["name"] for row in starts] == ["coordinator-back", "coordinator-forward"], starts
    nodes = {tuple(row["targets"]["nodes"]) for row in starts}
    assert len(nodes) == 1 and len(next(iter(nodes))) == 1, nodes  # the coordinator did not move in between
    (node,) = next(iter(nodes))
    process = f"{node}/broker"
    assert [row["detail"]["offsets"] for row in starts] == [{process: -30000.0}, {process: 0.0}], starts
    return str(node)


def steps_in_log(log: Path) -> list[float]:
    """Every step back between one line's log4j stamp and the next's, in ms (negative), in file order."""
    stamps = [datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f") for line in log.read_text(errors="replace")
              .splitlines() if (m := LOG_STAMP.match(line))]
    return [(b - a).total_seconds() * 1000 for a, b in zip(stamps, stamps[1:], strict=False) if b < a]
