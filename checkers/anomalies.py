"""The anomalies of spec/history.md: their names and how examples are ordered.

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
)

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
}
