"""Hand-worked contract v2 histories (transactions, read_committed readers, consume-transform-produce).

Each comment works the counts out by hand from spec/history.md's v2 rules. Producer `p` is
transactional (acks=all) unless a case says otherwise; `rc` and `c-rc` read read_committed,
`drain` and `c` read_uncommitted. Every case here has a final read by a read_committed
process unless it says otherwise (else its verdict is "unknown").
"""

from __future__ import annotations

import json
from typing import Any

from tests.checkers.histories import T0, Case, Row, proc, r, reads, w

MS = 1_000_000
P = proc("p", acks="all", transactional_id="p")
READERS = [proc("rc", "drain", isolation_level="read_committed"),
           proc("c-rc", "consumer", isolation_level="read_committed"),
           proc("drain", "drain", isolation_level="read_uncommitted"), proc("c", "consumer")]


def tw(value: str, op_id: int, txn: str | None, offset: int | None = None, status: str = "ok", **kw: Any) -> Row:
    """A `writes` row inside transaction ``txn`` (its own status ``status``)."""
    return {**w(value, op_id, offset=offset, status=status, **kw), "txn": txn}


def tx(txn: str, status: str = "ok", intent: str | None = "commit", end_ms: int | None = 50,
       process: str = "p", consumed: list[dict[str, Any]] | None = None) -> Row:
    """A `transactions` row; begin at T0, end (commit or abort called) at T0 + end_ms ms."""
    return {"process": process, "txn": txn, "intent": intent, "status": status,
            "error": None if status == "ok" or intent == "abort" else "TIMED_OUT", "begin_ns": T0,
            "end_ns": None if end_ms is None else T0 + end_ms * MS,
            "complete_ns": None if end_ms is None else T0 + (end_ms + 5) * MS, "group": "g" if consumed else None,
            "consumed": None if consumed is None else json.dumps(consumed), "az": "az1"}


def both(*values: tuple[str, int], topic: str = "t") -> list[Row]:
    """Final reads of each (value, offset) by the read_committed drain and by the read_uncommitted one."""
    return [r(v, o, process=d, topic=topic) for d in ("rc", "drain") for v, o in values]


def case(writes: list[Row], read_rows: list[Row], txns: list[Row], counts: dict[str, int],
         errors: dict[str, int], processes: list[Row] | None = None) -> Case:
    return Case(writes=writes, reads=reads(*read_rows), processes=[P, *READERS] if processes is None else processes,
                counts=counts, errors=errors, extra={"transactions": txns})


# lost, restated: t1 committed. a's own write timed out (info) but its transaction committed, so a is
# acknowledged, and F lacks it: lost. t2 aborted: d and e were acknowledged by the broker (offsets 3, 4) yet
# are not acknowledged values, so their absence from F is no loss (v1 would count d and e, not a).
# b (committed) is in F. Not torn: a's write status is info, and only `ok` writes make a torn transaction.
TXN_LOST = case(
    writes=[tw("a", 1, "t1", status="info"), tw("b", 2, "t1", offset=1), tw("d", 3, "t2", offset=3),
            tw("e", 4, "t2", offset=4)],
    read_rows=both(("b", 1)),
    txns=[tx("t1"), tx("t2", status="fail", intent="abort")],
    counts={"lost": 1},
    errors={"lost": 1},
)

# vanished-read, restated: x (aborted) and y (committed) were read live by c and are not in F. x is aborted,
# so only y vanished (and y, acknowledged, is lost). z is everywhere.
TXN_VANISHED = case(
    writes=[tw("x", 1, "t1", offset=0), tw("y", 2, "t2", offset=1), tw("z", 3, "t3", offset=2)],
    read_rows=[r("x", 0, "live", process="c"), r("y", 1, "live", process="c"), *both(("z", 2))],
    txns=[tx("t1", status="fail", intent="abort"), tx("t2"), tx("t3")],
    counts={"vanished-read": 1, "lost": 1},
    errors={"vanished-read": 1, "lost": 1},
)

# recovered, restated: t1's outcome is unknown (info). a is in Frc: recovered. b (write ok) is only in Fru:
# a value inside a transaction recovers only in Frc, so b is not recovered (v1 would count it). c, outside any
# transaction with status info, is in F (Fru): recovered. t1 has a in Frc and b (write ok) not: torn.
TXN_RECOVERED = case(
    writes=[tw("a", 1, "t1", offset=0), tw("b", 2, "t1", offset=1), tw("c", 3, None, status="info")],
    read_rows=[r("a", 0, process="rc"), r("a", 0), r("b", 1), r("c", 2)],
    txns=[tx("t1", status="info", end_ms=60)],
    counts={"recovered": 2, "torn-transaction": 1},
    errors={"torn-transaction": 1},
)

# poll-skip, restated: offset 1 holds x (aborted: only the read_uncommitted drain has it), offset 2 a
# transaction marker (no record). c-rc reads 0 then 3: Frc holds nothing in between, no skip. c
# (read_uncommitted) reads 0 then 3: F holds x at 1, a skip. 1 poll-skip.
TXN_POLL_SKIP = case(
    writes=[tw("a", 1, "t1", offset=0), tw("x", 2, "t2", offset=1), tw("b", 3, "t3", offset=3)],
    read_rows=[r("a", 0, "live", process="c-rc"), r("b", 3, "live", process="c-rc"), r("a", 0, "live", process="c"),
               r("b", 3, "live", process="c"), *both(("a", 0), ("b", 3)), r("x", 1)],
    txns=[tx("t1"), tx("t2", status="fail", intent="abort"), tx("t3")],
    counts={"poll-skip": 1},
    errors={"poll-skip": 1},
)

# aborted-read: x (t1, deliberately aborted) was read live by c-rc: an aborted read, and an uncommitted read
# too (its intent is abort). y (t2: commit asked at 50 ms, then failed: aborted) is in Frc: aborted read, but
# commit was asked long before the drain read it: no uncommitted read. w2 (t3 aborted) was read only by c
# (read_uncommitted): nothing.
ABORTED_READ = case(
    writes=[tw("x", 1, "t1", offset=0), tw("y", 2, "t2", offset=1), tw("w2", 3, "t3", offset=2),
            tw("k", 4, "t4", offset=3)],
    read_rows=[r("x", 0, "live", process="c-rc"), r("w2", 2, "live", process="c"), *both(("y", 1), ("k", 3))],
    txns=[tx("t1", status="fail", intent="abort"), tx("t2", status="fail"), tx("t3", status="fail", intent="abort"),
          tx("t4")],
    counts={"aborted-read": 2, "uncommitted-read": 1},
    errors={"aborted-read": 2, "uncommitted-read": 1},
)

# uncommitted-read: c-rc polls a at exactly t1's end (equal times do not count), b at 10 ms before t2's
# end (counts), c whose t3 never ended (end null, intent null: counts; t3's outcome unknown and c is in
# Frc: recovered), d whose t4 has intent null but an end before the poll (null reads as commit: no).
# e is read early only by c (read_uncommitted): no. 2 uncommitted reads.
UNCOMMITTED_READ = case(
    writes=[tw("a", 1, "t1", offset=0), tw("b", 2, "t2", offset=1), tw("c", 3, "t3", offset=2),
            tw("d", 4, "t4", offset=3), tw("e", 5, "t5", offset=4)],
    read_rows=[r("a", 0, "live", process="c-rc", poll_ms=50), r("b", 1, "live", process="c-rc", poll_ms=60),
               r("c", 2, "live", process="c-rc", poll_ms=70), r("d", 3, "live", process="c-rc", poll_ms=80),
               r("e", 4, "live", process="c", poll_ms=20),
               *both(("a", 0), ("b", 1), ("c", 2), ("d", 3), ("e", 4))],
    txns=[tx("t1", end_ms=50), tx("t2", end_ms=70), tx("t3", status="info", intent=None, end_ms=None),
          tx("t4", intent=None, end_ms=60), tx("t5", end_ms=100)],
    counts={"uncommitted-read": 2, "recovered": 1},
    errors={"uncommitted-read": 2},
)

# torn-transaction: t1 committed; a is in Frc, b (write ok) only in Fru: torn, and b is unreadable
# (acknowledged, in Fru, not in Frc). t2 committed with both values in Frc: whole. t3 aborted with c in
# neither: not torn (aborted), not lost.
TORN = case(
    writes=[tw("a", 1, "t1", offset=0), tw("b", 2, "t1", offset=1), tw("e", 3, "t2", offset=2),
            tw("f", 4, "t2", offset=3), tw("c", 5, "t3", offset=4)],
    read_rows=[*both(("a", 0), ("e", 2), ("f", 3)), r("b", 1)],
    txns=[tx("t1"), tx("t2"), tx("t3", status="fail", intent="abort")],
    counts={"torn-transaction": 1, "unreadable": 1},
    errors={"torn-transaction": 1, "unreadable": 1},
)

# unreadable: t1 committed a, which only the read_uncommitted drain reached (the read_committed one stopped
# short, e.g. behind a hanging transaction). No value of t1 is in Frc: not torn. The non-transactional ok
# write n, read only read_uncommitted, is acknowledged: unreadable too. 2.
UNREADABLE = case(
    writes=[tw("k", 1, "t0", offset=0), tw("a", 2, "t1", offset=1), tw("n", 3, None, offset=2)],
    read_rows=[*both(("k", 0)), r("a", 1), r("n", 2)],
    txns=[tx("t0"), tx("t1")],
    counts={"unreadable": 2},
    errors={"unreadable": 2},
)

# reprocessed without transactions (O = F: no read_committed drain): input i1 became o1 and o2 (both by q,
# not transactional): information. Input i2 became o3 (q) and o4 (p, transactional): an error. i3 became
# o5 only, and o6 (also from i3) is not in F: once. 2 reprocessed, 1 an error.
REPROCESSED = Case(
    writes=[w("i1", 1, offset=0, process="src", topic="in"), w("i2", 2, offset=1, process="src", topic="in"),
            w("i3", 3, offset=2, process="src", topic="in"),
            *[{**w(o, n, offset=n - 1, process=pr, topic="out"), "source": s}
              for o, n, pr, s in (("o1", 1, "q", "i1"), ("o2", 2, "q", "i1"), ("o3", 3, "q", "i2"),
                                  ("o5", 5, "q", "i3"), ("o6", 6, "q", "i3"))],
            {**w("o4", 4, offset=3, process="p", topic="out"), "source": "i2"}],
    reads=reads(*[r(v, o, topic="in") for v, o in (("i1", 0), ("i2", 1), ("i3", 2))],
                *[r(v, o, topic="out") for v, o in (("o1", 0), ("o2", 1), ("o3", 2), ("o4", 3), ("o5", 4))]),
    processes=[proc("src", acks="all"), proc("q", "transformer", acks="all"), P, proc("drain", "drain")],
    counts={"reprocessed": 2, "lost": 1},
    errors={"reprocessed": 1, "lost": 1},
)

# skipped-input: transformer p read topic `in` (i0..i3 at offsets 0..3) and committed t1 with consumed offset 3
# (next to read): i0, i1, i2 are marked consumed. Its outputs name i0 and i2; i1 was never processed: 1 skipped
# input. i3 (offset 3) is not below 3. t2 was aborted: its consumed offset 4 does not count.
SKIPPED_INPUT = case(
    writes=[w(f"i{n}", n + 1, offset=n, process="src", topic="in") for n in range(4)]
    + [{**tw("o0", 1, "t1", offset=0, topic="out"), "source": "i0"},
       {**tw("o2", 2, "t1", offset=1, topic="out"), "source": "i2"},
       {**tw("o3", 3, "t2", offset=2, topic="out"), "source": "i3"}],
    read_rows=[*both(*[(f"i{n}", n) for n in range(4)], topic="in"), *both(("o0", 0), ("o2", 1), topic="out"),
               r("o3", 2, topic="out")],
    txns=[tx("t1", consumed=[{"topic": "in", "partition": 0, "offset": 3}]),
          tx("t2", status="fail", intent="abort", consumed=[{"topic": "in", "partition": 0, "offset": 4}])],
    counts={"skipped-input": 1},
    errors={"skipped-input": 1},
    processes=[P, proc("src", acks="all"), *READERS],
)

# A committed transaction fully read both ways, an aborted one that nobody read committed: nothing.
TXN_CLEAN = case(
    writes=[tw("a", 1, "t1", offset=0), tw("b", 2, "t1", offset=1), tw("x", 3, "t2", offset=2)],
    read_rows=[r("a", 0, "live", process="c-rc"), r("b", 1, "live", process="c-rc"), *both(("a", 0), ("b", 1)),
               r("x", 2)],
    txns=[tx("t1", end_ms=1), tx("t2", status="fail", intent="abort")],
    counts={},
    errors={},
)

TXN_CASES: dict[str, Case] = {
    "txn-lost": TXN_LOST,
    "txn-vanished-read": TXN_VANISHED,
    "txn-recovered": TXN_RECOVERED,
    "txn-poll-skip": TXN_POLL_SKIP,
    "aborted-read": ABORTED_READ,
    "uncommitted-read": UNCOMMITTED_READ,
    "torn-transaction": TORN,
    "unreadable": UNREADABLE,
    "reprocessed": REPROCESSED,
    "skipped-input": SKIPPED_INPUT,
    "txn-clean": TXN_CLEAN,
}
