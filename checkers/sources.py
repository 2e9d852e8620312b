"""Find the files of each history table in a history directory.

A table is ``<table>.parquet`` (a file, or a dataset directory of Parquet
files) or ``<table>.jsonl``; Parquet wins where both exist. This module only
looks at names; it never reads a row.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from checkers.errors import HistoryError
from checkers.schema import TABLES

Format = Literal["jsonl", "parquet"]


@dataclass(frozen=True)
class TableSource:
    """Where one table lives: its path, format and data files (sorted)."""

    table: str
    path: Path
    format: Format
    files: tuple[Path, ...]

    def describe(self, file: Path | None = None) -> str:
        """The name to put in a message: the table path, or one of its files."""
        return str(file if file is not None else self.path)


def _dataset_files(directory: Path) -> tuple[Path, ...]:
    # Spark and pyarrow skip hidden and underscore files (_SUCCESS, .crc).
    files = [
        p
        for p in directory.rglob("*")
        if p.is_file() and not any(part.startswith((".", "_")) for part in p.relative_to(directory).parts)
    ]
    return tuple(sorted(files))


def table_paths(history_dir: Path, table: str) -> tuple[Path, Path]:
    """Where ``table`` may live in ``history_dir``: (``<table>.parquet``, ``<table>.jsonl``); Parquet wins."""
    return history_dir / f"{table}.parquet", history_dir / f"{table}.jsonl"


def locate_history(history_dir: str | Path) -> dict[str, TableSource]:
    """Map each table present in ``history_dir`` to its source.

    Raises HistoryError when the directory or a required table is missing,
    or a Parquet dataset directory holds no files.
    """
    root = Path(history_dir)
    if not root.is_dir():
        raise HistoryError(str(root), "not a history directory")
    found: dict[str, TableSource] = {}
    for name, spec in TABLES.items():
        parquet, jsonl = table_paths(root, name)
        if parquet.is_dir():
            files = _dataset_files(parquet)
            if not files:
                raise HistoryError(str(parquet), "Parquet dataset directory holds no data files")
            found[name] = TableSource(name, parquet, "parquet", files)
        elif parquet.is_file():
            found[name] = TableSource(name, parquet, "parquet", (parquet,))
        elif jsonl.is_file():
            found[name] = TableSource(name, jsonl, "jsonl", (jsonl,))
        elif spec.required:
            raise HistoryError(str(root), f"missing required table '{name}' ({name}.jsonl or {name}.parquet)")
    return found
