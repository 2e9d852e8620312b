"""`python -m checkers HISTORY_DIR --out OUT_DIR [--engine auto|spark|pandas] [--spark-master URL]`.

Exit status: 0 valid, 1 invalid, 2 unknown (verdict written with a reason),
3 the checker failed (bad input: one line on stderr naming the file, the line
or column and the problem; no verdict written) or a usage error (an unknown
option, a bad ``--engine``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from checkers.api import ENGINES, check
from checkers.argparser import ArgumentParser
from checkers.errors import HistoryError, TooLarge
from checkers.verdict import EXIT_FAILED, exit_status, write_verdict


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = ArgumentParser(prog="python -m checkers", description="Judge a faultline history.")
    parser.add_argument("history_dir", type=Path, help="directory holding writes, reads, ... tables")
    parser.add_argument("--out", type=Path, required=True, help="directory to write verdict.json into")
    parser.add_argument("--engine", choices=ENGINES, default="auto",
                        help="analysis engine (default auto: pandas when the history fits comfortably in memory, "
                             "else Spark; Spark whenever --spark-master is given)")
    parser.add_argument("--spark-master", default=None, help="Spark master URL (default local[*]; implies Spark)")
    parser.add_argument("--verbose", action="store_true", help="let Spark and libraries write to stderr")
    return parser.parse_args(argv)


@contextmanager
def quiet_stderr(enabled: bool) -> Iterator[None]:
    """Send file descriptor 2 to a scratch file while the check runs.

    The JVM Spark starts inherits it, so its start-up chatter cannot bury the
    one-line message a failed check prints.
    """
    if not enabled:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as scratch:
        os.dup2(scratch.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


def main(argv: list[str] | None = None) -> int:
    """Run the checker; return the exit status."""
    args = parse_args(argv)
    if not args.verbose:
        warnings.simplefilter("ignore")
    try:
        with quiet_stderr(not args.verbose):
            verdict = check(args.history_dir, engine=args.engine, spark_master=args.spark_master)
        path = write_verdict(verdict, args.out)
    except HistoryError as exc:
        print(f"checkers: bad history: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except TooLarge as exc:
        print(f"checkers: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except OSError as exc:
        print(f"checkers: cannot write verdict: {exc}", file=sys.stderr)
        return EXIT_FAILED
    counts = " ".join(f"{k}={n}" for k, n in verdict["counts"].items() if n)
    print(f"valid={verdict['valid']} engine={verdict['engine']} {counts or 'no anomalies'} -> {path}")
    if "reason" in verdict:
        print(f"checkers: unknown: {verdict['reason']}", file=sys.stderr)
    return exit_status(verdict)
