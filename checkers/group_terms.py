"""Contract v3 (spec/history.md, "Consumer groups and delivery semantics"): what both engines share.

The `commits` table, loaded and validated once here (the malformed rules the column domains do not
cover: a `final` row that is not `ok`, a non-final row with a null offset, two `final` rows for one
(group, topic, partition)), split into the members' commits and the final drain's rows; the stats; the
"unknown" of a group whose committed offsets the drain never read; the processes that commit for a
group; and the rules a history with group commits restates (poll-skip of group readers is information,
group-skip judged over every member). A history **has group commits** when its `commits` table has a
row; one without gets no v3 work at all (`prepare` returns None) and every v3 count is 0.

Must never: hold `writes` or `reads` (each engine reads those itself) or name a rule's words (the anomaly
records own them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

import pyarrow as pa
import pyarrow.compute as pc

from checkers import anomalies as a
from checkers.classify import ClientConfig, Rule
from checkers.errors import HistoryError
from checkers.sources import TableSource
from checkers.tables import load_table

GROUP_STATS = ("commits", "commits_ok")
GroupPartition = tuple[str, str, int]  # (group, topic, partition)


@dataclass(frozen=True)
class GroupTerms:
    """A history's group commits: the members' commit rows and the final drain's, validated."""

    commits: pa.Table  # the non-final rows (sync, async, auto), canonical types
    finals: pa.Table  # the final rows: one per (group, topic, partition) at most

    @property
    def committers(self) -> frozenset[str]:
        """The processes with a non-final commit (members of their groups even without a group read)."""
        return frozenset(pc.unique(self.commits.column("process")).to_pylist())

    def final_offsets(self) -> dict[GroupPartition, int | None]:
        """C(G, t, p) for every (group, topic, partition) with a final row (None: no committed offset there)."""
        cols = (self.finals.column(c).to_pylist() for c in ("group", "topic", "partition", "offset"))
        return {(g, t, p): o for g, t, p, o in zip(*cols, strict=True)}

    def acknowledged(self) -> pa.Table:
        """The acknowledged commits: non-final rows of status ok."""
        return self.commits.filter(pc.equal(self.commits.column("status"), "ok"))


def _where(source: TableSource, column: str) -> str:
    return f"{source.describe()}: column '{column}'"


def _row(table: pa.Table, i: int) -> str:
    row = table.slice(i, 1).to_pylist()[0]
    return (f"row {i + 1} (process={row['process']!r}, group={row['group']!r}, kind={row['kind']!r}, "
            f"topic={row['topic']!r}, partition={row['partition']})")


def validate(table: pa.Table, source: TableSource) -> None:
    """HistoryError naming the first row that breaks a rule of the `commits` table beyond its column domains."""
    # Only a final row or a row without an offset can break one: those rows alone go to Python, in order.
    suspect = pc.fill_null(pc.or_(pc.equal(table.column("kind"), "final"), pc.is_null(table.column("offset"))), True)
    at = pc.indices_nonzero(suspect)
    rows = table.take(at)
    kind, status, offset = (rows.column(c).to_pylist() for c in ("kind", "status", "offset"))
    seen: dict[GroupPartition, int] = {}
    keys = zip(*(rows.column(c).to_pylist() for c in ("group", "topic", "partition")), strict=True)
    for i, k, s, o, key in zip(at.to_pylist(), kind, status, offset, keys, strict=True):
        if k == "final" and s != "ok":
            raise HistoryError(_where(source, "status"), f"{_row(table, i)}: a final row is always ok, not {s!r}")
        if k != "final" and o is None:
            raise HistoryError(_where(source, "offset"), f"{_row(table, i)}: a {k} commit needs an offset")
        if k == "final" and seen.setdefault(key, i) != i:
            raise HistoryError(_where(source, "kind"), f"{_row(table, i)}: a second final row for group "
                               f"{key[0]!r}, topic {key[1]!r}, partition {key[2]} (the first is row {seen[key] + 1})")


def _file_key(source: TableSource) -> tuple[object, ...]:
    return (source, *((f.stat().st_mtime_ns, f.stat().st_size) for f in source.files))


@lru_cache(maxsize=4)
def _load(key: tuple[object, ...]) -> GroupTerms:
    source = key[0]
    assert isinstance(source, TableSource)
    table = load_table(source)
    validate(table, source)
    final = pc.equal(table.column("kind"), "final")
    return GroupTerms(commits=table.filter(pc.invert(final)), finals=table.filter(final))


def prepare(sources: dict[str, TableSource]) -> GroupTerms | None:
    """The v3 terms of a history (loaded and validated once per file version), or None without group commits.

    HistoryError when the `commits` table breaks the contract (malformed wins over unknown).
    """
    if "commits" not in sources:
        return None
    terms = _load(_file_key(sources["commits"]))
    return terms if terms.commits.num_rows + terms.finals.num_rows else None


def stats(sources: dict[str, TableSource]) -> dict[str, int]:
    """`commits` (non-final rows) and `commits_ok`, for a history with a `commits` table; none without one."""
    if "commits" not in sources:
        return {}
    terms = _load(_file_key(sources["commits"]))
    return {"commits": terms.commits.num_rows, "commits_ok": terms.acknowledged().num_rows}


def unknown_reason(terms: GroupTerms | None) -> str | None:
    """Why the verdict is unknown: a group with non-final commits and no final row (None: every group has one)."""
    if terms is None:
        return None
    missing = sorted(set(pc.unique(terms.commits.column("group")).to_pylist())
                     - set(terms.finals.column("group").to_pylist()))
    if not missing:
        return None
    more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
    return (f"group {missing[0]!r}{more} committed offsets but the history has no final row for it: the drain never "
            "read its committed offsets, so nothing can be judged")


def after(configs: Mapping[str, ClientConfig], process: str) -> bool:
    """Whether ``process`` is known to commit after processing (`commit` `after`)."""
    config = configs.get(process)
    return config is not None and config.commit == "after"


@dataclass(frozen=True)
class MemberFlags:
    """What a group's members say about it, for group-skip (spec/history.md, contract v3)."""

    begins: bool  # every member's `auto.offset.reset` starts at the beginning
    judged_by: str  # its least member not known to commit `after`, else its least member


def member_flags(members: Iterable[tuple[str, str]], configs: Mapping[str, ClientConfig]) -> dict[str, MemberFlags]:
    """Per group with a member: its MemberFlags. ``members``: (group, process) pairs, group readers (their live
    reads) and committers (their non-final commits) alike."""
    by_group: dict[str, set[str]] = {}
    for group, process in members:
        by_group.setdefault(group, set()).add(process)
    out = {}
    for group, procs in by_group.items():
        names = sorted(procs)
        begins = all(p in configs and configs[p].from_beginning for p in names)
        out[group] = MemberFlags(begins, min((p for p in names if not after(configs, p)), default=names[0]))
    return out


def committers_by_group(terms: GroupTerms) -> set[tuple[str, str]]:
    """The (group, process) pairs of the members' non-final commits."""
    pairs = terms.commits.select(["group", "process"]).group_by(["group", "process"]).aggregate([])
    return set(zip(pairs.column("group").to_pylist(), pairs.column("process").to_pylist(), strict=True))


def restate_rules(table: dict[str, Rule], terms: GroupTerms | None, configs: Mapping[str, ClientConfig],
                  readers: Iterable[str], registry: a.Registry = a.REGISTRY) -> dict[str, Rule]:
    """The rules of a history with group commits: poll-skip of a process with a group read is information, and
    group-skip is judged over every member (group readers and committers). Without group commits: ``table``."""
    if terms is None:
        return table
    readers = frozenset(readers)
    return {**table, a.POLL_SKIP: Rule("by-process", readers),
            a.GROUP_SKIP: registry[a.GROUP_SKIP].judge(configs, readers | terms.committers)}
