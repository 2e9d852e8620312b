"""Hand-worked histories, one or more per anomaly, with their counts worked out by hand.

Each comment says why the counts are what they are. Producer `p` has a
`processes` row unless a case says otherwise.
"""

from __future__ import annotations

from tests.checkers.histories import Case, proc, r, reads, w

ALL_ACKS = proc("p", acks="all")

# lost: b (acks=all) is acknowledged at offset 1 but F holds only offsets 0 and 2.
# x comes from q with acks=0: no offset, absent from F: lost too, but only information.
LOST = Case(
    writes=[
        w("a", 1, offset=0),
        w("b", 2, offset=1),
        w("x", 1, offset=None, process="q"),
        w("y", 2, offset=None, process="q"),
    ],
    reads=reads(r("a", 0), r("y", 2)),
    processes=[ALL_ACKS, proc("q", acks=0)],
    counts={"lost": 2},
    errors={"lost": 1},
)

# duplicate: a (p, not idempotent) sits at offsets 0 and 2; b (q, idempotent) at 1, 3 and 4.
# A second drain re-reading offset 0 is the same position, not another one. 2 values, 1 error (b).
DUPLICATE = Case(
    writes=[w("a", 1, offset=0), w("b", 1, offset=1, process="q")],
    reads=reads(r("a", 0), r("b", 1), r("a", 2), r("b", 3), r("b", 4), r("a", 0, process="drain2")),
    processes=[proc("p", acks=1), proc("q", acks="all", enable_idempotence=True)],
    counts={"duplicate": 2},
    errors={"duplicate": 1},
)

# divergence: a and b were both acknowledged at offset 0; F holds a there. Position 0 holds
# two values (1 divergence) and b is nowhere in F (1 lost). c agrees everywhere.
DIVERGENCE = Case(
    writes=[w("a", 1, offset=0), w("b", 2, offset=0), w("c", 3, offset=1)],
    reads=reads(r("a", 0, "live"), r("c", 1, "live"), r("a", 0), r("c", 1)),
    processes=[ALL_ACKS],
    counts={"divergence": 1, "lost": 1},
    errors={"divergence": 1, "lost": 1},
)

# divergence between a live read and the final log: offset 1 was read live as b, finally as c
# (c was an unacknowledged write that survived: recovered). b vanished from F.
DIVERGENCE_LIVE = Case(
    writes=[w("a", 1, offset=0), w("b", 2, status="info", offset=None), w("c", 3, status="info")],
    reads=reads(r("a", 0, "live"), r("b", 1, "live"), r("a", 0), r("c", 1)),
    processes=[ALL_ACKS],
    counts={"divergence": 1, "vanished-read": 1, "recovered": 1},
    errors={"divergence": 1, "vanished-read": 1},
)

# phantom: z (in F) and q (live only) were never written: 2 phantoms; q also vanished.
PHANTOM = Case(
    writes=[w("a", 1, offset=0)],
    reads=reads(r("a", 0, "live"), r("z", 1, "live"), r("q", 2, "live"), r("a", 0), r("z", 1)),
    processes=[ALL_ACKS],
    counts={"phantom": 2, "vanished-read": 1},
    errors={"phantom": 2, "vanished-read": 1},
)

# vanished-read: b (never acknowledged) was read live at offset 1, then truncated away:
# it is not in F. Not lost (never acknowledged), not recovered (not in F).
VANISHED = Case(
    writes=[w("a", 1, offset=0), w("b", 2, status="info", complete=False)],
    reads=reads(r("a", 0, "live"), r("b", 1, "live"), r("a", 0)),
    processes=[ALL_ACKS],
    counts={"vanished-read": 1},
    errors={"vanished-read": 1},
)

# failed-present: b was reported failed (definitely not written) yet F holds it at offset 1.
# f also failed and never appears: not counted.
FAILED_PRESENT = Case(
    writes=[w("a", 1, offset=0), w("b", 2, status="fail"), w("f", 3, status="fail")],
    reads=reads(r("a", 0, "live"), r("b", 1, "live"), r("a", 0), r("b", 1)),
    processes=[ALL_ACKS],
    counts={"failed-present": 1},
    errors={"failed-present": 1},
)

# recovered: b timed out (info, no completion) but is in F; c timed out and is not. Information only.
RECOVERED = Case(
    writes=[w("a", 1, offset=0), w("b", 2, status="info", complete=False), w("c", 3, status="info")],
    reads=reads(r("a", 0), r("b", 1)),
    processes=[ALL_ACKS],
    counts={"recovered": 1},
    errors={},
)

# reordered (p idempotent): partition 0 in op order a, b, c placed at 1, 0, 2: (a, b) decreases.
# x (op 4) is acknowledged at 3 but absent from F: lost, and skipped when ordering.
# Partition 1: f, g, h placed at 1, (g absent: lost), 0: after skipping g, (f, h) decreases.
REORDERED = Case(
    writes=[
        w("a", 1, offset=1),
        w("b", 2, offset=0),
        w("c", 3, offset=2),
        w("x", 4, offset=3),
        w("f", 6, offset=1, partition=1),
        w("g", 7, offset=2, partition=1),
        w("h", 8, offset=0, partition=1),
    ],
    reads=reads(r("b", 0), r("a", 1), r("c", 2), r("h", 0, partition=1), r("f", 1, partition=1)),
    processes=[proc("p", acks="all", enable_idempotence=True)],
    counts={"reordered": 2, "lost": 2},
    errors={"reordered": 2, "lost": 2},
)

_P0 = [w(f"v{i}", i + 1, offset=i) for i in range(4)]
_P1 = [w("u5", 5, offset=5, partition=1)]
_FINAL = [r(f"v{i}", i) for i in range(4)] + [r("u5", 5, partition=1)]

# nonmonotonic-poll: fixed-assignment consumer c reads partition 0 at 0,1,2,1,2,3: (2,1) goes back;
# partition 1 at 5,5: (5,5) does not advance. 2 pairs, both errors (c has a row, no group).
NONMONOTONIC = Case(
    writes=_P0 + _P1,
    reads=reads(
        *[r(f"v{o}", o, "live") for o in (0, 1, 2, 1, 2, 3)],
        r("u5", 5, "live", partition=1),
        r("u5", 5, "live", partition=1),
        *_FINAL,
    ),
    processes=[ALL_ACKS, proc("c", role="consumer")],
    counts={"nonmonotonic-poll": 2},
    errors={"nonmonotonic-poll": 2},
)

# poll-skip: c reads partition 0 at 0, 1, then 3: F holds offset 2, so (1, 3) skipped a record.
# Partition 1 at 0, then 2: F holds nothing at 1 (a transaction marker, say): no skip.
POLL_SKIP = Case(
    writes=[w(f"v{i}", i + 1, offset=i) for i in range(4)]
    + [w("m0", 10, offset=0, partition=1), w("m2", 11, offset=2, partition=1)],
    reads=reads(
        r("v0", 0, "live"),
        r("v1", 1, "live"),
        r("v3", 3, "live"),
        r("m0", 0, "live", partition=1),
        r("m2", 2, "live", partition=1),
        *[r(f"v{i}", i) for i in range(4)],
        r("m0", 0, partition=1),
        r("m2", 2, partition=1),
    ),
    processes=[ALL_ACKS],
    counts={"poll-skip": 1},
    errors={"poll-skip": 1},
)

# Values at several positions, each pair differing in one column only. a is in F at partitions
# 0 and 1 (offset 0): a duplicate, and (t,1,0) also holds b: a divergence. c was read live in
# topic u at offset 1, where d was acknowledged and is in F: a divergence, not a duplicate (F
# holds c once). e is in F at offsets 2 and 3: a duplicate. p is not idempotent: duplicates
# are information, divergences errors.
SCATTERED = Case(
    writes=[
        w("a", 1, offset=0),
        w("b", 2, offset=0, partition=1),
        w("c", 3, offset=1),
        w("d", 4, offset=1, topic="u"),
        w("e", 5, offset=2),
    ],
    reads=reads(
        r("c", 1, "live", topic="u"),
        r("a", 0),
        r("a", 0, partition=1),
        r("b", 0, partition=1),
        r("c", 1),
        r("d", 1, topic="u"),
        r("e", 2),
        r("e", 3),
    ),
    processes=[ALL_ACKS],
    counts={"duplicate": 2, "divergence": 2},
    errors={"divergence": 2},
)

# A clean history: everything acknowledged is in F once, read live in order.
CLEAN = Case(
    writes=[w(f"v{i}", i + 1, offset=i) for i in range(3)],
    reads=reads(*[r(f"v{i}", i, "live") for i in range(3)], *[r(f"v{i}", i) for i in range(3)]),
    processes=[ALL_ACKS],
    counts={},
    errors={},
)

CASES: dict[str, Case] = {
    "lost": LOST,
    "duplicate": DUPLICATE,
    "divergence": DIVERGENCE,
    "divergence-live": DIVERGENCE_LIVE,
    "phantom": PHANTOM,
    "vanished-read": VANISHED,
    "failed-present": FAILED_PRESENT,
    "recovered": RECOVERED,
    "reordered": REORDERED,
    "nonmonotonic-poll": NONMONOTONIC,
    "poll-skip": POLL_SKIP,
    "scattered": SCATTERED,
    "clean": CLEAN,
}
