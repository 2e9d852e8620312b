"""How the examples of contract v3's anomalies are written: each leads to the group, the member, the commit and
the reads.

Builders in checkers.example_builders' shape (an instance row and an `EvidenceIndex`, returning the example
and its time window). The reads come from the evidence (the value's rows); the commits from the index's
group commits (checkers.group_terms, loaded whole by the context), so both engines' examples are the same
rows picked by the same rules here:

- the commit that passed a record at offset o: the first (by completion, one not completed after every
  completed one, then invocation, process, kind, offset) acknowledged commit of the group for its partition with an offset greater than o (for `rewound`,
  completed strictly before the read);
- a lost commit's: the acknowledged commit with the greatest offset (the first completed among equals).

Must never: name an anomaly, or import checkers.anomalies or checkers.group_terms at run time (the records
import this module).
"""

from __future__ import annotations

from typing import Any

from checkers.example_builders import MAX_EXAMPLES, EvidenceIndex, Row, Window

COMMIT_FIELDS = ("process", "kind", "offset", "status", "error", "invoke_ns", "complete_ns")
GROUP_READ_FIELDS = ("process", "seq", "topic", "partition", "offset", "poll_ns")


def _of_partition(table: Any, group: str, topic: str, partition: int) -> Any:
    """The rows of an Arrow table of commits that belong to one group's partition."""
    import pyarrow.compute as pc  # here: the anomaly records import this module, and client hosts have no pyarrow

    mask = pc.and_(pc.and_(pc.equal(table.column("group"), group), pc.equal(table.column("topic"), topic)),
                   pc.equal(table.column("partition"), partition))
    return table.filter(mask)


def _acknowledged(idx: EvidenceIndex, group: str, topic: str, partition: int) -> Any:
    """The group's acknowledged commits for one partition (COMMIT_FIELDS) in the commit order (the module
    docstring's), as an Arrow table (None without group commits); sorted once per partition and check
    (``idx.group_commits``): a partition may hold a commit every few records, and each example looks into it."""
    import pyarrow.compute as pc

    key = (group, topic, partition)
    if idx.groups is not None and key not in idx.group_commits:
        rows = _of_partition(idx.groups.acknowledged(), group, topic, partition).select(list(COMMIT_FIELDS))
        order = pc.sort_indices(rows, sort_keys=[(k, "ascending", "at_end") for k in (
            "complete_ns", "invoke_ns", "process", "kind", "offset")])
        idx.group_commits[key] = rows.take(order)
    return idx.group_commits.get(key)


def _first(rows: Any, mask: Any) -> Row | None:
    """The first of ``rows`` (an Arrow table) where ``mask`` holds, as a row (None: nowhere, or no rows)."""
    if rows is None:
        return None
    found = rows.filter(mask)
    return found.slice(0, 1).to_pylist()[0] if found.num_rows else None


def _passed(idx: EvidenceIndex, inst: Row, before: int | None = None) -> Row | None:
    """The first acknowledged commit of the instance's group for its partition with an offset above the instance's
    (and, given ``before``, completed strictly before it)."""
    import pyarrow.compute as pc

    rows = _acknowledged(idx, inst["group"], inst["topic"], inst["partition"])
    if rows is None:
        return None
    mask = pc.greater(rows.column("offset"), inst["offset"])
    if before is not None:
        mask = pc.and_(mask, pc.less(rows.column("complete_ns"), before))  # null (not completed): not before
    return _first(rows, pc.fill_null(mask, False))


def _final(idx: EvidenceIndex, group: str, topic: str, partition: int) -> Row | None:
    if idx.groups is None:
        return None
    rows = _of_partition(idx.groups.finals, group, topic, partition)
    found = rows.select(["process", "offset", "invoke_ns", "complete_ns"]).to_pylist()
    return found[0] if found else None


def _commit_window(commit: Row) -> Window:
    end = commit["complete_ns"] if commit["complete_ns"] is not None else commit["invoke_ns"]
    return min(commit["invoke_ns"], end), max(commit["invoke_ns"], end)


def _head(inst: Row, *fields: str) -> Row:
    return {"value": inst["value"], "topic": inst["topic"], "partition": inst["partition"], "offset": inst["offset"],
            "group": inst["group"], "process": inst["process"], **{k: inst[k] for k in fields}}


def _group_reads(inst: Row, idx: EvidenceIndex) -> list[Row]:
    return [{k: r[k] for k in GROUP_READ_FIELDS} for r in idx.reads[inst["value"]]
            if r["phase"] == "live" and r.get("group") == inst["group"]][:MAX_EXAMPLES]


def group_skip(inst: Row, idx: EvidenceIndex) -> tuple[Row, Window]:
    """The record in F, the member it is judged by, the group's final committed offset and the commit that passed
    it (null when no acknowledged commit did: the final offset alone is past it)."""
    example = _head(inst)
    final = _final(idx, inst["group"], inst["topic"], inst["partition"])
    example["committed"] = final
    passed = _passed(idx, inst)
    example["commit"] = passed
    example["final_positions"] = [{"topic": t, "partition": p, "offset": o}
                                  for t, p, o in idx.final_positions(inst["value"])[:MAX_EXAMPLES]]
    if passed:
        return example, _commit_window(passed)
    at = final["invoke_ns"] if final else 0
    return example, (at, at)


def redelivered(inst: Row, idx: EvidenceIndex) -> tuple[Row, Window]:
    """The first group read of the record (its member) and every group read of it (`reads`)."""
    example = _head(inst, "seq", "poll_ns")
    example["reads"] = _group_reads(inst, idx)
    polls = [r["poll_ns"] for r in example["reads"]] or [inst["poll_ns"]]
    return example, (min(polls), max(polls))


def rewound(inst: Row, idx: EvidenceIndex) -> tuple[Row, Window]:
    """The first read of the record after an acknowledged commit of the group had passed it, and that commit."""
    example = _head(inst, "seq", "poll_ns")
    passed = _passed(idx, inst, before=inst["poll_ns"])
    example["commit"] = passed
    example["reads"] = _group_reads(inst, idx)
    start = passed["complete_ns"] if passed else inst["poll_ns"]
    return example, (min(start, inst["poll_ns"]), inst["poll_ns"])


def lost_commit(inst: Row, idx: EvidenceIndex) -> tuple[Row, Window]:
    """The group's partition, its final committed offset (`offset`, null: none) and the acknowledged commit with
    the greatest offset, whose member is the example's `process`."""
    import pyarrow.compute as pc

    group, topic, partition = inst["group"], inst["topic"], inst["partition"]
    final = _final(idx, group, topic, partition)
    acked = _acknowledged(idx, group, topic, partition)
    # the greatest offset's first commit in the commit order (None: no acknowledged commit)
    best = None if acked is None or not acked.num_rows else _first(acked, pc.equal(acked.column("offset"),
                                                                                   pc.max(acked.column("offset"))))
    example: Row = {"value": None, "topic": topic, "partition": partition,
                    "offset": final["offset"] if final else None, "group": group,
                    "process": best["process"] if best else inst["process"], "committed": final, "commit": best}
    lo = best["invoke_ns"] if best else (final["invoke_ns"] if final else 0)
    hi = final["invoke_ns"] if final else lo
    return example, (min(lo, hi), max(lo, hi))
