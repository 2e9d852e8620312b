"""`make bench-phases`: where each configuration's time goes, read from its run folder.

A benchmark, not a test. With scenario names it first runs them (one `faultline run`
of all, so one warm Spark session, as `make test-scenarios` does) into a scratch
results folder; with `--results DIR` it reads runs made before. Per configuration
it prints the seconds of each phase from `harness.log` (the progress lines of
harness.progress: provisioning, running (the story), healing, settling, stopping
producers, draining (and teardown), checking), the end being `report.html`'s
mtime (the last file a run writes), and the split of the judging ("judged in ...").
`checking` runs from the story's end to report.html: with judging overlapped
by the next story (harness.pipeline) it is mostly off the wall clock, which
`wall share` (from the configuration's start to the next one's) shows.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PHASE = re.compile(r"^(\S+ \S+) INFO faultline\.progress \[[^\]]+\] ([a-z ]+) \(t\+")
STAMP = "%Y-%m-%d %H:%M:%S,%f"
ORDER = ["provisioning", "running", "healing", "settling", "stopping producers", "draining", "checking"]
SPLITS = [re.compile(r"judged in [\d.]+ s: (.+)$", re.M)]


def phases(run_dir: Path) -> dict[str, float]:
    """Seconds per phase of one configuration's run folder (local time stamps, as harness.log writes them)."""
    marks: list[tuple[str, float]] = []
    for line in (run_dir / "harness.log").read_text().splitlines():
        found = PHASE.match(line)
        if found:
            marks.append((found.group(2), datetime.strptime(found.group(1), STAMP).timestamp()))
    end = (run_dir / "report.html").stat().st_mtime
    out = {name: (marks[i + 1][1] if i + 1 < len(marks) else end) - at for i, (name, at) in enumerate(marks)}
    out["total"] = end - marks[0][1]
    return out


def splits(run_dir: Path) -> list[str]:
    text = (run_dir / "harness.log").read_text()
    return [m.group(1) for pattern in SPLITS for m in [pattern.search(text)] if m]


def run_folders(results: Path) -> list[Path]:
    return sorted(p.parent for p in results.rglob("harness.log") if (p.parent / "report.html").exists()
                  and "latest" not in p.parts)


def started_at(run_dir: Path) -> float:
    first = (run_dir / "harness.log").read_text().split("\n", 1)[0]
    return datetime.strptime(" ".join(first.split()[:2]), STAMP).timestamp()


def table(results: Path) -> None:
    """One row per configuration, in the order they ran. `wall share`: from its start to the next one's (the
    last: to its report), what it added to the wall clock; with judging overlapped by the next story, that is
    less than its total."""
    print("| configuration | " + " | ".join(ORDER) + " | total | wall share | wall share - story |")
    print("| --- " * (len(ORDER) + 4) + "|")
    sums: dict[str, float] = {}
    folders = sorted(run_folders(results), key=started_at)
    for i, run_dir in enumerate(folders):
        p = phases(run_dir)
        name = re.sub(r"/?\d{8}T[\d.]+Z", "", str(run_dir.relative_to(results))).strip("/") or run_dir.name
        cells = [f"{p.get(k, 0.0):.1f}" for k in ORDER]
        end = started_at(folders[i + 1]) if i + 1 < len(folders) else (run_dir / "report.html").stat().st_mtime
        share = end - started_at(run_dir)
        print(f"| {name} | " + " | ".join(cells) + f" | {p['total']:.1f} | {share:.1f} | "
              f"{share - p.get('running', 0.0):.1f} |")
        for k, v in {**p, "share": share, "overhead": share - p.get("running", 0.0)}.items():
            sums[k] = sums.get(k, 0.0) + v
        for detail in splits(run_dir):
            print(f"|   {detail} |" + " |" * (len(ORDER) + 3))
    print("| **sum** | " + " | ".join(f"{sums.get(k, 0.0):.1f}" for k in ORDER)
          + f" | {sums.get('total', 0.0):.1f} | {sums.get('share', 0.0):.1f} | {sums.get('overhead', 0.0):.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("scenarios", nargs="*", help="scenario names to run first (scenarios/<name>.yaml)")
    parser.add_argument("--results", type=Path, help="read these results instead of running")
    args = parser.parse_args()
    if args.results is not None:
        table(args.results)
        return
    with tempfile.TemporaryDirectory(prefix="faultline-bench-") as tmp:
        started = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "harness", "run",
                               *[f"scenarios/{s}.yaml" for s in args.scenarios or ["smoke"]], "--results", tmp],
                              cwd=REPO)
        print(f"\nwall time of the one `run`: {time.monotonic() - started:.1f} s (exit {proc.returncode})\n")
        table(Path(tmp))


if __name__ == "__main__":
    main()
