"""`python -m spark_analysis`: the results lake's command line.

    ingest RESULTS_DIR [--lake DIR] [--spark-master URL]   add finished runs to the lake
    spark-cluster [--dir DIR]                               a standalone master + worker on loopback until Ctrl-C

Exit status: 0 done (skipped run folders are lines on stdout, not failures), 3 bad
input (one line on stderr). With `--spark-master`, the ingest also reads the lake back
through that Spark master, so a lake the cluster's executors cannot see (a path only
this machine has) fails here rather than in the notebook.
Must never: write into a run folder.
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import threading
from pathlib import Path
from typing import NoReturn

from testbed.errors import HarnessError, UsageError
from testbed.paths import RESULTS_DIR

DEFAULT_LAKE = RESULTS_DIR / "lake"


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def build_parser() -> Parser:
    parser = Parser(prog="python -m spark_analysis", description="The results lake: ingest runs, analyse them.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    ingest = sub.add_parser("ingest", help="add every finished run under RESULTS_DIR that the lake lacks")
    ingest.add_argument("results", type=Path, help="a results folder (runs anywhere below it)")
    ingest.add_argument("--lake", type=Path, default=None, help=f"the lake (default {DEFAULT_LAKE})")
    ingest.add_argument("--jobs", type=int, default=None, help="processes reading run folders (default: up to 2)")
    ingest.add_argument("--spark-master", default=None,
                        help="also read the lake back through this Spark master (e.g. spark://host:7077)")
    cluster = sub.add_parser("spark-cluster", help="run a standalone Spark master and worker on loopback until Ctrl-C")
    cluster.add_argument("--dir", type=Path, default=None, help="logs and work folder (default: a temporary one)")
    return parser


def verify_with_spark(lake: Path, master: str, expected_runs: int) -> str:
    from checkers.spark_session import spark_session

    spark = spark_session(master)
    seen = spark.read.parquet(str((lake / "runs").resolve())).count()
    if seen != expected_runs:
        raise HarnessError(f"{lake}: Spark at {master} sees {seen} runs, the lake holds {expected_runs}: "
                           "is the lake on storage every executor can read?")
    return f"ingest: Spark at {master} reads the {seen} runs of {lake}"


def cmd_ingest(args: argparse.Namespace) -> int:
    from spark_analysis.ingest import default_jobs, ingest
    from spark_analysis.lake import committed

    lake = args.lake or DEFAULT_LAKE
    result = ingest(args.results, lake, sys.stdout, args.jobs or default_jobs())
    print(result.summary() + f" -> {lake}")
    if args.spark_master:
        print(verify_with_spark(lake, args.spark_master, len(committed(lake)[0])))
    return 0


def cmd_spark_cluster(args: argparse.Namespace) -> int:
    from spark_analysis.standalone import standalone_cluster

    work = args.dir or Path(tempfile.mkdtemp(prefix="faultline-spark-"))
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    with standalone_cluster(work) as cluster:
        print(f"spark master {cluster.url} (worker: {cluster.cores} cores, {cluster.memory}; "
              f"processes {cluster.pids()}, logs in {work}); Ctrl-C stops both", flush=True)
        done.wait()
    print("spark master and worker stopped")
    return 0


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return {"ingest": cmd_ingest, "spark-cluster": cmd_spark_cluster}[args.command](args)
    except HarnessError as exc:
        print(f"spark_analysis: {exc}", file=sys.stderr)
        return exc.exit_status
