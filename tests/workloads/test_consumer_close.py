"""A consumer's close is bounded: a client stuck in close() does not keep the process past its stop grace."""

from __future__ import annotations

import threading
import time

from workloads.consumer import close_within


class StuckClose:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.returned = threading.Event()

    def close(self) -> None:
        time.sleep(self.seconds)
        self.returned.set()


def test_a_close_that_returns_in_time_is_waited_for() -> None:
    consumer = StuckClose(0.05)
    assert close_within(consumer, 2.0) and consumer.returned.is_set()  # type: ignore[arg-type]


def test_a_close_that_hangs_is_given_up_after_the_timeout() -> None:
    consumer = StuckClose(5.0)
    started = time.monotonic()
    assert not close_within(consumer, 0.2)  # type: ignore[arg-type]
    assert time.monotonic() - started < 1.0 and not consumer.returned.is_set()
