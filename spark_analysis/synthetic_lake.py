"""A synthetic lake of a year of nights, for the lake's benchmark: one real night ingested, then laid again night
after night.

`year_lake` writes one night of the nightly campaign as run folders (spark_analysis.synthetic.write_night),
ingests it into a template lake (spark_analysis.ingest, so every row is the ingest's own), then writes that
night's rows into the lake once per night, as the nightly ingest would have: one batch per night (lake.append,
`runs` last), each run's `run_id`, `day`, `started_at`, `ended_at`, `t0_ns`, `campaign_id` and `ingest_batch`
moved to its night (the detail tables' own nanosecond times stay the template night's: no query reads them
across runs). Beside the lake, a results folder holds a stub of every run folder (its `run.json` only), so an
ingest walks a year of run folders as it would on the machine that made them.
Must never: write outside the folders it is given.
"""

from __future__ import annotations

import datetime as dt
import io
import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from spark_analysis import lake as lk
from spark_analysis import lake_tables as s
from spark_analysis.ingest import ingest
from spark_analysis.synthetic import NIGHT_RUNS, write_night

DAY_NS = 86_400 * 10**9


def read_table(lake: Path, name: str) -> pa.Table:
    """Every row of `<lake>/<name>`, its partition columns as text, in the schema's column order."""
    partitioning = ds.partitioning(pa.schema([(c, pa.string()) for c in s.PARTITION_COLUMNS]), flavor="hive")
    schema = s.TABLES[name]
    return ds.dataset(str(lake / name), format="parquet", partitioning=partitioning).to_table().select(schema.names)


def _moved(template: pa.Table, ids: dict[str, str], days: dict[str, str]) -> pa.Table:
    """``template``'s rows of the runs in ``ids``, their run_id and day replaced."""
    old = template.column("run_id")
    keep = pc.is_in(old, value_set=pa.array(list(ids)))
    rows = template.filter(keep)
    where = pc.index_in(rows.column("run_id"), value_set=pa.array(list(ids)))
    for column, mapping in (("run_id", ids), ("day", days)):
        i = rows.schema.get_field_index(column)
        rows = rows.set_column(i, rows.schema.field(i), pc.take(pa.array(list(mapping.values())), where))
    return rows


def _night(runs: pa.Table, night: int, count: int) -> tuple[dict[str, str], dict[str, str]]:
    """The first ``count`` template runs' new run ids and days, ``night`` days later."""
    ids, days = {}, {}
    for row in runs.select(["run_id", "started_at"]).slice(0, count).to_pylist():
        scenario, stamp, *rest = row["run_id"].split("/")
        moved = dt.datetime.strptime(stamp, "%Y%m%d-%H%M%S") + dt.timedelta(days=night)
        ids[row["run_id"]] = "/".join([scenario, moved.strftime("%Y%m%d-%H%M%S"), *rest])
        days[row["run_id"]] = (row["started_at"] + dt.timedelta(days=night)).strftime("%Y-%m-%d")
    return ids, days


def _runs_moved(runs: pa.Table, night: int, batch: str) -> pa.Table:
    shift = dt.timedelta(days=night)
    for column, values in (
        ("started_at", pc.add(runs.column("started_at"), pa.scalar(shift))),
        ("ended_at", pc.add(runs.column("ended_at"), pa.scalar(shift))),
        ("t0_ns", pc.add(runs.column("t0_ns"), night * DAY_NS)),
        ("campaign_id", pa.array([f"nightly-{night}"] * runs.num_rows)),
        ("ingest_batch", pa.array([batch] * runs.num_rows)),
    ):
        i = runs.schema.get_field_index(column)
        runs = runs.set_column(i, runs.schema.field(i), values.cast(runs.schema.field(i).type))
    return runs


def template_night(work: Path, log: Callable[[str], None] = lambda _: None) -> tuple[Path, Path]:
    """(results, lake) of one night under ``work``, made once: 65 run folders and the lake they were ingested into."""
    results, lake = work / "night-results", work / f"night-lake-by-{'-'.join(s.PARTITION_COLUMNS)}"
    if not (lake / "runs").is_dir():
        shutil.rmtree(lake, ignore_errors=True)
        if not (results / ".complete").is_file():
            shutil.rmtree(results, ignore_errors=True)
            write_night(results, 0)
            (results / ".complete").write_text("ok\n")
        log(ingest(results, lake, io.StringIO()).summary())
    return results, lake


def year_lake(work: Path, out: Path, runs: int, log: Callable[[str], None] = lambda _: None) -> tuple[Path, Path]:
    """(results, lake) under ``out``: a lake of ``runs`` runs, 65 a night (the template night under ``work``),
    and the stubs of their run folders."""
    template_results, template = template_night(work, log)
    tables = {name: read_table(template, name) for name in s.TABLES}
    order = pc.sort_indices(tables["runs"], [("started_at", "ascending")])
    tables["runs"] = tables["runs"].take(order)
    manifests = {r: (template_results / r / "run.json").read_bytes() for r in tables["runs"].column("run_id").to_pylist()}
    results, lake = out / "results", out / "lake"
    for night in range(-(-runs // NIGHT_RUNS)):
        ids, days = _night(tables["runs"], night, min(NIGHT_RUNS, runs - night * NIGHT_RUNS))
        batch = f"{(dt.datetime(2026, 1, 1) + dt.timedelta(days=night)):%Y%m%dT%H%M%S}-{night:08x}"
        for name in s.TABLES:
            moved = _moved(tables[name], ids, days)
            lk.append(lake, name, _runs_moved(moved, night, batch) if name == "runs" else moved, batch)
        for old, new in ids.items():
            (results / new).mkdir(parents=True, exist_ok=True)
            (results / new / "run.json").write_bytes(manifests[old])
        if night % 50 == 0:
            log(f"night {night + 1}: {min(runs, (night + 1) * NIGHT_RUNS)} runs")
    lk.complete(lake)
    lk.write_meta(lake)
    return results, lake
