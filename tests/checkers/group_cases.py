"""Hand-worked contract v3 histories (consumer groups: commits, the final drain's committed offsets).

Each comment works the counts out by hand from spec/history.md's v3 rules. Producer `p` (acks=all) writes
every value, acknowledged at its offset; the drain reads every one into F. Group reads carry explicit poll
times (ms after T0), commits explicit invoke and completion times, so each rule's edge is where the comment
says.
"""

from __future__ import annotations

from typing import Any

from tests.checkers.histories import T0, Case, Row, proc, r, reads, w

MS = 1_000_000
P = proc("p", acks="all")


def member(process: str, commit: str | None, reset: str = "latest", group: str = "g") -> Row:
    """A group member's `processes` row (contract v3: `commit` and the group settings in `config`)."""
    return {**proc(process, "consumer", group_id=group, auto_offset_reset=reset, enable_auto_commit=commit == "auto"),
            "commit": commit}


def gr(value: str, offset: int, process: str, poll_ms: int, group: str = "g", partition: int = 0) -> Row:
    """A group read (live, with its group) polled at T0 + poll_ms ms."""
    return r(value, offset, "live", process=process, partition=partition, group=group, poll_ms=poll_ms)


def cm(offset: int | None, process: str, at_ms: int, done_ms: int | None = None, status: str = "ok",
       kind: str = "sync", group: str = "g", partition: int = 0, topic: str = "t") -> Row:
    """A `commits` row: invoked at T0 + at_ms ms, its outcome at done_ms (default 5 ms later; None: never)."""
    done = at_ms + 5 if done_ms is None and status != "info" else done_ms
    return {"process": process, "group": group, "kind": kind, "topic": topic, "partition": partition,
            "offset": offset, "status": status, "error": None if status == "ok" else "ILLEGAL_GENERATION",
            "invoke_ns": T0 + at_ms * MS, "complete_ns": None if done is None else T0 + done * MS, "az": "az1"}


def final(offset: int | None, group: str = "g", partition: int = 0, topic: str = "t") -> Row:
    """The final drain's row: the group's committed offset (None: none) after the heal."""
    return cm(offset, "drain", 10_000, 10_001, kind="final", group=group, partition=partition, topic=topic)


def log(n: int, partition: int = 0, prefix: str = "v") -> tuple[list[Row], list[Row]]:
    """n values written at offsets 0..n-1 of one partition, and F holding each."""
    writes = [w(f"{prefix}{i}", 100 * partition + i + 1, offset=i, partition=partition) for i in range(n)]
    return writes, [r(f"{prefix}{i}", i, partition=partition) for i in range(n)]


def case(n: int, live: list[Row], commits: list[Row], members: list[Row], counts: dict[str, int],
         errors: dict[str, int], **more: Any) -> Case:
    writes, f = log(n)
    extra_writes, extra_f = more.pop("partition1", ([], []))
    return Case(writes=writes + extra_writes, reads=reads(*live, *f, *extra_f), processes=[P, *members],
                extra={"commits": commits}, counts=counts, errors=errors)


# at-most-once: m1 (before) committed 5 after reading v0..v2 and died before recording v3, v4; m2 took over
# at 5. F holds v3 and v4 below C = 10, no read of g holds them, and they are above g's lowest read (0):
# 2 group-skips, information (no member commits after). Nothing read twice, nothing read below a commit.
GROUP_SKIP_BEFORE = case(
    10, [gr("v0", 0, "m1", 100), gr("v1", 1, "m1", 100), gr("v2", 2, "m1", 100),
         *(gr(f"v{i}", i, "m2", 200) for i in range(5, 10))],
    [cm(3, "m1", 100), cm(5, "m1", 110), cm(10, "m2", 200), final(10)],  # each poll's commit from its poll time
    [member("m1", "before"), member("m2", "before")], {"group-skip": 2}, {})

# The same skip with every member committing after: an error each (at-least-once promises no skip).
GROUP_SKIP_AFTER = case(
    10, [gr("v0", 0, "m1", 100), gr("v1", 1, "m1", 100), gr("v2", 2, "m1", 100),
         *(gr(f"v{i}", i, "m2", 200) for i in range(5, 10))],
    [cm(3, "m1", 110), cm(10, "m2", 210), final(10)],
    [member("m1", "after"), member("m2", "after")], {"group-skip": 2}, {"group-skip": 2})

# Starting at the beginning or not. Group `late` (a, reset latest) and group `early` (b, reset earliest) each
# read v3..v5 of partition 0 and commit 6; both have C = 6 on partition 0 and C = 2 on partition 1, which
# neither read. late: v0..v2 are below its lowest read (3) and partition 1 has no read of late: 0.
# early starts at the beginning: v0, v1, v2 and u0, u1 (partition 1) count: 5 errors (b commits after).
GROUP_SKIP_START = case(
    6, [*(gr(f"v{i}", i, "a", 100, group="late") for i in range(3, 6)),
        *(gr(f"v{i}", i, "b", 100, group="early") for i in range(3, 6))],
    [cm(6, "a", 110, group="late"), cm(6, "b", 110, group="early"), final(6, "late"), final(6, "early"),
     final(2, "late", partition=1), final(2, "early", partition=1)],
    [member("a", "after", group="late"), member("b", "after", "earliest", group="early")],
    {"group-skip": 5}, {"group-skip": 5}, partition1=log(2, partition=1, prefix="u"))

# A member without a `processes` row: m2 only committed (no group read) and has no commit mode, so g's skip
# of v2 (m1 read 0, 1, 3; C = 4) is information although m1 commits after. m1's jump 1 -> 3 over v2 (in F)
# is a poll-skip, information in a history with group commits (m1 has a group read).
MEMBER_WITHOUT_ROW = case(
    4, [gr("v0", 0, "m1", 100), gr("v1", 1, "m1", 100), gr("v3", 3, "m1", 200)],
    [cm(1, "m2", 150), cm(4, "m1", 210), final(4)],
    [member("m1", "after")], {"group-skip": 1, "poll-skip": 1}, {})

# redelivered: m1 read v1 twice (a repeat by one member: a nonmonotonic-poll, information for a group
# consumer) and v2, then died before committing past 2; m2 read v2 again and v3. 2 values read twice by g,
# information. No commit had passed either when it was read again (m1's 2 completed at 115, after both).
REDELIVERED = case(
    4, [gr("v0", 0, "m1", 100), gr("v1", 1, "m1", 100), gr("v1", 1, "m1", 105), gr("v2", 2, "m1", 105),
        gr("v2", 2, "m2", 110), gr("v3", 3, "m2", 110)],
    [cm(2, "m1", 110, 115), cm(4, "m2", 120), final(4)],
    [member("m1", "after"), member("m2", "after")], {"redelivered": 2, "nonmonotonic-poll": 1}, {})

# rewound: m1 read v0..v3 and committed 4 (completed at 110). m2 read v3 at exactly 110 (equal times do not
# count), m3 read v2 at 120 (after the commit: rewound). m4's commit of 8 was refused (fail: it passes
# nothing), and m4 read v1 at 300, rewound by m1's 4. v1, v2, v3 each read twice: 3 redelivered.
# 2 rewound (v1, v2), errors.
REWOUND = case(
    4, [*(gr(f"v{i}", i, "m1", 100) for i in range(4)), gr("v3", 3, "m2", 110), gr("v2", 2, "m3", 120),
        gr("v1", 1, "m4", 300)],
    [cm(4, "m1", 105, 110), cm(8, "m4", 250, status="fail"), final(4)],
    [member(m, "after") for m in ("m1", "m2", "m3", "m4")], {"rewound": 2, "redelivered": 3}, {"rewound": 2})

# lost-commit, per partition of g: 0 acknowledged 5 (and 6, with no completion time: still acknowledged), kept
# 3: lost. 1: acknowledged 2, no committed offset at all (C null): lost. 2: acknowledged 4, kept 4, and 9
# refused: kept. 3: acknowledged 7 but no final row: not judged. 2 errors. Nothing read by g: no group-skip.
LOST_COMMIT = case(
    1, [],
    [cm(5, "m1", 100), cm(6, "m1", 120, None), cm(2, "m1", 100, partition=1), cm(4, "m1", 100, partition=2),
     cm(9, "m1", 130, status="fail", partition=2), cm(7, "m1", 100, partition=3),
     final(3), final(None, partition=1), final(4, partition=2)],
    [member("m1", "after")], {"lost-commit": 2}, {"lost-commit": 2})

# Two groups read the same values once each (v0..v2, g1 by a, g2 by b), and a read v1 twice (adjacent, as in
# REDELIVERED: one nonmonotonic-poll): redelivered is g1's v1 only, not a value two groups read.
TWO_GROUPS = case(
    3, [gr("v0", 0, "a", 100, group="g1"), gr("v1", 1, "a", 100, group="g1"), gr("v1", 1, "a", 105, group="g1"),
        gr("v2", 2, "a", 105, group="g1"), *(gr(f"v{i}", i, "b", 100, group="g2") for i in range(3))],
    [cm(3, "a", 110, group="g1"), cm(3, "b", 110, group="g2"), final(3, "g1"), final(3, "g2")],
    [member("a", "after", group="g1"), member("b", "after", group="g2")],
    {"redelivered": 1, "nonmonotonic-poll": 1}, {})

# Clean at-least-once: two members, each commits after reading; C = 6, every value read once, in order.
CLEAN_GROUP = case(
    6, [*(gr(f"v{i}", i, "m1", 100) for i in range(3)), *(gr(f"v{i}", i, "m2", 200) for i in range(3, 6))],
    [cm(3, "m1", 110), cm(6, "m2", 210), cm(6, "m2", 220, kind="async"), cm(6, "m1", 300, status="info"),
     final(6)],
    [member("m1", "after"), member("m2", "after")], {}, {})

GROUP_CASES: dict[str, Case] = {
    "group-skip-before": GROUP_SKIP_BEFORE,
    "group-skip-after": GROUP_SKIP_AFTER,
    "group-skip-start": GROUP_SKIP_START,
    "member-without-row": MEMBER_WITHOUT_ROW,
    "redelivered": REDELIVERED,
    "rewound": REWOUND,
    "lost-commit": LOST_COMMIT,
    "clean-group": CLEAN_GROUP,
    "two-groups": TWO_GROUPS,
}
