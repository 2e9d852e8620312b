"""Benchmark (not a test): unsyncfs's own throughput with no fault active, one binary against another.

No cluster: each round mounts a binary over a fresh backing directory (as the runtimes mount it over a node's
data, `-mode journal`; a binary that takes `-faults`/`-status` gets them, as the harness gives them, with no
rule ever set) and runs, through the mount, what a broker's log does:
  (append) sequential 4 KiB appends to one file, an fsync after every MiB, `--mib` MiB in all;
  (fsync)  1 KiB appends each followed by an fsync (flush.messages=1), `--syncs` of them.
The binaries take turns within each round (the first of a round alternates), so both see the same machine;
the figures are medians over `--rounds`, with the filesystem process's own CPU seconds per MiB and per fsynced
append beside them (from /proc: what the binary costs, less moved by other work on a shared machine than a rate). Issue 40's target: the binary with disk faults within 5% of the one
before them (`git log -- testbed/unsyncfs`: 60b98e7 is the last commit before the faults).

    sudo .venv/bin/python bench/bench_unsyncfs_fuse.py OLD_BINARY NEW_BINARY [--rounds 5] [--mib 256]
        [--syncs 3000] [--dir DIR] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def takes_faults(binary: str) -> bool:
    """Whether the binary knows the disk faults' flags (its usage line names -faults)."""
    out = subprocess.run([binary, "-h"], capture_output=True, text=True, check=False)
    return "-faults" in out.stdout + out.stderr


def mounted(binary: str, work: Path, label: str) -> tuple[subprocess.Popen[str], Path]:
    backing = work / f"{label}-data"
    shutil.rmtree(backing, ignore_errors=True)
    shutil.rmtree(work / f".{label}-data.unsynced", ignore_errors=True)
    backing.mkdir(parents=True)
    argv = [binary, "-backing", str(backing), "-name", f"bench-{label}", "-mode", "journal"]
    if takes_faults(binary):
        argv += ["-faults", str(work / f"{label}.faults.json"), "-status", str(work / f"{label}.status.json")]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != "mounted":
        proc.kill()
        raise SystemExit(f"{binary} did not mount over {backing}")
    return proc, backing


def unmount(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)  # a clean shutdown: sync everything, unmount, exit
    if proc.wait(timeout=60) != 0:
        raise SystemExit(f"unsyncfs pid {proc.pid} exited {proc.returncode}")


def cpu_s(pid: int) -> float:
    """The process's user + system CPU seconds so far (/proc/PID/stat fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def appends(path: Path, mib: int) -> float:
    """MiB/s of 4 KiB appends with an fsync after each MiB."""
    block = b"x" * 4096
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    start = time.perf_counter()
    for i in range(mib * 256):
        os.write(fd, block)
        if i % 256 == 255:
            os.fsync(fd)
    took = time.perf_counter() - start
    os.close(fd)
    return mib / took


def synced_appends(path: Path, syncs: int) -> float:
    """Appends per second, 1 KiB each followed by its fsync."""
    block = b"y" * 1024
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    start = time.perf_counter()
    for _ in range(syncs):
        os.write(fd, block)
        os.fsync(fd)
    took = time.perf_counter() - start
    os.close(fd)
    return syncs / took


def one(binary: str, label: str, args: argparse.Namespace, work: Path) -> dict[str, float]:
    proc, backing = mounted(binary, work, label)
    try:
        cpu0 = cpu_s(proc.pid)
        figures = {"append_mib_s": appends(backing / "00000000000000000000.log", args.mib)}
        cpu1 = cpu_s(proc.pid)
        figures["fsync_per_s"] = synced_appends(backing / "00000000000000000001.log", args.syncs)
        figures["cpu_ms_per_mib"] = (cpu1 - cpu0) * 1000 / args.mib
        figures["cpu_us_per_fsync"] = (cpu_s(proc.pid) - cpu1) * 1e6 / args.syncs
    finally:
        unmount(proc)
    shutil.rmtree(backing, ignore_errors=True)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", help="the binary before (e.g. built from 60b98e7)")
    parser.add_argument("new", help="the binary after (build/bin/unsyncfs)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--mib", type=int, default=256, help="MiB of 4 KiB appends per measurement")
    parser.add_argument("--syncs", type=int, default=3000, help="fsynced 1 KiB appends per measurement")
    parser.add_argument("--dir", default="/tmp", help="where the backing directories go (the nodes' data's disk)")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args(argv)
    work = Path(args.dir) / f"faultline-bench-fuse-{os.getpid()}"
    work.mkdir(parents=True)
    runs: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
    load_start = os.getloadavg()
    try:
        for i in range(args.rounds):
            order = ("old", "new") if i % 2 == 0 else ("new", "old")
            for label in order:
                runs[label].append(one(getattr(args, label), label, args, work))
                got = runs[label][-1]
                print(f"round {i + 1} {label}: {got['append_mib_s']:.1f} MiB/s appends "
                      f"({got['cpu_ms_per_mib']:.2f} CPU ms/MiB), {got['fsync_per_s']:.0f} fsynced appends/s "
                      f"({got['cpu_us_per_fsync']:.1f} CPU us each)", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results: dict[str, Any] = {"runs": runs, "load_average_start": load_start, "load_average_end": os.getloadavg(),
                               "cpus": os.cpu_count()}
    for key in ("append_mib_s", "fsync_per_s", "cpu_ms_per_mib", "cpu_us_per_fsync"):
        old, new = (statistics.median(r[key] for r in runs[label]) for label in ("old", "new"))
        ratios = [n[key] / o[key] for o, n in zip(runs["old"], runs["new"], strict=True) if o[key] > 0]
        paired = statistics.median(ratios) if ratios else math.nan  # CPU below a clock tick on tiny sizes
        results[key] = {"old": old, "new": new, "ratio": new / old if old else math.nan, "paired_ratio": paired}
        aim = "(target >= 0.95)" if key.endswith("_s") else "(a cost: target <= 1.05)"
        print(f"{key}: old {old:.2f}, new {new:.2f}: {results[key]['ratio']:.3f}x, median of the rounds' ratios {paired:.3f} {aim}")
    print(f"load average {load_start[0]:.1f} at start, {os.getloadavg()[0]:.1f} at end ({os.cpu_count()} CPUs)")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
