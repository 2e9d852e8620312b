"""faultline's checker: judges a Kafka history (spec/history.md) and writes a verdict.

Reads history files only and never imports the harness, so it can judge a
history copied from anywhere. ``check`` returns the verdict; ``write_verdict``
writes it; ``python -m checkers`` does both.
"""

from __future__ import annotations

from checkers.api import check
from checkers.errors import CheckerError, HistoryError
from checkers.verdict import exit_status, write_verdict

__all__ = ["CheckerError", "HistoryError", "check", "exit_status", "write_verdict"]
