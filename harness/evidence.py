"""What a run folder shows that its verdict does not: the outcome of each fault's own request, and lines of the
nodes' logs within windows of the run, for an expectation to hold them to (`harness.expectation`).

A fault's outcome is its `start` row in the nemesis journal (found by the name the timeline gave it), the
`detail` key its kind's record names (`nemesis.registry`, `FaultKind.outcome`). A log window's ends are moments
of that journal: a fault's `start` or `stop` row, or the story's start (a scheduled row's `invoked_ns` less its
`at_s` and how late it fired), moved by seconds. The logs are every node's files under `nodes/<node>/logs/`, as
the cluster's teardown brought them back; a line's time is its log4j stamp (`report.logexcerpts.parse_stamp`:
UTC, as the nodes' JVMs log), a stack trace's lines taking the time of the line above, less its host's clock
offset where the run measured one (ssh: `clocks.json`, `ssh_clock.host_clocks`), so that it is the harness's time
as the journal's moments are.
Must never: judge what it found (the expectation does), or fail a run over a log it cannot read (it says so).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from harness.expectation import SHOWN_LINES, Anchor, Evidence, Expectation, LogEvidence, LogFinding
from nemesis.journal import read_journal
from nemesis.registry import fault_kinds
from report.logexcerpts import broker_id, parse_stamp
from testbed.runfolder import RunFolder
from testbed.runtime.ssh_clock import SAME_CLOCK, HostClock, host_clocks

NS = 1_000_000_000
MAX_LINE_CHARS = 300


def gather(expect: Expectation, folder: RunFolder) -> Evidence:
    """The evidence `expect` asks of the run in `folder` (nothing read where it asks none)."""
    if not expect.faults and not expect.logs and not expect.counted:
        return Evidence()
    rows = read_journal(folder.nemesis_journal) if folder.nemesis_journal.is_file() else []
    faults = {name: fault_outcome(rows, name) for name, _ in expect.faults}
    logs = tuple(find_lines(folder, rows, ev) for ev in expect.logs)
    return Evidence(faults, logs, {name: disk_counts(rows, name) for name, _ in expect.counted})


def fault_outcome(rows: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
    """The outcome the fault called `name` journaled on its start row; None if it never started or has none."""
    outcome_keys = {journaled: kind.outcome for kind in fault_kinds() if kind.outcome
                    for journaled in kind.journal_names}
    for row in rows:
        if row["type"] == "start" and row["detail"].get("name") == name and row["fault"] in outcome_keys:
            outcome = row["detail"].get(outcome_keys[row["fault"]])
            return dict(outcome) if isinstance(outcome, dict) else None
    return None


def disk_counts(rows: list[dict[str, Any]], name: str) -> dict[str, int] | None:
    """The calls the disk fault called `name` failed or delayed, summed over its nodes (its stop row's `counts`:
    node -> {path, counts, files}); None if it never stopped."""
    row = next((r for r in rows if r["type"] == "stop" and r["detail"].get("name") == name), None)
    if row is None:
        return None
    total: dict[str, int] = {}
    for node in (row["detail"].get("counts") or {}).values():
        for what, n in ((node or {}).get("counts") or {}).items():
            total[what] = total.get(what, 0) + int(n)
    return total


def moment_ns(rows: list[dict[str, Any]], anchor: Anchor) -> int | None:
    """When `anchor` happened (ns since the epoch), or None: its fault never started (or stopped)."""
    if anchor.fault is None:
        scheduled = [r for r in rows if r["type"] == "start" and isinstance(r["detail"].get("at_s"), int | float)
                     and isinstance(r["detail"].get("invoked_ns"), int)]
        if not scheduled:
            return None
        first = scheduled[0]["detail"]
        base = first["invoked_ns"] - int(first["at_s"] * NS) - int(float(first.get("late_ms") or 0) * 1_000_000)
    else:
        row = next((r for r in rows if r["type"] == anchor.edge and r["detail"].get("name") == anchor.fault), None)
        if row is None:
            return None
        base = int(row["time_ns"])
    return base + int(anchor.offset_s * NS)


def find_lines(folder: RunFolder, rows: list[dict[str, Any]], ev: LogEvidence) -> LogFinding:
    """The lines of the chosen nodes' logs that match `ev.pattern` within its window."""
    bounds = []
    for anchor in (ev.start, ev.end):
        moment = None if anchor is None else moment_ns(rows, anchor)
        if anchor is not None and moment is None:
            return LogFinding(problem=f"{anchor.text} never happened in this run (no such row in the nemesis journal)")
        bounds.append(moment)
    lo, hi = bounds
    nodes = [n for n in folder.node_folders() if not ev.brokers or broker_id(n) in ev.brokers]
    clocks = host_clocks(folder.clocks)
    files = [(f, clocks.get(n.name, SAME_CLOCK)) for n in nodes for f in sorted(n.logs_dir.glob("*/*.log"))
             if ev.file in (None, f.name)]
    if not files:
        return LogFinding(problem=f"no {ev.file or 'log'} file in the run folder for "
                                  f"{', '.join(f'broker-{b}' for b in ev.brokers) or 'any node'}")
    pattern = re.compile(ev.pattern)
    shown: list[str]
    count, shown = 0, []  # shown: the first SHOWN_LINES matches
    for path, clock in files:
        for stamp, line in _timed_lines(path, clock):
            if (lo is not None and (stamp is None or stamp < lo)) or (hi is not None and (stamp is None or stamp > hi)):
                continue
            if pattern.search(line):
                count += 1
                if len(shown) < SHOWN_LINES:
                    shown.append(f"{path.parent.parent.parent.name}/{path.name}: {line[:MAX_LINE_CHARS]}")
    return LogFinding(count, tuple(shown))


def _timed_lines(path: Path, clock: HostClock = SAME_CLOCK) -> list[tuple[int | None, str]]:
    """Each line of a log with its time on the harness's clock (its stamp moved by its host's `clock`; a line
    without a stamp has the one above; None before the first)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    out: list[tuple[int | None, str]] = []
    last: int | None = None
    for line in text.splitlines():
        stamp = parse_stamp(line)
        last = last if stamp is None else clock.harness_ns(stamp)
        out.append((last, line))
    return out

