"""`python -m harness campaign merge DIR... [--out DIR]`: the shards of one plan joined into one campaign.

Each DIR is a shard's campaign folder (the one with campaign.json) or a folder holding them (a CI
job's downloaded artifacts: its sub-folders, two levels down, `latest` links skipped). Everything
is checked before anything is written, each problem one line and exit status 3: every folder a
shard (run with --shard), all shards of one plan (the same campaign name, seed and cases), each
shard 1..N there exactly once, and their cases together exactly the plan, none twice. Then the
shards' run folders are copied (hard links where the disk allows) into the merged folder's
`runs/`, and the merged campaign is finished as an unsharded one is (`command.finish`): the
cases in plan order, each with the outcome its shard decided (a case and its re-run always run
in one shard, so flake or regression is decided as unsharded), what changed since the previous
campaign of the name, one campaigns-table partition and one ingest of every run into the lake,
one campaign.json, junit.xml, summary.md and index.html. Exit status as a campaign's.
Must never: change a shard's folder, or write anything when the shards do not make one plan.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from campaign import lake as lakes
from campaign.campaign_report import CampaignReport
from campaign.command import CAMPAIGNS, RUNS, finish
from campaign.outputs import CAMPAIGN_FILE
from campaign.plan import Case
from campaign.records import Attempt, CaseResult
from harness.scenario import link_latest
from testbed.errors import HarnessError, UsageError
from testbed.lifecycle import timestamp
from testbed.paths import RESULTS_DIR

LATEST = "latest"


@dataclass
class MergeOptions:
    shards: list[Path]
    out: Path | None = None  # the merged campaign's folder (default: RESULTS/campaigns/<timestamp>/)
    results: Path | None = None
    lake: Path | None = None


@dataclass
class ShardFolder:
    folder: Path
    data: dict[str, Any]

    @property
    def shard(self) -> dict[str, Any]:
        return dict(self.data["shard"])

    @property
    def label(self) -> str:
        return f"{self.shard['index']}/{self.shard['count']}"

    @property
    def plan(self) -> str:
        return (f"campaign {self.data.get('name')} seed {self.data.get('seed')}, "
                f"{len(self.shard.get('planned') or [])} runs, plan {self.shard.get('plan')}")


def campaign_folders(path: Path) -> list[Path]:
    """`path` if it holds campaign.json, else the folders one or two levels under it that do (no `latest`)."""
    if (path / CAMPAIGN_FILE).is_file():
        return [path]
    found = []
    for pattern in (f"*/{CAMPAIGN_FILE}", f"*/*/{CAMPAIGN_FILE}"):
        for file in sorted(path.glob(pattern)):
            parts = file.relative_to(path).parts[:-1]
            if not any(p == LATEST or (path.joinpath(*parts[:i + 1])).is_symlink() for i, p in enumerate(parts)):
                found.append(file.parent)
    return found


def read_shard(folder: Path) -> ShardFolder:
    file = folder / CAMPAIGN_FILE
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{file}: not a readable campaign.json ({exc})") from exc
    shard = data.get("shard") if isinstance(data, dict) else None
    if not isinstance(shard, dict) or not {"index", "count", "plan", "planned"} <= set(shard):
        raise UsageError(f"{folder}: not a shard (a campaign run without --shard): nothing to merge")
    return ShardFolder(folder, data)


def load_shards(paths: list[Path]) -> list[ShardFolder]:
    """Every shard of the plan, in shard order; a UsageError of one line when they are not exactly one plan's."""
    if not paths:
        raise UsageError("campaign merge: give the shards' folders (harness campaign merge DIR... [--out DIR])")
    shards: list[ShardFolder] = []
    for path in paths:
        folders = campaign_folders(path)
        if not folders:
            raise UsageError(f"{path}: no campaign.json in it or in a folder under it: not a shard's folder")
        shards += [read_shard(folder) for folder in folders]
    first = shards[0]
    for other in shards[1:]:
        if other.shard["plan"] != first.shard["plan"]:
            raise UsageError(f"{other.folder} and {first.folder} are shards of different plans "
                             f"({other.plan}; {first.plan})")
        if other.shard["count"] != first.shard["count"]:
            raise UsageError(f"{other.folder} is shard {other.label} but {first.folder} is shard {first.label}: "
                             f"shards of one plan split N ways are merged together")
    count = int(first.shard["count"])
    seen: dict[int, ShardFolder] = {}
    for shard in shards:
        index = int(shard.shard["index"])
        if index in seen:
            raise UsageError(f"shard {shard.label} given twice: {seen[index].folder} and {shard.folder}")
        seen[index] = shard
    missing = [f"{i}/{count}" for i in range(1, count + 1) if i not in seen]
    if missing:
        raise UsageError(f"shard {', '.join(missing)} missing: give every shard of the plan "
                         f"(given: {', '.join(s.label for s in sorted(shards, key=lambda s: s.shard['index']))})")
    ordered = [seen[i] for i in range(1, count + 1)]
    _check_cases(ordered)
    return ordered


def _ids(shard: ShardFolder) -> list[tuple[int, str, str]]:
    return [(int(c["entry"]), str(c["scenario"]), str(c["configuration"])) for c in shard.data.get("cases") or []]


def _check_cases(shards: list[ShardFolder]) -> None:
    planned = [(int(e), str(s), str(c)) for e, s, c in shards[0].shard["planned"]]
    owner: dict[tuple[int, str, str], ShardFolder] = {}
    for shard in shards:
        for key in _ids(shard):
            if key in owner:
                raise UsageError(f"{key[1]} [{key[2]}] is in shard {owner[key].label} ({owner[key].folder}) and in "
                                 f"shard {shard.label} ({shard.folder}): a run counted twice")
            owner[key] = shard
    if sorted(owner) != sorted(planned):
        strays = sorted(set(owner) - set(planned))
        lost = sorted(set(planned) - set(owner))
        what = f"not planned: {strays[0][1]} [{strays[0][2]}]" if strays else f"in no shard: {lost[0][1]} [{lost[0][2]}]"
        raise UsageError(f"the shards' runs are not their plan's ({what}; {len(strays)} not planned, "
                         f"{len(lost)} in no shard)")


def _attempt(raw: dict[str, Any], folder: Path) -> Attempt:
    run_dir = folder / raw["run_dir"] if raw.get("run_dir") else None
    return Attempt(int(raw["attempt"]), raw["outcome"], raw["expected"], raw["observed"],
                   datetime.fromisoformat(raw["started_at"]), float(raw["duration_s"]), run_dir,
                   str(raw.get("valid", "unknown")), {k: int(n) for k, n in (raw.get("counts") or {}).items()},
                   [str(m) for m in raw.get("mismatches") or []], str(raw.get("verdict_line") or ""))


def results_of(shards: list[ShardFolder], folder: Path) -> list[CaseResult]:
    """Every case of the plan in plan order, as its shard recorded it; run folders as copied under `folder`."""
    source = Path(shards[0].data["file"])
    by_id: dict[tuple[int, str, str], CaseResult] = {}
    for shard in shards:
        for key, raw in zip(_ids(shard), shard.data["cases"], strict=True):
            case = Case(key[0], raw["kind"], key[1], key[2], source, {}, settings=dict(raw.get("settings") or {}))
            by_id[key] = CaseResult(case, [_attempt(a, folder) for a in raw.get("attempts") or []], raw.get("skipped"))
    return [by_id[(int(e), str(s), str(c))] for e, s, c in shards[0].shard["planned"]]


def _link_or_copy(source: str, target: str) -> None:
    if os.path.lexists(target):
        raise HarnessError(f"{target}: two shards have this file; the merge stopped")
    try:
        os.link(source, target)
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK):
            raise
        shutil.copy2(source, target)


def _skip_latest(folder: str, names: list[str]) -> list[str]:
    return [n for n in names if n == LATEST and os.path.islink(os.path.join(folder, n))]


def copy_runs(shards: list[ShardFolder], folder: Path) -> None:
    """Every shard's runs/ into `folder`/runs/ (its `latest` links left out: each shard has its own)."""
    (folder / RUNS).mkdir(parents=True, exist_ok=True)
    for shard in shards:
        if (shard.folder / RUNS).is_dir():
            shutil.copytree(shard.folder / RUNS, folder / RUNS, symlinks=True, dirs_exist_ok=True,
                            ignore=_skip_latest, copy_function=_link_or_copy)


def _time(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def _merged_folder(options: MergeOptions, stamp: str) -> Path:
    if options.out is not None:
        if (options.out / CAMPAIGN_FILE).exists():
            raise UsageError(f"--out {options.out}: already holds a campaign: give a new folder")
        options.out.mkdir(parents=True, exist_ok=True)
        return options.out
    top = (options.results or RESULTS_DIR) / CAMPAIGNS
    folder = top / stamp
    folder.mkdir(parents=True, exist_ok=True)
    link_latest(top, folder)
    return folder


def merge_campaign(options: MergeOptions, out: TextIO = sys.stdout,
                   ingest: Callable[[Path, Path], str] = lakes.ingest_runs) -> CampaignReport:
    """Merge the shards of `options` into one campaign; the report says what it found (`status`: the exit status)."""
    shards = load_shards(options.shards)
    first = shards[0].data
    stamp = timestamp()
    folder = _merged_folder(options, stamp)
    copy_runs(shards, folder)
    started = [t for t in (_time(s.data.get("started_at")) for s in shards) if t]
    finished = [_time(s.data.get("finished_at")) for s in shards]
    report = CampaignReport(
        f"{first['name']}-{stamp}", first["name"], Path(first["file"]), folder, int(first["seed"]),
        first.get("seed_from", "--seed"), max(float(s.data.get("budget_s") or 0) for s in shards), first.get("engine"),
        min(started) if started else datetime.now(UTC), results_of(shards, folder), list(first.get("refused") or []),
        max(t for t in finished if t) if all(finished) else None)
    report.shards = [{"index": s.shard["index"], "count": s.shard["count"], "campaign_id": s.data.get("campaign_id"),
                      "folder": str(s.folder), "started_at": s.data.get("started_at"),
                      "finished_at": s.data.get("finished_at"), "elapsed_s": s.data.get("elapsed_s"),
                      "budget_s": s.data.get("budget_s"), "status": s.data.get("status"), "counts": s.data.get("counts")}
                     for s in shards]
    out.write(f"campaign {report.campaign_id}: {len(shards)} shards of {report.name} seed {report.seed} merged "
              f"({len(report.results)} runs planned); {folder}\n")
    finish(report, options.lake or lakes.DEFAULT_LAKE, ingest, out)
    return report
