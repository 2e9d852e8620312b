"""Writing a report output next to the run: whole or not at all (`testbed.files`), a failure a ReportError."""

from __future__ import annotations

from pathlib import Path

from report.errors import ReportError
from testbed.files import write_text_atomic


def write_atomically(target: Path, text: str) -> Path:
    """Write ``text`` to ``target`` atomically; ReportError naming the file if it cannot be written."""
    try:
        return write_text_atomic(target, text)
    except OSError as exc:
        raise ReportError(f"{target}: cannot write ({exc.strerror or exc})") from exc
