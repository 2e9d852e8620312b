"""Excerpts of the nodes' broker logs around moments of the run, copied into the report.

Each node folder keeps its broker's ``logs/broker/server.log`` (log4j's
``[%d] %p %m (%c)`` lines, timestamps in UTC as the harness runs the JVMs);
the report copies the lines from a little before to a little after an
anomaly example's moment, so that the page stays self-contained and a
reader can see what the broker said then. Lines without a timestamp (a stack
trace) belong to the line above. On a runtime whose hosts keep their own clocks (ssh) a line's time is its
stamp less its host's measured offset (`clocks.json`, interpolated between the run's start and end), so that it sits on the harness's clock as the faults
do. Excerpts of one node that cover the same
moment are shared; the number and length of excerpts are bounded so the page
stays small.
Must never: fail the report over a log it cannot read (it is left out), or copy a whole log.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from report import fmt
from testbed.runfolder import NodeFolder, RunFolder
from testbed.runtime.ssh_clock import SAME_CLOCK, HostClock, host_clocks

BEFORE_NS, AFTER_NS = 3 * fmt.NS, 2 * fmt.NS
MAX_SPAN_NS = 12 * fmt.NS  # an excerpt grows to take in nearby moments up to this span
MAX_LINES = 40  # per excerpt: the first and last halves of the window when it holds more
MAX_LINE_CHARS = 220
MAX_TRACE_LINES = 8  # lines kept of a stack trace (the lines without a timestamp after an entry)
MAX_EXCERPTS = 24
MAX_CHARS, MIN_LINES = 90_000, 6  # all excerpts together: past MAX_CHARS each keeps fewer lines
_STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})\]")
_BROKER_ID = re.compile(r"^\s*(?:broker|node)\.id\s*=\s*(\d+)\s*$", re.M)  # node.id: a KRaft broker's


@dataclass
class NodeLog:
    """One node's broker log: entries (time, text) in file order, and its broker id."""

    node: str
    broker: int | None
    times: list[int]
    texts: list[str]


@dataclass
class Excerpt:
    """Lines of one node's log between two moments; ``anchor`` is its element id in the page."""

    anchor: str
    node: str
    broker: int | None
    lo_ns: int
    hi_ns: int
    lines: list[str] = field(default_factory=list)
    left_out: int = 0


def parse_stamp(line: str) -> int | None:
    """The ns since the epoch of a "[2026-11-23 16:35:38,123] ..." line (UTC), or None."""
    match = _STAMP.match(line)
    if not match:
        return None
    moment = datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
    return int(moment.timestamp()) * fmt.NS + int(match.group(2)) * 1_000_000


def broker_id(node: NodeFolder) -> int | None:
    """The broker id the node's server.properties gives (`broker.id`; a KRaft broker's `node.id`, the same number),
    or None where it has none (or it cannot be read)."""
    try:
        found = _BROKER_ID.search(node.config("broker").read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None
    return int(found.group(1)) if found else None


def read_node_log(node: NodeFolder, clock: HostClock = SAME_CLOCK) -> NodeLog | None:
    """The node's broker server.log as timed entries (each stamp moved onto the harness's clock by its host's
    `clock`), or None where there is none or it cannot be read."""
    path = node.logs("broker") / "server.log"
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    broker = broker_id(node)
    times: list[int] = []
    texts: list[str] = []
    for line in text.splitlines():
        stamp = parse_stamp(line)
        short = line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS - 1] + "…"
        if stamp is not None:
            times.append(clock.harness_ns(stamp))
            texts.append(short)
        elif texts and line.strip():
            held = texts[-1].count("\n")
            if held < MAX_TRACE_LINES:
                texts[-1] += "\n" + short
            elif held == MAX_TRACE_LINES:
                texts[-1] += "\n\t…"
    return NodeLog(node.name, broker, times, texts) if times else None


class Excerpts:
    """The excerpts a report holds: a moment's excerpt grows to take in the next moments of the same node
    while the whole stays within MAX_SPAN_NS, so nearby examples share one; lines are cut at the end (`cut_all`)."""

    def __init__(self, run_dir: Path) -> None:
        folder = RunFolder(run_dir)
        clocks = host_clocks(folder.clocks)
        logs = [read_node_log(n, clocks.get(n.name, SAME_CLOCK)) for n in folder.node_folders()]
        self.logs = [log for log in logs if log is not None]
        self.made: list[Excerpt] = []

    def nodes_for(self, brokers: list[int] | None) -> list[NodeLog]:
        """The logs of these brokers (all the logs where no broker is named or none of them has a log)."""
        if brokers:
            mine = [log for log in self.logs if log.broker in brokers]
            if mine:
                return mine
        return list(self.logs)

    def around(self, lo_ns: int, hi_ns: int, brokers: list[int] | None = None) -> list[Excerpt]:
        """An excerpt per chosen node's log around [lo, hi]: an existing one stretched to cover it, else a new one."""
        out = []
        lo, hi = lo_ns - BEFORE_NS, hi_ns + AFTER_NS
        for log in self.nodes_for(brokers):
            shared = next((e for e in self.made if e.node == log.node
                           and max(e.hi_ns, hi) - min(e.lo_ns, lo) <= MAX_SPAN_NS), None)
            if shared is not None:
                shared.lo_ns, shared.hi_ns = min(shared.lo_ns, lo), max(shared.hi_ns, hi)
            elif len(self.made) < MAX_EXCERPTS:
                shared = Excerpt(f"log-{len(self.made) + 1}", log.node, log.broker, lo, hi)
                self.made.append(shared)
            else:
                continue
            out.append(shared)
        return out

    def cut_all(self) -> list[Excerpt]:
        """Every excerpt with its lines, once all moments are in; fewer lines each if they exceed MAX_CHARS."""
        by_node = {log.node: log for log in self.logs}
        limit = MAX_LINES
        while True:
            for excerpt in self.made:
                _cut(by_node[excerpt.node], excerpt, limit)
            size = sum(len(line) for e in self.made for line in e.lines)
            if size <= MAX_CHARS or limit <= MIN_LINES:
                return self.made
            limit = max(MIN_LINES, limit * MAX_CHARS // size - 1)


def _cut(log: NodeLog, excerpt: Excerpt, limit: int) -> None:
    first, last = bisect_left(log.times, excerpt.lo_ns), bisect_right(log.times, excerpt.hi_ns)
    lines = log.texts[first:last]
    excerpt.left_out = 0
    if len(lines) > limit:
        half = limit // 2
        excerpt.left_out = len(lines) - 2 * half
        lines = lines[:half] + [f"… {excerpt.left_out} lines left out …"] + lines[-half:]
    excerpt.lines = lines
