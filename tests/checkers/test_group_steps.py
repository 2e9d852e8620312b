"""checkers.group_steps: the passed offsets as bucketed steps, against the spec's definition read literally."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from checkers import group_steps
from checkers.group_steps import OPEN_END, Steps, bucketed, passed_steps


def _acked(rows: list[tuple[str, str, int, int | None, int]]) -> pa.Table:
    group, topic, partition, complete, offset = (list(c) for c in zip(*rows, strict=True))
    return pa.table({"group": group, "topic": topic, "partition": pa.array(partition, pa.int32()),
                     "complete_ns": pa.array(complete, pa.int64()), "offset": pa.array(offset, pa.int64())})


def _literal(rows: list[tuple[str, str, int, int | None, int]], key: tuple[str, str, int], at: int) -> int | None:
    """spec/history.md: the highest offset of the key's acknowledged commits that completed strictly before ``at``."""
    seen = [o for g, t, p, c, o in rows if (g, t, p) == key and c is not None and c < at]
    return max(seen, default=None)


def _index(steps: Steps) -> dict[tuple[object, ...], list[tuple[int, int, int]]]:
    """The rows by (group, topic, partition, bucket): the join's equality keys."""
    out: dict[tuple[object, ...], list[tuple[int, int, int]]] = {}
    for g, t, p, b, start, end, passed in zip(*(steps.rows.column(c).to_pylist() for c in group_steps.COLUMNS),
                                               strict=True):
        out.setdefault((g, t, p, b), []).append((start, end, passed))
    return out


def _lookup(steps: Steps, index: dict[tuple[object, ...], list[tuple[int, int, int]]], key: tuple[str, str, int],
            at: int) -> int | None:
    """What the Spark join finds: the row of the read's capped bucket whose (start, end] holds ``at``."""
    bucket = min(at // steps.width, steps.last)
    found = [passed for start, end, passed in index.get((*key, bucket), []) if start < at <= end]
    assert len(found) <= 1, f"{len(found)} steps hold {at}"
    return found[0] if found else None


def test_equal_times_count_together_and_only_rises_are_steps() -> None:
    rows = [("g", "t", 0, 10, 5), ("g", "t", 0, 10, 7), ("g", "t", 0, 20, 6), ("g", "t", 0, 30, 9),
            ("g", "t", 0, None, 50)]
    steps = passed_steps(_acked(rows))
    assert list(zip(steps["start"], steps["passed"], strict=True)) == [(10, 7), (30, 9)]


@pytest.mark.parametrize("seed", range(6))
def test_every_poll_finds_the_literal_passed_offset(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    if seed % 2:  # few buckets: many steps share one, and final steps start in the last
        monkeypatch.setattr(group_steps, "MAX_BUCKETS", 3)
    keys = [("g1", "t", 0), ("g1", "t", 1), ("g2", "t", 0), ("g2", "u", 3)]
    base = 1_700_000_000_000_000_000
    rows = [(*rng.choice(keys), base + rng.randrange(0, 5_000) if rng.random() > 0.05 else None,
             rng.randrange(0, 400)) for _ in range(300)]
    steps = bucketed(_acked(rows))
    index = _index(steps)
    high = max(c for *_, c, _ in rows if c is not None)
    probes = [base + rng.randrange(-100, 5_200) for _ in range(400)]
    probes += [c + d for *_, c, _ in rows if c is not None for d in (0, 1)]  # equal times do not count
    probes += [high, high + 1, OPEN_END - 1]
    for key in keys:
        for at in probes:
            assert _lookup(steps, index, key, at) == _literal(rows, key, at), (key, at)


def test_no_commit_no_steps() -> None:
    steps = bucketed(_acked([("g", "t", 0, None, 3)]))
    assert (steps.rows.num_rows, steps.width, steps.last) == (0, 1, 0)
    assert steps.rows.column_names == list(group_steps.COLUMNS)
