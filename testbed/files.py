"""Writing a file whole or not at all: a temporary file beside it, then a rename.

The one atomic write of the harness (state file, verdict, replicas.json,
report, junit): a reader, or a harness killed mid-write, never sees half a file.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_text_atomic(path: Path, text: str) -> Path:
    """Write `text` to `path` through a temporary file in the same folder and a rename; return `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_json_atomic(path: Path, data: Any) -> Path:
    """Write `data` as indented, key-sorted JSON, atomically."""
    return write_text_atomic(path, json.dumps(data, indent=2, sort_keys=True) + "\n")
