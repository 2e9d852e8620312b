"""Turn engine instances into the verdict's examples.

Shared by both engines so their examples are identical: an engine hands
over at most MAX_EXAMPLES instance rows per anomaly, already ordered; this
module looks up the rows needed to describe each one (one `Engine.evidence`
call), then adds the faults active and the leaders claimed around it.

Each example's time window: a write's invoke..complete; a read's poll time;
a pair's first to second time; a divergent position's writes and live reads
(its final reads when there is nothing else).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from checkers import anomalies as a
from checkers.context import Context
from checkers.engine import Analysis, Engine, Evidence, Position

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


class _Index:
    """Evidence rows by value and by position (and, contract v2, the transactions and read_committed readers)."""

    def __init__(self, evidence: Evidence, txns: dict[str, Row] | None = None,
                 read_committed: frozenset[str] = frozenset()) -> None:
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
    return [{"topic": t, "partition": p, "offset": o} for t, p, o in found[: a.MAX_EXAMPLES]]


def _write_example(inst: Row, idx: _Index) -> tuple[Row, Window]:
    w = idx.writes[inst["value"]]
    example = {k: w[k] for k in WRITE_FIELDS}
    example.update({k: w[k] for k in ("txn", "source") if w.get(k) is not None})  # contract v2, where set
    if w.get("txn") in idx.txns:
        example["transaction"] = idx.txns[w["txn"]]
    return example, _write_window(w)


def _rc_reads(value: str, idx: _Index) -> list[Row]:
    return [r for r in idx.reads[value] if r["process"] in idx.read_committed]


def _seen_by_rc(inst: Row, idx: _Index, early_only: bool = False) -> tuple[Row, Window]:
    """A write example plus the first read_committed read of it (before its commit was asked, if early_only)."""
    example, window = _write_example(inst, idx)
    seen = _rc_reads(inst["value"], idx)
    txn = example.get("transaction") or {}
    if early_only and txn.get("intent") != "abort" and txn.get("end_ns") is not None:
        seen = [r for r in seen if r["poll_ns"] < txn["end_ns"]]
    if seen:
        example["seen"] = {k: seen[0][k] for k in READ_FIELDS if k != "value"}
        window = (min(window[0], seen[0]["poll_ns"]), max(window[1], seen[0]["poll_ns"]))
    return example, window


def _aborted_read(inst: Row, idx: _Index) -> tuple[Row, Window]:
    return _seen_by_rc(inst, idx)


def _uncommitted_read(inst: Row, idx: _Index) -> tuple[Row, Window]:
    return _seen_by_rc(inst, idx, early_only=True)


def _torn(inst: Row, idx: _Index) -> tuple[Row, Window]:
    example, window = _write_example(inst, idx)  # the transaction's first acknowledged write missing from Frc
    present = idx.writes.get(inst["prev_value"])
    if present is not None:
        example["committed_write"] = {k: present[k] for k in ("value", "topic", "partition", "offset", "op_id")}
        example["committed_write"]["final_positions"] = _positions(idx.final_positions(present["value"]))
    return example, window


def _unreadable(inst: Row, idx: _Index) -> tuple[Row, Window]:
    example, window = _write_example(inst, idx)
    example["final_positions"] = _positions(idx.final_positions(inst["value"]))  # read_uncommitted only
    return example, window


def _reprocessed(inst: Row, idx: _Index) -> tuple[Row, Window]:
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


def _skipped_input(inst: Row, idx: _Index) -> tuple[Row, Window]:
    topic, partition, offset = idx.final_positions(inst["value"])[0]
    example: Row = {"value": inst["value"], "topic": topic, "partition": partition, "offset": offset,
                    "process": inst["process"]}
    writer = idx.writes.get(inst["value"])
    if writer is not None:
        return example, _write_window(writer)
    first = [r for r in idx.reads[inst["value"]] if r["phase"] == "final"][0]
    return example, (first["poll_ns"], first["poll_ns"])


def _failed_present(inst: Row, idx: _Index) -> tuple[Row, Window]:
    example, window = _write_example(inst, idx)
    example["seen"] = {k: idx.reads[inst["value"]][0][k] for k in READ_FIELDS if k != "value"}
    return example, window


def _recovered(inst: Row, idx: _Index) -> tuple[Row, Window]:
    example, window = _write_example(inst, idx)
    example["final_positions"] = _positions(idx.final_positions(inst["value"]))
    return example, window


def _read_example(row: Row) -> tuple[Row, Window]:
    return {k: row[k] for k in READ_FIELDS}, (row["poll_ns"], row["poll_ns"])


def _phantom(inst: Row, idx: _Index) -> tuple[Row, Window]:
    return _read_example(idx.reads[inst["value"]][0])


def _vanished(inst: Row, idx: _Index) -> tuple[Row, Window]:
    live = [r for r in idx.reads[inst["value"]] if r["phase"] == "live"]
    example, window = _read_example(live[0])
    writer = idx.writes.get(inst["value"])
    example["writer"] = writer["process"] if writer else None
    return example, window


def _duplicate(inst: Row, idx: _Index) -> tuple[Row, Window]:
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


def _divergence(inst: Row, idx: _Index) -> tuple[Row, Window]:
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
    example["values"] = values[: a.MAX_EXAMPLES]
    example["evidence"] = [
        {"source": e[1], "value": e[3], "process": e[2], "time_ns": e[0]} for e in entries[: a.MAX_EXAMPLES]
    ]
    return example, window


def _reordered(inst: Row, idx: _Index) -> tuple[Row, Window]:
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


def _poll_pair(inst: Row, idx: _Index) -> tuple[Row, Window]:
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


BUILDERS: dict[str, Callable[[Row, _Index], tuple[Row, Window]]] = {
    a.LOST: _write_example,
    a.FAILED_PRESENT: _failed_present,
    a.RECOVERED: _recovered,
    a.DUPLICATE: _duplicate,
    a.PHANTOM: _phantom,
    a.VANISHED_READ: _vanished,
    a.DIVERGENCE: _divergence,
    a.REORDERED: _reordered,
    a.NONMONOTONIC_POLL: _poll_pair,
    a.POLL_SKIP: _poll_pair,
    a.ABORTED_READ: _aborted_read,
    a.UNCOMMITTED_READ: _uncommitted_read,
    a.TORN_TRANSACTION: _torn,
    a.UNREADABLE: _unreadable,
    a.REPROCESSED: _reprocessed,
    a.SKIPPED_INPUT: _skipped_input,
}


def _wanted(instances: dict[str, list[Row]]) -> tuple[set[str], set[Position]]:
    values: set[str] = set()
    positions: set[Position] = set()
    for name, rows in instances.items():
        for inst in rows:
            if name == a.DIVERGENCE:
                positions.add((inst["topic"], inst["partition"], inst["offset"]))
            else:
                values.add(inst["value"])
            if inst.get("prev_value") is not None:
                values.add(inst["prev_value"])
    return values, positions


TXN_FIELDS = ("txn", "process", "intent", "status", "error", "begin_ns", "end_ns", "complete_ns", "group")


def _transactions(context: Context, evidence: Evidence) -> dict[str, Row]:
    """The `transactions` rows of the evidence's writes, by txn."""
    wanted = sorted({w["txn"] for w in evidence.writes if w.get("txn") is not None})
    table = context.transactions
    if table is None or not wanted:
        return {}
    rows = table.filter(pc.is_in(table.column("txn"), value_set=pa.array(wanted, type=pa.string())))
    return {row["txn"]: row for row in rows.select(list(TXN_FIELDS)).to_pylist()}


def build_examples(analysis: Analysis, engine: Engine, context: Context) -> dict[str, list[Row]]:
    """The verdict's ``examples``: per anomaly with instances, in instance order."""
    instances = {k: v for k, v in analysis.instances.items() if v}
    if not instances:
        return {}
    values, positions = _wanted(instances)
    evidence = engine.evidence(sorted(values), sorted(positions))
    idx = _Index(evidence, _transactions(context, evidence),
                 frozenset(p for p, c in context.configs.items() if c.read_committed))
    examples: dict[str, list[Row]] = {}
    for name in a.ANOMALIES:
        out = []
        for inst in instances.get(name, []):
            example, (lo, hi) = BUILDERS[name](inst, idx)
            example["classified"] = "error" if inst["is_error"] else "info"
            if context.faults is not None:
                example["faults"] = context.faults.active(lo, hi)
            if context.leaders is not None:
                example["leaders"] = context.leaders.claims(example["topic"], example["partition"], lo, hi)
            out.append(example)
        if out:
            examples[name] = out
    return examples
