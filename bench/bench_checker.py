"""Benchmark of the checker engines (not a test).

Generates synthetic Parquet histories of 100k, 1M and 10M operations (cached
under ~/.cache/faultline/bench, never in the repo), then times, median of
``--repeats``: the Spark engine (a warm session, whole ``check``), the pandas
engine (in a child process with a memory cap, so running out of memory is
reported with where it stopped; its peak resident memory beside its time) and a
bare Spark scan of the same files (read + count, and a full read of every column
to a no-op sink). With ``--whole`` it also times whole processes, as a user meets
them: the full-column scan (xxhash64 over every column) and ``python -m checkers``
with ``--whole-engine`` (auto by default; its verdict's engine named), one beside
the other. With ``--txn`` the Spark engine also judges the transactional (contract
v2) form of each history (checkers.synth_txn), warm, in turn with the v1 one.
With ``--groups`` (and nothing else) each engine judges a history of six group
members committing (contract v3, checkers.synth_groups) in turn with the same
history without its commits (v1): Spark warm, pandas in its capped child.

    .venv/bin/python bench/bench_checker.py [--sizes 100000,1000000,10000000] [--repeats 3]
    .venv/bin/python bench/bench_checker.py --groups --sizes 10000000 --repeats 3
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from checkers.api import check  # noqa: E402
from checkers.argparser import ArgumentParser  # noqa: E402
from checkers.synth import SynthSpec, generate, write_history  # noqa: E402

CACHE = Path(os.environ.get("FAULTLINE_BENCH_CACHE", Path.home() / ".cache" / "faultline" / "bench"))

PANDAS_CHILD = """
import resource, sys, time
limit = int(sys.argv[2]) * 2**30
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
start = time.perf_counter()
from checkers.api import check
try:
    verdict = check(sys.argv[1], engine="pandas")
except MemoryError:
    print(f"MemoryError after {time.perf_counter() - start:.1f}s", flush=True)
    sys.exit(4)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB
print(f"OK {time.perf_counter() - start:.3f} {sum(v for v in verdict['counts'].values() if v)} {peak:.2f}", flush=True)
"""


TILE = 10_000_000  # above this, histories are made tile by tile (checkers.synth_scale): one tile in memory


def tiled(directory: Path, size: int, form: str, consumers: int = 3) -> Path:
    """``size`` operations in tiles of TILE, written to a scratch folder renamed when whole (so a killed
    generation is never taken for a cached history)."""
    from checkers.synth_scale import write_tiled

    scratch = directory.with_name(directory.name + ".partial")
    shutil.rmtree(scratch, ignore_errors=True)
    spec = SynthSpec(operations=TILE, consumers=consumers, seed=size % 1000)
    write_tiled(spec, -(-size // TILE), scratch, form, log=lambda line: print(line, file=sys.stderr, flush=True))
    scratch.rename(directory)
    return directory


def history(size: int) -> Path:
    """The cached synthetic history of ``size`` operations (generated once)."""
    directory = CACHE / f"ops-{size}"
    if not (directory / "reads.parquet").exists():
        started = time.perf_counter()
        if size > TILE:
            tiled(directory, size, "v1")
        else:
            write_history(generate(SynthSpec(operations=size, seed=size % 1000)), directory)
        print(f"generated {directory} in {time.perf_counter() - started:.1f}s", flush=True)
    return directory


def txn_history(size: int) -> Path:
    """The transactional (contract v2) form of history(size): checkers.synth_txn over the same synthetic history."""
    from checkers.synth_txn import transactional

    directory = CACHE / f"txn-{size}"
    if not (directory / "reads.parquet").exists():
        started = time.perf_counter()
        if size > TILE:
            tiled(directory, size, "v2")
        else:
            write_history(transactional(generate(SynthSpec(operations=size, seed=size % 1000))), directory)
        print(f"generated {directory} in {time.perf_counter() - started:.1f}s", flush=True)
    return directory


GROUP_MEMBERS = 6  # one partition each (checkers.synth's six partitions)


def group_histories(size: int) -> tuple[Path, Path]:
    """A synthetic history of ``size`` operations read by a group of six members (v1, no commits), and the same
    history with the members' commits and the final drain's committed offsets (v3, checkers.synth_groups)."""
    from checkers.synth_groups import grouped

    v1, v3 = CACHE / f"groups{GROUP_MEMBERS}-v1-{size}", CACHE / f"groups{GROUP_MEMBERS}-v3-{size}"
    if size > TILE:
        for directory, form in ((v1, "v1"), (v3, "v3")):
            if not (directory / "reads.parquet").exists():
                tiled(directory, size, form, consumers=GROUP_MEMBERS)
    if not (v1 / "reads.parquet").exists() or not (v3 / "commits.parquet").exists():
        started = time.perf_counter()
        tables = generate(SynthSpec(operations=size, consumers=GROUP_MEMBERS, seed=size % 1000))
        write_history(tables, v1)
        write_history(grouped(tables, seed=size % 1000), v3)
        print(f"generated {v1} and {v3} in {time.perf_counter() - started:.1f}s", flush=True)
    return v1, v3


def groups_main(sizes: list[int], repeats: int, pandas_repeats: int, mem_gib: int | None) -> None:
    """v3 against v1 per size: the Spark engine warm, in turn; pandas (``mem_gib`` not None) in its child."""
    import pyarrow.parquet as pq

    results = []
    for size in sizes:
        v1, v3 = group_histories(size)
        for d in (v1, v3):  # the session, the JIT and each plan's code generated once; not timed
            started = time.perf_counter()
            counts = check(d, engine="spark")["counts"]
            print(f"first check of {d.name}: {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
        v1_s, v3_s = alternated(lambda d=v1: check(d, engine="spark"), lambda d=v3: check(d, engine="spark"), repeats)
        row: dict[str, Any] = {
            "operations": size, "rows": rows(v3), "commits": pq.ParquetFile(v3 / "commits.parquet").metadata.num_rows,
            "spark_v1_s": round(v1_s, 1), "spark_v3_s": round(v3_s, 1), "spark_v3_vs_v1": round(v3_s / v1_s, 2),
            "v3_counts": {k: counts[k] for k in ("group-skip", "redelivered", "rewound", "lost-commit")}}
        if mem_gib is not None:
            row |= {"pandas_v1": pandas_run(v1, pandas_repeats, mem_gib),
                    "pandas_v3": pandas_run(v3, pandas_repeats, mem_gib)}
        results.append(row)
        print(json.dumps(row), flush=True)
    print(f"\ncores: {os.cpu_count()}  repeats: {repeats} (median), a group of {GROUP_MEMBERS} members")
    print(f"{'operations':>11} {'commits':>8} {'spark v1 s':>10} {'spark v3 s':>10} {'v3/v1':>6} "
          f"{'pandas v1 s':>16} {'pandas v3 s':>16}")
    for r in results:
        print(f"{r['operations']:>11} {r['commits']:>8} {r['spark_v1_s']:>10} {r['spark_v3_s']:>10} "
              f"{r['spark_v3_vs_v1']:>6} {r.get('pandas_v1', 'skipped'):>16} {r.get('pandas_v3', 'skipped'):>16}")


def alternated(first: Any, second: Any, repeats: int) -> tuple[float, float]:
    """Medians of ``first`` and ``second`` run in turn (so drift on a shared machine hits both alike)."""
    a: list[float] = []
    b: list[float] = []
    for _ in range(repeats):
        for fn, times in ((first, a), (second, b)):
            started = time.perf_counter()
            fn()
            times.append(time.perf_counter() - started)
        print(f"in turn: {a[-1]:.1f} s, {b[-1]:.1f} s", file=sys.stderr, flush=True)  # a figure even if cut short
    return statistics.median(a), statistics.median(b)


def rows(directory: Path) -> int:
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(directory / f"{t}.parquet").metadata.num_rows for t in ("writes", "reads"))


def timed(fn: Any, repeats: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def spark_scans(directory: Path, repeats: int) -> tuple[float, float]:
    from checkers.spark_session import spark_session

    spark = spark_session()
    paths = [str(directory / f"{t}.parquet") for t in ("writes", "reads")]

    def count() -> int:
        return sum(spark.read.parquet(p).count() for p in paths)

    def full() -> None:
        for p in paths:
            spark.read.parquet(p).write.format("noop").mode("overwrite").save()

    return timed(count, repeats)[0], timed(full, repeats)[0]


def pandas_run(directory: Path, repeats: int, mem_gib: int) -> str:
    """Median seconds of the pandas engine in a child process, and its peak resident memory (GiB)."""
    times, peaks = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-c", PANDAS_CHILD, str(directory), str(mem_gib)],
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parents[1],
        )
        wall = time.perf_counter() - started
        if proc.returncode != 0:
            tail = (proc.stdout.strip().splitlines() or proc.stderr.strip().splitlines() or ["?"])[-1]
            return f"failed after {wall:.1f}s (rc={proc.returncode}: {tail[:80]})"
        fields = proc.stdout.split()
        times.append(float(fields[1]))
        peaks.append(float(fields[3]))
    return f"{statistics.median(times):.1f} ({max(peaks):.2f} GiB)"


SCAN_CHILD = """
import sys
from pyspark.sql import functions as F
from checkers.spark_session import spark_session
spark = spark_session()
for t in ("writes", "reads"):
    frame = spark.read.parquet(f"{sys.argv[1]}/{t}.parquet")
    frame.select(F.max(F.xxhash64(*frame.columns))).collect()  # max: a sum would overflow (ANSI mode)
"""


def whole_processes(directory: Path, repeats: int, engine: str) -> tuple[float, float, str]:
    """Median seconds of the whole-process scan and of `python -m checkers --engine engine`, and its engine."""
    out = CACHE / "verdict"
    repo = Path(__file__).resolve().parents[1]
    scan = [sys.executable, "-c", SCAN_CHILD, str(directory)]
    checker = [sys.executable, "-m", "checkers", str(directory), "--out", str(out), "--engine", engine]
    scan_s = timed(lambda: subprocess.run(scan, capture_output=True, cwd=repo, check=True), repeats)[0]
    print(f"whole-process scan of {directory.name}: {scan_s:.1f} s", file=sys.stderr, flush=True)  # even if cut short
    check_s = timed(lambda: subprocess.run(checker, capture_output=True, cwd=repo), repeats)[0]
    judged = json.loads((out / "verdict.json").read_text())["engine"]
    return scan_s, check_s, judged


def main() -> None:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000,10000000")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pandas-repeats", type=int, default=None, help="default: --repeats")
    parser.add_argument(
        "--pandas-mem-gib", type=int, default=16, help="address-space cap of the pandas child"
    )
    parser.add_argument("--skip-pandas", action="store_true")
    parser.add_argument("--whole", action="store_true", help="also whole processes: scan and python -m checkers")
    parser.add_argument("--whole-engine", default="auto", help="the --engine of the whole-process checker")
    parser.add_argument("--skip-warm", action="store_true",
                        help="no check or scan in this process's session: with --whole, the whole processes only")
    parser.add_argument("--skip-whole", action="store_true", help="with --whole: leave the whole processes out")
    parser.add_argument("--txn", action="store_true",
                        help="also the Spark engine on the transactional form of each history, in turn with v1")
    parser.add_argument("--groups", action="store_true",
                        help="only: each engine on a history of six group members committing (v3) and without (v1)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.groups:
        groups_main(sizes, args.repeats, args.pandas_repeats or args.repeats,
                    None if args.skip_pandas else args.pandas_mem_gib)
        return
    dirs = {size: history(size) for size in sizes}
    if not args.skip_warm:  # warm the session and the JIT; not timed (above TILE: on a history of TILE)
        check(dirs[sizes[0]] if sizes[0] <= TILE else history(TILE), engine="spark")
    results = []
    for size in sizes:
        directory = dirs[size]
        if args.skip_warm:
            row = {"operations": size, "rows": rows(directory)}
            scan_s, check_s, judged = whole_processes(directory, args.repeats, args.whole_engine)
            row |= {"whole_scan_s": round(scan_s, 1), "whole_check_s": round(check_s, 1), "whole_engine": judged,
                    "whole_vs_scan": round(check_s / scan_s, 2)}
            print(json.dumps(row), flush=True)
            continue
        spark_s, verdict = timed(lambda d=directory: check(d, engine="spark"), args.repeats)
        v2 = {}
        if args.txn:
            txn_dir = txn_history(size)
            check(txn_dir, engine="spark")  # its plan's code generated once, as the v1 history's was
            v1_s, v2_s = alternated(lambda d=directory: check(d, engine="spark"),
                                    lambda d=txn_dir: check(d, engine="spark"), args.repeats)
            v2 = {"spark_v1_s": round(v1_s, 1), "spark_v2_s": round(v2_s, 1), "v2_vs_v1": round(v2_s / v1_s, 2)}
        count_s, full_s = spark_scans(directory, args.repeats)
        pandas = (
            "skipped"
            if args.skip_pandas
            else pandas_run(directory, args.pandas_repeats or args.repeats, args.pandas_mem_gib)
        )
        row = {
            "operations": size,
            "rows": rows(directory),
            "spark_s": round(spark_s, 1),
            "pandas_s": pandas,
            "scan_count_s": round(count_s, 2),
            "scan_full_s": round(full_s, 2),
            "spark_vs_full_scan": round(spark_s / full_s, 1) if full_s else None,
            "valid": verdict["valid"],
            **v2,
        }
        if args.whole and not args.skip_whole:
            print(json.dumps(row), file=sys.stderr, flush=True)  # the warm figures, even if a whole process is cut
            scan_s, check_s, judged = whole_processes(directory, args.repeats, args.whole_engine)
            row |= {"whole_scan_s": round(scan_s, 1), "whole_check_s": round(check_s, 1), "whole_engine": judged,
                    "whole_vs_scan": round(check_s / scan_s, 1)}
        results.append(row)
        print(json.dumps(row), flush=True)
    if args.skip_warm:
        return
    print(f"\ncores: {os.cpu_count()}  repeats: {args.repeats} (median)")
    header = f"{'operations':>11} {'rows':>11} {'spark s':>8} {'pandas s':>10} {'scan count s':>13} {'scan full s':>12} {'spark/full':>10}"
    print(header)
    for r in results:
        print(
            f"{r['operations']:>11} {r['rows']:>11} {r['spark_s']:>8} {r['pandas_s']:>10} "
            f"{r['scan_count_s']:>13} {r['scan_full_s']:>12} {r['spark_vs_full_scan']:>10}"
        )
    if args.txn:
        print(f"\nSpark, warm, v1 and v2 in turn: {'operations':>11} {'v1 s':>6} {'v2 s':>6} {'v2/v1':>6}")
        for r in results:
            print(f"{'':>31}{r['operations']:>11} {r['spark_v1_s']:>6} {r['spark_v2_s']:>6} {r['v2_vs_v1']:>6}")
    if args.whole and not args.skip_whole:
        print(f"\nwhole processes ({args.whole_engine}): {'operations':>11} {'scan s':>7} {'checker s':>10} {'engine':>7} {'x scan':>7}")
        for r in results:
            print(f"{'':>24}{r['operations']:>11} {r['whole_scan_s']:>7} {r['whole_check_s']:>10} "
                  f"{r['whole_engine']:>7} {r['whole_vs_scan']:>7}")


if __name__ == "__main__":
    main()
