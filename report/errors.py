"""The report's one error: a run folder it cannot report on at all."""

from __future__ import annotations

from testbed.errors import HarnessError


class ReportError(HarnessError):
    """No run folder where one was named, or an output that cannot be written."""
