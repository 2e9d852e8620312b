"""Turn engine instances into the verdict's examples.

Shared by both engines so their examples are identical: an engine hands
over at most MAX_EXAMPLES instance rows per anomaly, already ordered; this
module looks up the rows needed to describe each one (one `Engine.evidence`
call), has each anomaly's builder (its record's, checkers.example_builders)
write it, then adds the faults active and the leaders claimed around it.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from checkers import anomalies as a
from checkers.context import Context
from checkers.engine import Analysis, Engine, Evidence, Position
from checkers.example_builders import EvidenceIndex, Row


def _wanted(instances: dict[str, list[Row]], registry: a.Registry) -> tuple[set[str], set[Position]]:
    """The values and positions whose rows the examples need (an anomaly located by position: its position)."""
    values: set[str] = set()
    positions: set[Position] = set()
    for name, rows in instances.items():
        for inst in rows:
            located_by = registry[name].located_by
            if located_by == "position":
                positions.add((inst["topic"], inst["partition"], inst["offset"]))
            elif located_by == "value":
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


def build_examples(analysis: Analysis, engine: Engine, context: Context,
                   registry: a.Registry = a.REGISTRY) -> dict[str, list[Row]]:
    """The verdict's ``examples``: per anomaly with instances, in instance order."""
    instances = {k: v for k, v in analysis.instances.items() if v}
    if not instances:
        return {}
    values, positions = _wanted(instances, registry)
    evidence = engine.evidence(sorted(values), sorted(positions))
    idx = EvidenceIndex(evidence, _transactions(context, evidence),
                        frozenset(p for p, c in context.configs.items() if c.read_committed), context.groups)
    examples: dict[str, list[Row]] = {}
    for record in registry:
        out = []
        for inst in instances.get(record.name, []):
            example, (lo, hi) = record.example(inst, idx)
            example["classified"] = "error" if inst["is_error"] else "info"
            if context.faults is not None:
                example["faults"] = context.faults.active(lo, hi)
            if context.leaders is not None:
                example["leaders"] = context.leaders.claims(example["topic"], example["partition"], lo, hi)
            out.append(example)
        if out:
            examples[record.name] = out
    return examples
