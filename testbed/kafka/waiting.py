"""Polling until a condition holds: the one wait helper of the cluster, its bring-up, KRaft and the tests.

A base module (it imports nothing of `testbed/kafka/`), so the cluster, `bringup`, `kraft` and `readiness`
all import it without importing each other.
Must never: swallow an error other than the ones a poll of a starting cluster expects (OSError, ClusterError,
ValueError), or return before the check has answered.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from testbed.errors import ClusterError

T = TypeVar("T")


def wait_for(what: str, check: Callable[[], T | None], timeout: float, interval: float = 0.2,
             why: Callable[[], str] | None = None) -> T:
    """Poll `check` until it returns something other than None; ClusterError naming `what` at the deadline, and
    what `why` says was still missing at the last look (or the last error)."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while True:
        try:
            result = check()
            if result is not None:
                return result
        except (OSError, ClusterError, ValueError) as exc:
            last_error = exc
        if time.monotonic() >= deadline:
            missing = why() if why else ""
            detail = f": {missing}" if missing else f" (last error: {last_error})" if last_error else ""
            raise ClusterError(f"timed out after {timeout:.0f} s waiting for {what}{detail}")
        time.sleep(interval)
