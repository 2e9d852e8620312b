"""`make bench-cluster`: cluster up time (to ready) and down time, median of N runs.

A benchmark, not a test: it prints figures for BENCHMARKS.md. Target on 2 cores: up <= 20 s, down <= 3 s.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from checkers.argparser import ArgumentParser

REPO = Path(__file__).resolve().parent.parent


def timed(*args: str) -> float:
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "harness", *args], cwd=REPO, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"faultline {' '.join(args)} failed: {proc.stderr.strip()[-500:]}")
    return time.monotonic() - started


def main() -> None:
    parser = ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--runtime", help="as `cluster up --runtime` (default: its default)")
    args = parser.parse_args()
    runs = args.runs
    ups, downs = [], []
    with tempfile.TemporaryDirectory(prefix="faultline-bench-") as tmp:
        for i in range(runs):
            runtime = ["--runtime", args.runtime] if args.runtime else []
            ups.append(timed("cluster", "up", *runtime, "--run-dir", f"{tmp}/run{i}"))
            downs.append(timed("cluster", "down"))
            print(f"run {i + 1}: up {ups[-1]:.2f} s, down {downs[-1]:.2f} s", flush=True)
    print(f"runtime: {args.runtime or 'default'}  cores: {os.cpu_count()}  runs: {runs}")
    print(f"cluster up (to ready): median {statistics.median(ups):.2f} s  (target <= 20 s)")
    print(f"cluster down:          median {statistics.median(downs):.2f} s  (target <= 3 s)")


if __name__ == "__main__":
    main()
