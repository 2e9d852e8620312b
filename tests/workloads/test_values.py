"""What a producer sends per op id, recomputed by the history builder; and its rate limiter."""

from __future__ import annotations

from workloads.ratelimit import RateLimiter
from workloads.values import ValuePlan


def test_values_keys_and_partitions() -> None:
    plan = ValuePlan("p-az1-0-", 0, 3, "none")
    assert [plan.value(op) for op in (0, 7, 1207)] == ["p-az1-0-0", "p-az1-0-7", "p-az1-0-1207"]
    assert [plan.partition(op) for op in range(5)] == [0, 1, 2, 0, 1]
    assert plan.key_of(7, "p-az1-0-7") is None
    assert ValuePlan("v-", 0, 3, "value").key_of(7, "v-7") == "v-7"
    assert ValuePlan("v-", 0, 3, "cycle:4").key_of(7, "v-7") == "k3"
    padded = ValuePlan("b-", 10, 3, "none")
    assert padded.value(42) == "b-0000000042" and len(padded.value(123456)) == 12
    assert ValuePlan.from_json(padded.to_json()) == padded


def test_op_ids_are_recovered_from_the_significant_digits_at_every_width() -> None:
    for plan in (
        ValuePlan("p-", 0, 3, "none"),
        ValuePlan("bench-", 94, 3, "none"),
        ValuePlan("q", 9, 1, "none"),
    ):
        for next_op in (1, 9, 10, 11, 99, 100, 101, 999_999, 1_000_000, 1_000_001):
            start = plan.op_start(next_op)
            for op in {0, next_op // 2, next_op - 1}:
                assert int(plan.value(op).encode()[start:]) == op, (plan, next_op, op)


def test_unlimited_rate_allows_a_full_burst_every_time() -> None:
    limiter = RateLimiter(0, 500, now=0.0)
    assert [limiter.take(0.0), limiter.take(0.0)] == [500, 500]
    assert limiter.wait_s() == 0.0


def test_a_rate_is_kept_over_time() -> None:
    limiter = RateLimiter(100, 500, now=0.0)
    sent = sum(limiter.take(t / 1000) for t in range(0, 10_001))  # every ms for 10 s
    assert 999 <= sent <= 1002


def test_a_stall_is_caught_up_by_at_most_one_seconds_worth() -> None:
    limiter = RateLimiter(100, 10_000, now=0.0)
    assert limiter.take(0.0) == 1
    assert limiter.take(60.0) == 100
    assert limiter.take(60.0) == 0
    assert 0.0 < limiter.wait_s() <= 0.01
