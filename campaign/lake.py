"""The campaigns table of the results lake, and the runs' ingest into the lake.

`<lake>/campaigns/campaign_id=<id>/part-0.parquet` (hive-partitioned, pyarrow, no Spark): one row
per case × attempt, a case that never ran one row with attempt 0; the columns are `SCHEMA`'s,
documented in docs/campaigns.md. The previous campaign of the same name is read back from it, so
"what changed" works without Spark. The runs themselves go into the lake through
`python -m spark_analysis ingest`, as a subprocess: where that module is missing the lake is said
to be unavailable; an ingest failure is said and never changes a campaign's outcome.
Must never: write a partition but its own campaign's, or let the lake decide pass or fail.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from campaign.records import CaseResult
from checkers.anomalies import ANOMALIES
from testbed.paths import REPO_ROOT, RESULTS_DIR

DEFAULT_LAKE = RESULTS_DIR / "lake"
TABLE = "campaigns"
PARTITION = "campaign_id"
INGEST_TIMEOUT_S = 1800
_TIME = pa.timestamp("us", tz="UTC")
SCHEMA = pa.schema([
    ("campaign", pa.string()), ("started_at", _TIME), ("seed", pa.int64()), ("entry", pa.int64()),
    ("kind", pa.string()), ("scenario", pa.string()), ("configuration", pa.string()), ("settings", pa.string()),
    ("attempt", pa.int64()), ("attempt_outcome", pa.string()), ("outcome", pa.string()),
    ("expected", pa.string()), ("observed", pa.string()), ("valid", pa.string()),
    ("run_started_at", _TIME), ("duration_s", pa.float64()), ("run_dir", pa.string()), ("skipped", pa.string()),
    *[(a, pa.int64()) for a in ANOMALIES], ("anomaly_kinds", pa.list_(pa.string())),
])


def rows_of(results: list[CaseResult], campaign: str, started_at: datetime, seed: int,
            folder: Path) -> list[dict[str, Any]]:
    """The table's rows (without the partition column) for a campaign's results; run folders relative to `folder`."""
    rows = []
    for result in results:
        case = result.case
        base = {"campaign": campaign, "started_at": started_at, "seed": seed, "entry": case.entry, "kind": case.kind,
                "scenario": case.scenario, "configuration": case.label,
                "settings": json.dumps(case.settings, sort_keys=True), "outcome": result.outcome,
                "skipped": result.skipped}
        if not result.attempts:
            rows.append({**base, "attempt": 0, "anomaly_kinds": []})
        for attempt in result.attempts:
            rows.append({**base, "attempt": attempt.number, "attempt_outcome": attempt.outcome,
                         "expected": attempt.expected, "observed": attempt.observed, "valid": attempt.valid,
                         "run_started_at": attempt.started_at, "duration_s": round(attempt.duration_s, 3),
                         "run_dir": relative(attempt.run_dir, folder), **{a: attempt.counts.get(a) for a in ANOMALIES},
                         "anomaly_kinds": attempt.kinds})
    return rows


def relative(path: Path | None, folder: Path) -> str | None:
    if path is None:
        return None
    try:
        return str(Path(path).resolve().relative_to(folder.resolve()))
    except ValueError:
        return str(path)


def write_campaign(lake: Path, campaign_id: str, rows: list[dict[str, Any]]) -> Path:
    """Write (or replace) this campaign's partition, whole or not at all; return its file."""
    part = lake / TABLE / f"{PARTITION}={campaign_id}"
    part.mkdir(parents=True, exist_ok=True)
    target = part / "part-0.parquet"
    tmp = part / f".part-0.parquet.{os.getpid()}.tmp"
    try:
        pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), tmp)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def read_campaigns(lake: Path) -> list[dict[str, Any]]:
    """Every row of the campaigns table (with campaign_id), or none when there is no table yet."""
    root = lake / TABLE
    if not any(root.glob(f"{PARTITION}=*/*.parquet")):
        return []
    partitioning = ds.partitioning(pa.schema([(PARTITION, pa.string())]), flavor="hive")
    dataset = ds.dataset(root, format="parquet", partitioning=partitioning, schema=SCHEMA.append(
        pa.field(PARTITION, pa.string())), exclude_invalid_files=True)
    return list(dataset.to_table().to_pylist())


def previous_campaign(lake: Path, campaign: str, current_id: str) -> tuple[str | None, list[dict[str, Any]]]:
    """The last campaign of this name before `current_id` (by start time) and its rows; (None, []) if none."""
    rows = [r for r in read_campaigns(lake) if r["campaign"] == campaign and r[PARTITION] != current_id]
    if not rows:
        return None, []
    latest = max(rows, key=lambda r: (r["started_at"], r[PARTITION]))[PARTITION]
    return latest, [r for r in rows if r[PARTITION] == latest]


def ingest_runs(runs_dir: Path, lake: Path, timeout: float = INGEST_TIMEOUT_S) -> str:
    """`python -m spark_analysis ingest RUNS --lake LAKE`; one line saying what became of it."""
    argv = [sys.executable, "-m", "spark_analysis", "ingest", str(runs_dir), "--lake", str(lake)]
    try:
        done = subprocess.run(argv, cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"lake ingest failed: {exc}"
    said = (done.stderr.strip() or done.stdout.strip()).splitlines()
    if done.returncode != 0 and any("No module named" in line and "spark_analysis" in line for line in said):
        return "lake not available: this checkout has no spark_analysis ingest; the runs were not ingested"
    if done.returncode != 0:
        return f"lake ingest failed (exit {done.returncode}): {said[-1] if said else 'no output'}"
    return f"runs ingested into {lake}"

