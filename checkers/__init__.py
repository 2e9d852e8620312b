"""faultline's checker: judges a Kafka history (spec/history.md) and writes a verdict.

Reads history files only and never imports the harness, so it can judge a
history copied from anywhere. ``check`` returns the verdict; ``write_verdict``
writes it; ``python -m checkers`` does both.

The anomaly names (``checkers.anomalies``), the verdict's format and exit
statuses (``checkers.verdict``) and the facts a run showed beside its anomalies
(``checkers.facts``, from the leadership views of ``checkers.leadership``) are
owned here and imported by the harness, the report and the lake;
``check`` is loaded only when first used, since it pulls in pyarrow and the
engines, so importing those names costs the harness nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from checkers.errors import CheckerError, HistoryError
from checkers.verdict import exit_status, write_verdict

if TYPE_CHECKING:
    from checkers.api import check

__all__ = ["CheckerError", "HistoryError", "check", "exit_status", "write_verdict"]


def __getattr__(name: str) -> Any:
    if name == "check":
        from checkers.api import check

        return check
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
