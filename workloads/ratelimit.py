"""A token bucket that says how many sends are due, so a producer keeps its target rate in batches."""

from __future__ import annotations


class RateLimiter:
    """`take(now)` returns how many sends may start now (at most `burst`).

    rate 0 means unlimited: every call allows a full burst. Otherwise credit
    accrues at `rate` per second up to one second's worth, so a stall (GC, a
    full queue) is caught up at most one second's worth, never unboundedly.
    Times are monotonic seconds supplied by the caller (pure: easy to test).
    """

    def __init__(self, rate: float, burst: int, now: float) -> None:
        self.rate = rate
        self.burst = burst
        self.capacity = max(1.0, rate)
        self.credit = 1.0
        self.last = now

    def take(self, now: float) -> int:
        if self.rate <= 0:
            return self.burst
        self.credit = min(self.capacity, self.credit + (now - self.last) * self.rate)
        self.last = now
        due = min(int(self.credit), self.burst)
        self.credit -= due
        return due

    def wait_s(self) -> float:
        """Seconds until the next send is due (0 when one already is)."""
        if self.rate <= 0 or self.credit >= 1.0:
            return 0.0
        return (1.0 - self.credit) / self.rate
