"""Benchmark of `harness campaign merge` (not a test): SHARDS synthetic shards of RUNS runs each, merged.

Builds (once, cached under ~/.cache/faultline/bench/merge-<shards>x<runs>x<ops>) the shards' campaign
folders: a plan of shards × runs cases dealt as `--shard I/N` deals it, each case's run a synthetic
finished run folder (history, verdict, run.json from spark_analysis.synthetic) and each shard's
campaign.json, junit.xml, summary.md and index.html written by the campaign's own writers. Then
times the merge into a fresh folder and lake: the checks, the run folders copied (hard links), the
outputs, the campaigns table, and (unless --no-ingest) the one Spark ingest of every run.

    .venv/bin/python bench/bench_merge.py [--shards 8] [--runs 50] [--operations 2000] [--no-ingest]
"""

from __future__ import annotations

import io
import os
import shutil
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from campaign import lake as lakes  # noqa: E402
from campaign.campaign_report import CampaignReport  # noqa: E402
from campaign.merge import MergeOptions, merge_campaign  # noqa: E402
from campaign.outputs import write_outputs  # noqa: E402
from campaign.plan import CATALOGUE, Case  # noqa: E402
from campaign.records import CaseResult, judge_run  # noqa: E402
from campaign.shards import Shard, deal, shard_record  # noqa: E402
from checkers.argparser import ArgumentParser  # noqa: E402
from spark_analysis.synthetic import write_run  # noqa: E402

CACHE = Path(os.environ.get("FAULTLINE_BENCH_CACHE", Path.home() / ".cache" / "faultline" / "bench"))
NAME, SEED = "synthetic", 1


def write_shards(folder: Path, shards: int, runs: int, operations: int) -> list[Path]:
    """`shards` shard campaign folders under `folder`, `runs` cases each; the folders."""
    plan = [Case(i, CATALOGUE, f"synthetic-{i % 7}", f"c{i}", Path("synthetic.yaml"), {})
            for i in range(shards * runs)]
    started = datetime(2026, 11, 25, 2, tzinfo=UTC)
    made = []
    for index, share in enumerate(deal(plan, shards, lambda case: 60.0), 1):
        top = folder / f"shard-{index}"
        results = []
        for case in share:
            run_dir = write_run(top / "runs", case.entry, operations)
            results.append(CaseResult(case, [judge_run(run_dir, 1, started + timedelta(minutes=case.entry), 60.0)]))
        report = CampaignReport(f"{NAME}-shard-{index}", NAME, Path("synthetic.yaml"), top, SEED, "--seed", 3600.0,
                                "pandas", started, results, finished_at=started + timedelta(hours=1))
        report.shard = shard_record(Shard(index, shards), NAME, SEED, plan)
        write_outputs(report)
        made.append(top)
    return made


def main() -> int:
    parser = ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--runs", type=int, default=50, help="runs per shard")
    parser.add_argument("--operations", type=int, default=2000, help="operations per run's history")
    parser.add_argument("--no-ingest", action="store_true", help="leave out the Spark ingest of the runs")
    args = parser.parse_args()
    cached = CACHE / f"merge-{args.shards}x{args.runs}x{args.operations}"
    if not (cached / ".complete").exists():
        shutil.rmtree(cached, ignore_errors=True)
        began = time.perf_counter()
        write_shards(cached, args.shards, args.runs, args.operations)
        (cached / ".complete").write_text("ok\n")
        print(f"built {args.shards} shards of {args.runs} synthetic runs in {time.perf_counter() - began:.0f} s")
    work = CACHE / "merge-work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    ingest = (lambda runs, lake: "not ingested (--no-ingest)") if args.no_ingest else lakes.ingest_runs
    began = time.perf_counter()
    report = merge_campaign(MergeOptions([cached], out=work / "merged", lake=work / "lake"), io.StringIO(), ingest)
    seconds = time.perf_counter() - began
    print(f"merge of {args.shards} shards × {args.runs} runs ({len(report.results)} cases, "
          f"{'no ingest' if args.no_ingest else 'with the Spark ingest'}): {seconds:.1f} s; {report.lake}")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
