"""The results lake on disk: which runs it holds, and adding new ones to it.

Idempotent and incremental: a run is in the lake when its `run_id` is in
`<lake>/runs`; the ingest reads only run folders that are not. Every table's
files of one ingest carry the ingest's batch id in their names (`part-<batch>-<n>.parquet`)
and `runs` is written last, so a crash mid-ingest leaves files of a batch that no
`runs` row names: the next ingest removes them before it adds anything.
Must never: touch a table it does not own (schema.TABLES), or rewrite a file it wrote before.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import uuid
from collections.abc import Iterator, Set
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from spark_analysis import lake_tables as s
from testbed.files import write_json_atomic
from testbed.runfolder import RunFolder

PART = re.compile(r"^part-(?P<batch>[0-9A-Za-z]+-[0-9a-f]+)-\d+\.parquet$")
# A table's file of zero rows, in a partition `runs` has: the table exists, with its schema, before any run gave it
# a row. Not a batch's file (PART does not match it), so no ingest removes it; its rows (none) change nothing.
EMPTY_PART = "part-empty.parquet"


def new_batch_id() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:8]


def run_folders(results: Path, lake: Path, known: Set[str] = frozenset()) -> Iterator[Path]:
    """Every folder under `results` that is or was meant to be a run (testbed.runfolder's `is_run`).

    Symlinks (`latest`) are not followed; the lake itself, and the inside of run folders, are not walked.
    A folder whose path relative to `results` is in `known` (run ids the lake holds) is yielded as it is,
    neither looked into nor checked, and the folders above it are listed but not checked: a year of runs
    costs the walk one listing of each parent, not a listing and three checks of each run folder and parent.
    """
    lake_real = os.path.realpath(lake)
    # a folder above a run the lake holds is no run itself (a run's inside never holds another): not checked
    above = {run.rsplit("/", n)[0] for run in known for n in range(1, run.count("/") + 1)}
    for root, dirs, _ in os.walk(results):
        rel = os.path.relpath(root, results).replace(os.sep, "/")
        if os.path.realpath(root) == lake_real:
            dirs[:] = []
            continue
        if rel not in above and RunFolder(Path(root)).is_run:
            dirs[:] = []
            yield Path(root)
            continue
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not os.path.islink(os.path.join(root, d)))
        if known:
            held = [d for d in dirs if (d if rel == "." else f"{rel}/{d}") in known]
            dirs[:] = [d for d in dirs if d not in held]
            yield from (Path(root) / d for d in held)


def _table_dir(lake: Path, table: str) -> Path:
    return lake / table


def _part_files(lake: Path, table: str) -> list[Path]:
    root = _table_dir(lake, table)
    return sorted(p for p in root.rglob("part-*.parquet")) if root.is_dir() else []


def committed(lake: Path) -> tuple[set[str], set[str]]:
    """(run ids, batch ids) that `<lake>/runs` holds."""
    files = _part_files(lake, "runs")
    if not files:
        return set(), set()
    table = ds.dataset([str(f) for f in files], format="parquet").to_table(columns=["run_id", "ingest_batch"])
    return set(table.column("run_id").to_pylist()), set(table.column("ingest_batch").to_pylist())


def remove_orphans(lake: Path, batches: set[str]) -> list[Path]:
    """Remove files of batches that no `runs` row names (an ingest that died before writing `runs`)."""
    removed = []
    for table in s.TABLES:
        for path in _part_files(lake, table):
            match = PART.match(path.name)
            if match and match["batch"] not in batches:
                path.unlink()
                removed.append(path)
    return removed


def append(lake: Path, table: str, data: pa.Table, batch: str) -> int:
    """Add `data` to `<lake>/<table>/` as new files of `batch`, hive-partitioned; return the rows written."""
    if data.num_rows == 0:
        return 0
    data = data.sort_by([("scenario", "ascending"), ("run_id", "ascending")])  # a scenario's rows together
    pq.write_to_dataset(
        data, root_path=str(_table_dir(lake, table)), partition_cols=list(s.PARTITION_COLUMNS),
        basename_template=f"part-{batch}-{{i}}.parquet", existing_data_behavior="overwrite_or_ignore",
    )
    return data.num_rows


def write_meta(lake: Path) -> None:
    """`<lake>/_lake.json`: the schema version and each table's columns, for readers without this code."""
    write_json_atomic(lake / s.META_FILE, {
        "schema_version": s.SCHEMA_VERSION,
        "partitioning": {"flavor": "hive", "columns": list(s.PARTITION_COLUMNS)},
        "tables": {name: {f.name: str(f.type) for f in schema} for name, schema in s.TABLES.items()},
    })


def complete(lake: Path) -> list[str]:
    """Give every table that has no file yet one of zero rows (EMPTY_PART), in a partition of `runs`; return them.

    So a lake that holds a run holds every table with its schema, a lake of runs without faults included (no
    `availability`, `faults` or `anomalies` rows). A lake with no run has no partition yet: only `_lake.json`.
    """
    runs = _part_files(lake, "runs")
    if not runs:
        return []
    partition = runs[0].parent.relative_to(_table_dir(lake, "runs"))
    added = []
    for table, schema in s.TABLES.items():
        if _part_files(lake, table):
            continue
        folder = _table_dir(lake, table) / partition
        folder.mkdir(parents=True, exist_ok=True)
        columns = pa.schema([f for f in schema if f.name not in s.PARTITION_COLUMNS])
        pq.write_table(columns.empty_table(), folder / EMPTY_PART)
        added.append(table)
    return added


def read_meta(lake: Path) -> dict[str, object] | None:
    path = lake / s.META_FILE
    if not path.is_file():
        return None
    loaded = json.loads(path.read_text(encoding="utf-8"))
    return loaded if isinstance(loaded, dict) else None
