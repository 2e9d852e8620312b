"""The anomalies of spec/history.md: their names, what each means, and how examples are ordered.

The one list of anomaly names: the harness (spec validation, the report)
imports it from here rather than keeping its own.

Each anomaly is counted in units (values, positions or adjacent pairs); an
engine reports one *instance* row per unit. Instances are ordered errors
first, then by the anomaly's sort key, so both engines pick the same
examples and a history always gives the same verdict bytes. The examples
are spread over that order (first and last included) rather than its head,
so they show the whole extent of an anomaly, not only where it began.
"""

from __future__ import annotations

LOST = "lost"
DUPLICATE = "duplicate"
DIVERGENCE = "divergence"
PHANTOM = "phantom"
VANISHED_READ = "vanished-read"
FAILED_PRESENT = "failed-present"
RECOVERED = "recovered"
REORDERED = "reordered"
NONMONOTONIC_POLL = "nonmonotonic-poll"
POLL_SKIP = "poll-skip"
# Contract v2 (transactions and exactly-once).
ABORTED_READ = "aborted-read"
UNCOMMITTED_READ = "uncommitted-read"
TORN_TRANSACTION = "torn-transaction"
UNREADABLE = "unreadable"
REPROCESSED = "reprocessed"
SKIPPED_INPUT = "skipped-input"

# The anomalies of contract v2: 0 in a history without transactions (reprocessed: without `source` values).
V2_ANOMALIES: tuple[str, ...] = (ABORTED_READ, UNCOMMITTED_READ, TORN_TRANSACTION, UNREADABLE, REPROCESSED,
                                 SKIPPED_INPUT)
# The v1 anomalies whose rule a history with transactions restates.
RESTATED: tuple[str, ...] = (LOST, VANISHED_READ, RECOVERED, POLL_SKIP)

ANOMALIES: tuple[str, ...] = (
    LOST,
    DUPLICATE,
    DIVERGENCE,
    PHANTOM,
    VANISHED_READ,
    FAILED_PRESENT,
    RECOVERED,
    REORDERED,
    NONMONOTONIC_POLL,
    POLL_SKIP,
    *V2_ANOMALIES,
)

# Each anomaly in a sentence, for a person reading a verdict (spec/history.md has the exact definitions).
DESCRIPTIONS: dict[str, str] = {
    LOST: "Writes the broker acknowledged that are missing from the final log.",
    DUPLICATE: "Values that sit at two or more positions of the final log: one send, written twice.",
    DIVERGENCE: "Positions (topic, partition, offset) that held different values across acknowledgements and "
    "reads: two replicas wrote different logs at the same offsets.",
    PHANTOM: "Values read that no producer ever sent.",
    VANISHED_READ: "Values a consumer read while the test ran that are missing from the final log.",
    FAILED_PRESENT: "Writes the client was told definitely failed, which were read all the same.",
    RECOVERED: "Writes with an unknown outcome (timeout, lost connection) that did reach the final log.",
    REORDERED: "Pairs of acknowledged writes from one producer to one partition that landed in the log in "
    "the opposite order.",
    NONMONOTONIC_POLL: "Consecutive live reads by one consumer whose offset went backwards or repeated.",
    POLL_SKIP: "Consecutive live reads by one consumer that skipped records present in the final log.",
    ABORTED_READ: "Values of aborted transactions that a read_committed consumer read.",
    UNCOMMITTED_READ: "Values a read_committed consumer read before their transaction was asked to commit.",
    TORN_TRANSACTION: "Transactions partly in the committed final log and partly missing from it.",
    UNREADABLE: "Acknowledged values the read_uncommitted drain read but the read_committed drain never reached.",
    REPROCESSED: "Input records processed into the committed output twice.",
    SKIPPED_INPUT: "Input records marked consumed by a committed transaction but never processed into the "
    "committed output.",
}

MAX_EXAMPLES = 20


def _spread(n: int, k: int) -> list[int]:
    """k positions out of range(n), evenly spaced, first and last included."""
    if n <= k:
        return list(range(n))
    if k == 1:
        return [0]
    return [(i * (n - 1)) // (k - 1) for i in range(k)]


def example_positions(n_errors: int, n: int, k: int = MAX_EXAMPLES) -> list[int]:
    """Which of n ordered instances (the n_errors errors first) become examples.

    Errors are preferred: up to k spread over them, and any room left is
    spread over the rest.
    """
    picked = _spread(n_errors, k)
    return picked + [n_errors + i for i in _spread(n - n_errors, k - len(picked))]


# Columns of an instance row; an anomaly fills those it needs, the rest are null.
INSTANCE_COLUMNS: tuple[str, ...] = (
    "value",
    "topic",
    "partition",
    "offset",
    "process",
    "op_id",
    "invoke_ns",
    "seq",
    "poll_ns",
    "prev_value",
    "prev_offset",
    "prev_op_id",
    "prev_seq",
    "prev_poll_ns",
)

_WRITE_KEY = ("invoke_ns", "value")
_PAIR_KEY = ("process", "topic", "partition", "seq", "offset", "value")

# Sort key of each anomaly's instances (after "errors first"); always non-null columns.
SORT_KEYS: dict[str, tuple[str, ...]] = {
    LOST: _WRITE_KEY,
    FAILED_PRESENT: _WRITE_KEY,
    RECOVERED: _WRITE_KEY,
    DUPLICATE: ("value",),
    PHANTOM: ("value",),
    VANISHED_READ: ("value",),
    DIVERGENCE: ("topic", "partition", "offset"),
    REORDERED: ("process", "topic", "partition", "op_id", "value"),
    NONMONOTONIC_POLL: _PAIR_KEY,
    POLL_SKIP: _PAIR_KEY,
    ABORTED_READ: _WRITE_KEY,
    UNCOMMITTED_READ: _WRITE_KEY,
    TORN_TRANSACTION: _WRITE_KEY,  # a transaction, by its first write missing from Frc
    UNREADABLE: _WRITE_KEY,
    REPROCESSED: ("value",),  # the input value
    SKIPPED_INPUT: ("value",),
}
