"""Benchmark of the results lake (not a test): ingest of 100 synthetic runs, the notebook over them, one more run.

Builds (once, cached under ~/.cache/faultline/bench/lake-<runs>x<ops>) a results folder of
``--runs`` synthetic finished runs with ``--operations`` operations in all (history from
checkers.synth, verdict from the pandas engine, run.json), then times into a fresh lake:
the first ingest of every run, the notebook end to end (papermill, Spark ``local[*]``, HTML
export), and a second ingest after one new run is added.

With ``--year 100,2400,24000`` it measures instead how the lake's cost grows with a year of nights (issue
41): for each size, a lake of that many runs (spark_analysis.synthetic_lake: one synthetic night of the
nightly campaign, 65 runs of 100k operations, ingested, then laid night after night, and a results folder
holding a stub of every run folder; built once and cached), then one more night of 65 run folders ingested
into it (timed, with the ingest's own steps: reading which runs the lake holds, looking for orphans, walking
the results folder), the notebook over it end to end (papermill's time per cell beside it), and the new night
taken out again.

    .venv/bin/python bench/bench_lake.py [--runs 100] [--operations 10000000]
    .venv/bin/python bench/bench_lake.py --year 100,2400,24000
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spark_analysis.ingest import default_jobs, ingest  # noqa: E402
from spark_analysis.notebook import run_notebook  # noqa: E402
from spark_analysis.synthetic import write_run  # noqa: E402

CACHE = Path(os.environ.get("FAULTLINE_BENCH_CACHE", Path.home() / ".cache" / "faultline" / "bench"))


def results_of(runs: int, operations: int) -> Path:
    folder = CACHE / f"lake-{runs}x{operations}"
    done = folder / ".complete"
    if not done.exists():
        shutil.rmtree(folder, ignore_errors=True)
        started = time.perf_counter()
        for i in range(runs):
            write_run(folder / "results", i, operations // runs)
        done.write_text("ok\n")
        print(f"built {runs} synthetic runs ({operations:,} operations) in {time.perf_counter() - started:.0f} s")
    return folder / "results"


def year_lake_of(runs: int) -> tuple[Path, Path]:
    from spark_analysis.lake_tables import PARTITION_COLUMNS
    from spark_analysis.synthetic_lake import year_lake

    out = CACHE / f"lake-year-{runs}-by-{'-'.join(PARTITION_COLUMNS)}"  # one cache per layout
    if not (out / ".complete").exists():
        shutil.rmtree(out, ignore_errors=True)
        started = time.perf_counter()
        year_lake(CACHE / "lake-year", out, runs, log=print)
        (out / ".complete").write_text("ok\n")
        print(f"built a lake of {runs} runs in {time.perf_counter() - started:.0f} s", flush=True)
    return out / "results", out / "lake"


def new_night() -> Path:
    """The 65 run folders of one more night (after any lake's last), made once."""
    from spark_analysis.synthetic import write_night

    folder = CACHE / "lake-year" / "new-night"
    if not (folder / ".complete").exists():
        shutil.rmtree(folder, ignore_errors=True)
        write_night(folder / "results", 400)
        (folder / ".complete").write_text("ok\n")
    return folder / "results"


def timed(fn: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result


def cell_seconds(executed: Path) -> list[float]:
    """papermill's duration of each code cell of the executed notebook."""
    cells = json.loads(executed.read_text(encoding="utf-8"))["cells"]
    return [round(c["metadata"].get("papermill", {}).get("duration") or 0.0, 1) for c in cells
            if c["cell_type"] == "code"]


def year(sizes: list[int], notebook: bool, ingest_night: bool = True) -> None:
    from spark_analysis import lake as lk

    night = new_night()
    rows = []
    for size in sizes:
        results, lake = year_lake_of(size)
        known, batches = lk.committed(lake)
        steps = {"committed_s": timed(lambda lake=lake: lk.committed(lake))[0],
                 "orphans_s": timed(lambda lake=lake, b=batches: lk.remove_orphans(lake, b))[0],
                 "walk_s": timed(lambda r=results, lake=lake, k=known: sum(1 for _ in lk.run_folders(r, lake, k)))[0]}
        row: dict[str, Any] = {"runs": len(known), **{k: round(v, 2) for k, v in steps.items()},
                               "files": sum(1 for _ in lake.rglob("*.parquet"))}
        if ingest_night:  # into a copy of the lake (a notebook may be reading the lake meanwhile)
            copy = CACHE / "lake-year-work" / "lake"
            shutil.rmtree(copy.parent, ignore_errors=True)
            shutil.copytree(lake, copy)
            added = [p.relative_to(night) for p in lk.run_folders(night, copy)]  # run folders, not their parents
            for p in added:
                shutil.copytree(night / p, results / p)
            try:
                seconds, result = timed(lambda r=results, c=copy: ingest(r, c, io.StringIO(), jobs=default_jobs()))
            finally:
                shutil.rmtree(copy.parent)
                for p in added:
                    shutil.rmtree(results / p)
            row |= {"new": len(result.added), "ingest_s": round(seconds, 1)}
        if notebook:
            seconds, (executed, _) = timed(lambda lake=lake: run_notebook(lake))
            row |= {"notebook_s": round(seconds, 1), "cells_s": cell_seconds(executed)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(f"\ncores: {os.cpu_count()}")
    print(f"{'runs':>7} {'files':>7} {'ingest 65 s':>11} {'of which: runs read':>19} {'orphans':>8} {'walk':>6} "
          f"{'notebook s':>10}")
    for r in rows:
        print(f"{r['runs']:>7} {r['files']:>7} {r.get('ingest_s', 'skipped'):>11} {r['committed_s']:>19} {r['orphans_s']:>8} "
              f"{r['walk_s']:>6} {r.get('notebook_s', 'skipped'):>10}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--operations", type=int, default=10_000_000)
    parser.add_argument("--year", default="", help="lake sizes in runs (e.g. 100,2400,24000): the year's figures")
    parser.add_argument("--skip-notebook", action="store_true", help="with --year: the ingest only (no Spark)")
    parser.add_argument("--skip-ingest", action="store_true", help="with --year: the notebook only")
    args = parser.parse_args()
    if args.year:
        year([int(n) for n in args.year.split(",")], not args.skip_notebook, not args.skip_ingest)
        return 0
    cached = results_of(args.runs, args.operations)
    work = CACHE / "lake-work"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(cached, work / "results", symlinks=True)
    lake = work / "lake"
    first = ingest(work / "results", lake, io.StringIO())
    print(f"ingest of {len(first.added)} runs: {first.seconds:.1f} s (rows {first.rows})")
    started = time.perf_counter()
    run_notebook(lake)
    print(f"notebook end to end: {time.perf_counter() - started:.1f} s")
    write_run(work / "results", args.runs, args.operations // args.runs)
    second = ingest(work / "results", lake, io.StringIO())
    print(f"second ingest, {len(second.added)} new run, {second.already} already in: {second.seconds:.1f} s")
    print(f"cores: {os.cpu_count()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
