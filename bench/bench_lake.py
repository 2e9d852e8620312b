"""Benchmark of the results lake (not a test): ingest of 100 synthetic runs, the notebook over them, one more run.

Builds (once, cached under ~/.cache/faultline/bench/lake-<runs>x<ops>) a results folder of
``--runs`` synthetic finished runs with ``--operations`` operations in all (history from
checkers.synth, verdict from the pandas engine, run.json), then times into a fresh lake:
the first ingest of every run, the notebook end to end (papermill, Spark ``local[*]``, HTML
export), and a second ingest after one new run is added.

    .venv/bin/python bench/bench_lake.py [--runs 100] [--operations 10000000]
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spark_analysis.ingest import ingest  # noqa: E402
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


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--operations", type=int, default=10_000_000)
    args = parser.parse_args()
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
