"""`python -m spark_analysis ingest RESULTS_DIR --lake DIR`: add every finished run not yet in the lake.

Tolerant: a run folder that is broken or half-written is skipped with one line
saying why (on the `out` stream) and the ingest goes on. The new runs of one
ingest are one batch (lake.py): all tables' rows in one write per table, `runs` last;
then every table without a file gets one of zero rows, so a lake that holds a run holds every table.
Must never: change a run folder, or rows already in the lake.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import pyarrow as pa

from spark_analysis import lake as lk
from spark_analysis import lake_tables as s
from spark_analysis.extract import SkipRun, extract_run
from testbed.errors import UsageError
from testbed.runfolder import RunFolder


@dataclass
class IngestResult:
    added: list[str] = field(default_factory=list)
    already: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    batch: str = ""

    def summary(self) -> str:
        rows = ", ".join(f"{t} {n}" for t, n in self.rows.items() if n)
        return (f"ingest: {len(self.added)} new run(s), {self.already} already in the lake, "
                f"{len(self.skipped)} skipped{f'; rows: {rows}' if rows else ''} ({self.seconds:.1f} s)")


def check_lake(lake: Path) -> None:
    """A lake of another schema version is refused (one line), never mixed."""
    try:
        meta = lk.read_meta(lake)
    except (OSError, ValueError) as exc:
        raise UsageError(f"{lake / s.META_FILE}: unreadable ({exc})") from None
    if meta is not None and meta.get("schema_version") != s.SCHEMA_VERSION:
        raise UsageError(f"{lake / s.META_FILE}: schema_version {meta.get('schema_version')!r}, this ingest "
                         f"writes {s.SCHEMA_VERSION}: ingest into a new lake")


def _extract(job: tuple[Path, str, str]) -> tuple[dict[str, pa.Table] | None, str]:
    """One run's tables, or None and why it is skipped (a run that cannot be read never aborts the ingest)."""
    path, run_id, batch = job
    try:
        return extract_run(RunFolder(path), run_id, batch), ""
    except SkipRun as exc:
        return None, str(exc)
    except Exception as exc:  # noqa: BLE001 - said in the skip line
        return None, f"could not be read: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"


class _Inline:
    def map(self, fn: Callable[[Any], Any], items: list[Any]) -> Iterator[Any]:
        return map(fn, items)


@contextlib.contextmanager
def _pool(jobs: int, runs: int) -> Iterator[Any]:
    """Worker processes when there is more than one run and one job; the runs keep their order."""
    if jobs <= 1 or runs <= 1:
        yield _Inline()
        return
    with ProcessPoolExecutor(max_workers=min(jobs, runs), mp_context=mp.get_context("fork")) as pool:
        yield pool


def default_jobs() -> int:
    return min(2, os.cpu_count() or 1)


def ingest(results: Path, lake: Path, out: TextIO, jobs: int = 1) -> IngestResult:
    """Add the finished runs under `results` that `lake` does not hold yet (read by `jobs` processes)."""
    started = time.monotonic()
    if not results.is_dir():
        raise UsageError(f"{results}: not a results folder")
    check_lake(lake)
    lake.mkdir(parents=True, exist_ok=True)
    known, batches = lk.committed(lake)
    for orphan in lk.remove_orphans(lake, batches):
        out.write(f"ingest: removed {orphan} (left by an ingest that did not finish)\n")
    result = IngestResult(batch=lk.new_batch_id())
    parts: dict[str, list[pa.Table]] = {name: [] for name in s.TABLES}
    todo = []
    for path in lk.run_folders(results, lake, known):
        run_id = path.relative_to(results).as_posix()
        if run_id in known:
            result.already += 1
        else:
            todo.append((path, run_id, result.batch))
    with _pool(jobs, len(todo)) as pool:
        for (path, run_id, _), (tables, reason) in zip(todo, pool.map(_extract, todo), strict=True):
            if tables is None:
                result.skipped.append((run_id, reason))
                out.write(f"ingest: skipped {path}: {reason}\n")
                continue
            for name, table in tables.items():
                parts[name].append(table)
            result.added.append(run_id)
    for name, schema in s.TABLES.items():  # runs last (schema.TABLES' order)
        table = pa.concat_tables(parts[name]) if parts[name] else schema.empty_table()
        result.rows[name] = lk.append(lake, name, table, result.batch)
    lk.complete(lake)
    lk.write_meta(lake)
    result.seconds = time.monotonic() - started
    return result
