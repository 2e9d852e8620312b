"""How each anomaly's example is written: one builder per kind of instance, over the evidence rows.

A builder takes one instance row (checkers.example_order's columns) and an `EvidenceIndex` of the
rows `Engine.evidence` found, and returns the example's fields and its time window: a write's
invoke..complete; a read's poll time; a pair's first to second time; a divergent position's writes
and live reads (its final reads when there is nothing else). Each anomaly's record
(checkers.anomalies) names its builder; checkers.examples runs them.

Must never: name an anomaly or import checkers.anomalies (the records import this module).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from checkers.engine import Evidence, Position
from checkers.example_order import MAX_EXAMPLES

if TYPE_CHECKING:
    from checkers.group_terms import GroupTerms

Row = dict[str, Any]
Window = tuple[int, int]

WRITE_FIELDS = (
    "value",
    "topic",
    "partition",
    "offset",
    "process",
    "status",
    "error",
    "op_id",
    "invoke_ns",
    "complete_ns",
)
READ_FIELDS = ("value", "topic", "partition", "offset", "process", "phase", "seq", "poll_ns")


def _read_order(row: Row) -> tuple[Any, ...]:
    return (
        row["poll_ns"],
        row["process"],
        row["seq"],
        row["topic"],
        row["partition"],
        row["offset"],
        row["phase"],
    )


def _write_window(w: Row) -> Window:
    end = w["complete_ns"] if w["complete_ns"] is not None else w["invoke_ns"]
    return min(w["invoke_ns"], end), max(w["invoke_ns"], end)


class EvidenceIndex:
    """Evidence rows by value and by position (and, contract v2, the transactions and read_committed readers;
    contract v3, the group commits)."""

    def __init__(self, evidence: Evidence, txns: dict[str, Row] | None = None,
                 read_committed: frozenset[str] = frozenset(), groups: GroupTerms | None = None) -> None:
        self.groups = groups
        # checkers.group_examples' acknowledged commits of a group's partition, sorted once per check
        self.group_commits: dict[tuple[str, str, int], Any] = {}
        self.txns = txns or {}
        self.read_committed = read_committed
        self.writes = {w["value"]: w for w in evidence.writes}
        self.reads: dict[str, list[Row]] = defaultdict(list)
        self.at: dict[Position, list[tuple[str, Row]]] = defaultdict(list)
        for r in sorted(evidence.reads, key=_read_order):
            self.reads[r["value"]].append(r)
            self.at[(r["topic"], r["partition"], r["offset"])].append((r["phase"], r))
        for w in evidence.writes:
            if w["status"] == "ok" and w["partition"] is not None and w["offset"] is not None:
                self.at[(w["topic"], w["partition"], w["offset"])].append(("write", w))

    def final_positions(self, value: str) -> list[Position]:
        found = {
            (r["topic"], r["partition"], r["offset"]) for r in self.reads[value] if r["phase"] == "final"
        }
        return sorted(found)


def _positions(found: list[Position]) -> list[dict[str, Any]]:
    return [{"topic": t, "partition": p, "offset": o} for t, p, o in found[: MAX_EXAMPLES]]


def write_example(inst: Row, idx: EvidenceIndex) -> tuple[Row, Window]:
    w = idx.writes[inst["value"]]
    example = {k: w[k] for k in WRITE_FIELDS}
    example.update({k: w[k] for k in ("txn", "source") if w.get(k) is not None})  # contract v2, where set
    if w.get("txn") in idx.txns:
        example["transaction"] = idx.txns[w["txn"]]
    return example, _write_window(w)


def _rc_reads(value: str, idx: EvidenceIndex) -> list[Row]:
    return [r for r in idx.reads[value] if r["process"] in idx.read_committed]


def _seen_by_rc(inst: Row, idx: EvidenceIndex, early_only: bool = False) -> tuple[Row, Window]:
    """A write example plus the first read_committed read of it (before its commit was asked, if early_only)."""
    example, window = write_example(inst, idx)
    seen = _rc_reads(inst["value"], idx)
    txn = example.get("transaction") or {}
    if early_only and txn.get("intent") != "abort" and txn.get("end_ns") is not None:
        seen = [r for r in seen if r["poll_ns"] < txn["end_ns"]]
    if seen:
        example["seen"] = {k: seen[0][k] for k in READ_FIELDS if k != "value"}
        window = (min(window[0], seen[0]["poll_ns"]), max(window[1], seen[0]["poll_ns"]))
    return example, window


def aborted_read(inst: Row, idx: EvidenceIndex) -> tuple[Row, Window]:
    return _seen_by_rc(inst, idx)


def uncommitted_read(inst: Row, idx: EvidenceIndex) -> tuple[Row, Window]:
    return _seen_by_rc(inst, idx, early_only=True)


def torn(inst: Row, idx: EvidenceIndex) -> tuple[Row, Window]:
    example, window = write_example(inst, idx)  # the transaction's first acknowledged write missing from Frc
    present = idx.writes.get(inst["prev_value"])
    if present is not None:
        example["committed_write"] = {k: present[k] for k in ("value", "topic", "partition", "offset", "op_id")}
        example["committed_write"]["final_positions"] = _positions(idx.final_positions(present["value"]))
    return example, window


def unreadable(inst: Row, idx: EvidenceIndex) -> tuple[Row, Window]:
    example, window = write_example(inst, idx)
    example["final_positions"] = _positions(idx.final_positions(inst["value"]))  # read_uncommitted only
    return example, window


def reprocessed(inst: Row, idx: EvidenceIndex) -> tuple[Row, Window]:
    source, output = idx.writes.get(inst["value"]), idx.writes.get(inst["prev_value"])
    example: Row = {"value": inst["value"], "topic": None, "partition": None, "offset": None,
                    "process": inst["process"]}
    window = (0, 0)
    if source is not None:
        example.update({k: source[k] for k in ("topic", "partition", "offset")})
        window = _write_window(source)
    if output is not None:
        example["output"] = {k: output[k] for k in ("value", "topic", "partition", "offset", "process", "txn")}
        example["output"]["final_positions"] = _positions(idx.final_positions(output["value"]))
        window = _write_window(output) if source is None else (window[0], _write_window(output)[1])
    return example, window


def skipped_input(inst: Row, idx: EvidenceIndex) -> tuple[Row, Window]:
    topic, partition, offset = idx.final_positions(inst["value"])[0]
    example: Row = {"value": inst["value"], "topic": topic, "partition": partition, "offset": offset,
                    "process": inst["process"]}
    writer = idx.writes.get(inst["value"])
    if writer is not None:
        return example, _write_window(writer)
    first = [r for r in idx.reads[inst["value"]] if r["phase"] == "final"][0]
    return example, (first["poll_ns"], first["poll_ns"])


def failed_present(inst: Row, idx: EvidenceIndex) -> tuple[Row, Window]:
    example, window = write_example(inst, idx)
    example["seen"] = {k: idx.reads[inst["value"]][0][k] for k in READ_FIELDS if k != "value"}
    return example, window


def recovered(inst: Row, idx: EvidenceIndex) -> tuple[Row, Window]:
    example, window = write_example(inst, idx)
    example["final_positions"] = _positions(idx.final_positions(inst["value"]))
    return example, window


def _read_example(row: Row) -> tuple[Row, Window]:
    return {k: row[k] for k in READ_FIELDS}, (row["poll_ns"], row["poll_ns"])


def phantom(inst: Row, idx: EvidenceIndex) -> tuple[Row, Window]:
    return _read_example(idx.reads[inst["value"]][0])


def vanished(inst: Row, idx: EvidenceIndex) -> tuple[Row, Window]:
    live = [r for r in idx.reads[inst["value"]] if r["phase"] == "live"]
    example, window = _read_example(live[0])
    writer = idx.writes.get(inst["value"])
    example["writer"] = writer["process"] if writer else None
    return example, window


def duplicate(inst: Row, idx: EvidenceIndex) -> tuple[Row, Window]:
    found = idx.final_positions(inst["value"])
    writer = idx.writes.get(inst["value"])
    topic, partition, offset = found[0]
    example: Row = {"value": inst["value"], "topic": topic, "partition": partition, "offset": offset}
    example["process"] = writer["process"] if writer else None
    if writer:
        example.update({k: writer[k] for k in ("op_id", "status", "invoke_ns", "complete_ns")})
        window = _write_window(writer)
    else:
        first = [r for r in idx.reads[inst["value"]] if r["phase"] == "final"][0]
        window = (first["poll_ns"], first["poll_ns"])
    example["positions"] = _positions(found)
    return example, window


def divergence(inst: Row, idx: EvidenceIndex) -> tuple[Row, Window]:
    position = (inst["topic"], inst["partition"], inst["offset"])
    entries = []
    for source, row in idx.at[position]:
        if source == "write":
            entries.append(
                (
                    row["invoke_ns"],
                    source,
                    row["process"],
                    row["value"],
                    row["complete_ns"] or row["invoke_ns"],
                )
            )
        else:
            entries.append((row["poll_ns"], source, row["process"], row["value"], row["poll_ns"]))
    entries.sort(key=lambda e: (e[0], e[1], e[2], e[3]))
    values = sorted({e[3] for e in entries})
    timed = [e for e in entries if e[1] != "final"] or entries
    window = (min(e[0] for e in timed), max(e[4] for e in timed))
    writer = idx.writes.get(values[0])
    example: Row = {"value": values[0], "topic": position[0], "partition": position[1], "offset": position[2]}
    example["process"] = writer["process"] if writer else None
    example["values"] = values[: MAX_EXAMPLES]
    example["evidence"] = [
        {"source": e[1], "value": e[3], "process": e[2], "time_ns": e[0]} for e in entries[: MAX_EXAMPLES]
    ]
    return example, window


def reordered(inst: Row, idx: EvidenceIndex) -> tuple[Row, Window]:
    cur, prev = idx.writes[inst["value"]], idx.writes[inst["prev_value"]]
    example: Row = {k: inst[k] for k in ("value", "topic", "partition", "offset", "process", "op_id")}
    example.update(invoke_ns=cur["invoke_ns"], complete_ns=cur["complete_ns"])
    example["previous"] = {
        "value": inst["prev_value"],
        "offset": inst["prev_offset"],
        "op_id": inst["prev_op_id"],
        "invoke_ns": prev["invoke_ns"],
        "complete_ns": prev["complete_ns"],
    }
    return example, (min(prev["invoke_ns"], cur["invoke_ns"]), _write_window(cur)[1])


def poll_pair(inst: Row, idx: EvidenceIndex) -> tuple[Row, Window]:
    example: Row = {
        k: inst[k] for k in ("value", "topic", "partition", "offset", "process", "seq", "poll_ns")
    }
    example["previous"] = {
        "value": inst["prev_value"],
        "offset": inst["prev_offset"],
        "seq": inst["prev_seq"],
        "poll_ns": inst["prev_poll_ns"],
    }
    lo, hi = sorted((inst["prev_poll_ns"], inst["poll_ns"]))
    return example, (lo, hi)


Builder = Callable[[Row, EvidenceIndex], tuple[Row, Window]]
