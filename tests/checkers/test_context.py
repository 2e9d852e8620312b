"""The fault pairing rule the checker's examples and the report share (checkers.context.pair_faults)."""

from __future__ import annotations

from checkers.context import pair_faults


def test_a_stop_closes_the_earliest_open_start_of_its_key() -> None:
    events = [
        (1, "start", "kill n1", "a"),
        (2, "start", "kill n1", "b"),
        (3, "start", "kill n2", "c"),
        (4, "stop", "kill n1", "-"),
        (5, "info", "kill n1", "-"),
        (6, "stop", "pause n1", "-"),  # nothing open under this key: ignored
    ]
    assert pair_faults(events) == [(1, 4, "a"), (2, None, "b"), (3, None, "c")]
