"""What an anomaly instance row is, and which instances become a verdict's examples.

Each anomaly is counted in units (values, positions or adjacent pairs); an
engine reports one *instance* row per unit. Instances are ordered errors
first, then by the anomaly's sort key (its record in checkers.anomalies),
so both engines pick the same examples and a history always gives the same
verdict bytes. The examples are spread over that order (first and last
included) rather than its head, so they show the whole extent of an
anomaly, not only where it began.

A base module: checkers.anomalies, the example builders and the engines
import it. Must never: import another module of checkers/ or name an anomaly.
"""

from __future__ import annotations

MAX_EXAMPLES = 20

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
    "group",  # contract v3: the consumer group of a group anomaly
)


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
