"""How a workload learns it must stop: SIGTERM (the harness) or SIGINT (a developer), as a flag.

The handler only sets the flag; every loop checks it between batches and
waits on it instead of sleeping, so a stop is seen within one poll timeout.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType


class StopFlag:
    """Set once a stop was asked for; `signal_number` says by which signal (None if set directly)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.signal_number: int | None = None

    def install(self) -> StopFlag:
        """Route SIGTERM and SIGINT to this flag (main thread only)."""
        signal.signal(signal.SIGTERM, self._handle)
        signal.signal(signal.SIGINT, self._handle)
        return self

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.signal_number = signum
        self._event.set()

    def set(self) -> None:
        self._event.set()

    @property
    def requested(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float) -> bool:
        """Sleep up to `timeout` seconds, returning early (True) once a stop is asked for."""
        return self._event.wait(timeout)
