"""Writing a report output next to the run: whole or not at all."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from harness.report.errors import ReportError


def write_atomically(target: Path, text: str) -> Path:
    """Write ``text`` to ``target`` through a temporary file and a rename, so no reader sees half of it."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}-", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
                handle.write(text)
            os.chmod(tmp, 0o644)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise ReportError(f"{target}: cannot write ({exc.strerror or exc})") from exc
    return target
