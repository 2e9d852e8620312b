"""`python -m harness campaign CAMPAIGN.yaml`: plan, check, run within the budget, write, compare, ingest.

Everything that can be known before a run is checked first (the campaign file, every spec it would
run, the machine: `check_can_provision`), so bad input is one line and exit status 3 with nothing
written. Then results/campaigns/<timestamp>/ is made (with a `latest` link beside it), the cases
run (`runner`), and after each one campaign.json, junit.xml, summary.md and index.html are written
again, so a killed campaign still leaves them. At the end the previous campaign of the same name is
read from the lake, what changed is written into the outputs, this campaign's rows are added to the
lake's campaigns table and its runs ingested. Exit status 1 on any REGRESSION (or FAIL), else 0.
Must never: let the lake decide the exit status, or start a run before every spec is known good.
"""

from __future__ import annotations

import logging
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from campaign import flakes
from campaign import lake as lakes
from campaign.campaign_report import CampaignReport, change_lines
from campaign.changes import Changes, compare
from campaign.config import Campaign, load_campaign, parse_duration
from campaign.outputs import INDEX_FILE, SUMMARY_FILE, write_outputs
from campaign.plan import Case, coverage_order, date_seed, file_cases, more_copies, without_recorded
from campaign.records import CaseResult
from campaign.runner import DEFAULT_OVERHEAD_S, Runner, RunSpecs, default_run_specs
from campaign.shards import Shard, deal, shard_record
from harness.scenario import link_latest
from harness.spec import merge
from testbed.errors import UsageError
from testbed.lifecycle import check_can_provision, require_root, terminate_on_sigterm, timestamp
from testbed.paths import RESULTS_DIR

log = logging.getLogger("faultline.campaign")
CAMPAIGNS = "campaigns"
RUNS = "runs"


@dataclass
class Options:
    """The command line of `campaign` (tests build one directly)."""

    path: Path
    budget: str | None = None
    seed: int | None = None
    results: Path | None = None
    lake: Path | None = None
    engine: str | None = None
    runtime: str | None = None
    kafka_version: str | None = None
    overhead_s: float | None = None  # a run's time on top of its duration until one is measured (default: the runner's)
    shard: Shard | None = None  # run only this share of the plan (campaign.shards)
    resume: tuple[Path, ...] = ()  # lakes whose runs of this campaign count: plan what they lack or owe (--resume)


def cli_overrides(options: Options) -> dict[str, object]:
    """--runtime and --kafka-version as spec overrides of every run."""
    cluster = {k: v for k, v in (("runtime", options.runtime), ("kafka_version", options.kafka_version)) if v}
    return {"cluster": cluster} if cluster else {}


def check_machine(cases: list[Case], engine: str | None = None) -> None:
    """The checks of `harness run`: the checker engines there, root, then once per distinct cluster the machine
    free, the runtime there, Kafka cached."""
    from checkers.api import missing_engine

    for case in cases:
        problem = missing_engine(engine or case.load().checker)
        if problem:
            raise UsageError(f"{case.source}: {problem}")
    require_root()
    seen: set[str] = set()
    for case in cases:
        settings = case.load().cluster
        if repr(settings) not in seen:
            seen.add(repr(settings))
            check_can_provision(settings)


@dataclass
class Plan:
    campaign: Campaign
    cases: list[Case]
    refused: list[dict[str, Any]]
    budget_s: float
    seed: int
    overhead_s: float = DEFAULT_OVERHEAD_S
    owed: dict[tuple[str, str], int] = field(default_factory=dict)  # runs added for the flake goal (--resume)

    @property
    def owed_line(self) -> str:
        """The configurations the flake goal runs again and how many times, or ""."""
        if not self.owed:
            return ""
        cases = ", ".join(f"{s} [{c}] {n}" for (s, c), n in sorted(self.owed.items()))
        return f"owed to the flake goal (runs until each flake leaves its window): {cases}\n"

    def estimate_s(self, case: Case) -> float:
        """A case's expected run time before anything ran: its spec's duration plus the overhead."""
        return case.load().duration_s + self.overhead_s

    def share(self, shard: Shard | None) -> list[Case]:
        """The cases `shard` runs (every case without one), in plan order."""
        return self.cases if shard is None else deal(self.cases, shard.count, self.estimate_s)[shard.index - 1]


def make_plan(options: Options) -> Plan:
    """The campaign file, the budget and seed, every case in order: everything known before a run starts."""
    campaign = load_campaign(options.path)
    budget = options.budget if options.budget is not None else campaign.budget_s
    if budget is None:
        raise UsageError(f"{options.path}: no budget: give --budget (e.g. 60m) or a `budget:` in the file")
    budget_s = parse_duration(budget, "--budget") if isinstance(budget, str) else float(budget)
    seed = options.seed if options.seed is not None else date_seed()
    campaign = replace(campaign, overrides=merge(campaign.overrides, cli_overrides(options)))
    listed, refused = file_cases(campaign, seed)
    cases = coverage_order(listed, seed)
    owed: dict[tuple[str, str], int] = {}
    if options.resume:
        try:
            rows = flakes.read_lakes(options.resume)
        except (OSError, ValueError) as exc:
            raise UsageError(f"--resume: the campaigns table of {', '.join(map(str, options.resume))} cannot be "
                             f"read ({exc})") from None
        recorded = flakes.recorded_runs(rows, campaign.name)
        owed = flakes.owed_runs(rows, campaign.name, campaign.flake_rate)
        totals = {c.key: max(campaign.repeat, recorded.get(c.key, 0) + owed.get(c.key, 0)) for c in cases}
        copies = max(totals.values(), default=campaign.repeat)
        if copies > campaign.repeat:  # a configuration that flaked runs past the repeat, until its window is clean
            listed, refused = more_copies(listed, refused, len(campaign.entries) // campaign.repeat, campaign.repeat,
                                          copies)
            cases = coverage_order(listed, seed)
        # dealt round-robin again: what is left of a scenario with many configurations would otherwise come last
        cases = coverage_order(without_recorded(cases, recorded, totals), seed)
    return Plan(campaign, cases, refused, budget_s, seed, options.overhead_s or DEFAULT_OVERHEAD_S, owed)


def run_campaign(options: Options, out: TextIO = sys.stdout, run_specs: RunSpecs = default_run_specs,
                 check: Callable[[list[Case], str | None], None] = check_machine, ingest: Callable[[Path, Path], str] =
                 lakes.ingest_runs, clock: Callable[[], float] | None = None) -> CampaignReport:
    """Run the campaign of `options`; the report says what it found (`report.status` is the exit status)."""
    plan = make_plan(options)
    campaign, cases, seed, budget_s = plan.campaign, plan.share(options.shard), plan.seed, plan.budget_s
    check(cases, options.engine or campaign.engine)

    stamp = timestamp()
    top = (options.results or RESULTS_DIR) / CAMPAIGNS
    folder = top / stamp
    folder.mkdir(parents=True, exist_ok=True)
    link_latest(top, folder)
    report = CampaignReport(f"{campaign.name}-{stamp}", campaign.name, options.path, folder, seed,
                            "--seed" if options.seed is not None else "the date", budget_s,
                            options.engine or campaign.engine, datetime.now(UTC), [], plan.refused)
    share = ""
    if options.shard is not None:
        report.shard = shard_record(options.shard, campaign.name, seed, plan.cases)
        share = f"shard {options.shard} of {len(plan.cases)}: "
    out.write(f"campaign {report.campaign_id}: {share}{len(cases)} runs planned over "
              f"{len({c.scenario for c in cases})} scenarios, seed {seed}, budget {budget_s:.0f} s; {folder}\n")
    out.write(plan.owed_line)
    runner = Runner(report.campaign_id, cases, folder / RUNS, budget_s, report.engine, run_specs, out,
                    on_progress=lambda results: _persist(report, results))
    if clock is not None:
        runner.clock = clock
    if options.overhead_s is not None:
        runner.overhead_s = options.overhead_s
    lake = options.lake or lakes.DEFAULT_LAKE
    try:
        with terminate_on_sigterm():  # SIGTERM between runs unwinds too: the outputs say what ran
            report.results = runner.run()
    except BaseException:  # interrupted: say what ran and what did not, ingest nothing, go on unwinding
        report.finished_at = datetime.now(UTC)
        finish(report, lake, None, out)
        raise
    report.finished_at = datetime.now(UTC)
    finish(report, lake, ingest, out)
    return report


def print_plan(options: Options, out: TextIO = sys.stdout) -> None:
    """The cases in running order with when each would start if every run passed and took its spec's duration
    plus the overhead; what the budget would leave out. Runs nothing."""
    plan = make_plan(options)
    cases, budget_s, overhead_s = plan.share(options.shard), plan.budget_s, plan.overhead_s
    at, fit = 0.0, 0
    share = f"shard {options.shard}: {len(cases)} of the plan's {len(plan.cases)} runs, " if options.shard else ""
    out.write(f"{share}seed {plan.seed}, budget {budget_s:.0f} s, {overhead_s:.0f} s per run on top of its duration\n")
    out.write(plan.owed_line)
    for number, case in enumerate(cases, 1):
        needs = plan.estimate_s(case)
        fits = at + needs <= budget_s
        out.write(f"{number:3d} {'' if fits else 'SKIP '}{at / 60:6.1f} min  {needs:5.0f} s  {case.kind:12s} "
                  f"{case.scenario} [{case.label}]\n")
        if fits:
            at, fit = at + needs, fit + 1
    out.write(f"{fit} of {len(cases)} runs fit in {budget_s / 60:.0f} min ({at / 60:.1f} min); "
              f"{len(plan.refused)} matrix cells refused\n")
    total = sum(plan.estimate_s(c) for c in plan.cases)
    longest = max((plan.estimate_s(c) for c in plan.cases), default=0.0)
    n = shards_for(total, longest, budget_s)
    out.write(f"the whole plan needs {total / 60:.1f} min: {n} shard{'s' if n > 1 else ''} (--shard I/{n}) fit it "
              f"in {budget_s / 60:.0f} min each\n")


def shards_for(total_s: float, longest_s: float, budget_s: float) -> int:
    """The N whose shares surely fit the budget: a share's time is at most total / N plus one case's."""
    if budget_s <= longest_s:
        return max(1, math.ceil(total_s / max(budget_s, 1.0)))  # a case longer than the budget never fits
    return max(1, math.ceil(total_s / (budget_s - longest_s)))


def _persist(report: CampaignReport, results: list[CaseResult]) -> None:
    report.results = results
    write_outputs(report)


def finish(report: CampaignReport, lake: Path, ingest: Callable[[Path, Path], str] | None, out: TextIO) -> None:
    """What changed since the last campaign, the lake written and the runs ingested, the outputs, the console's
    last lines. A shard leaves the lake to the merge of the shards."""
    if report.shard is not None:
        report.lake = (f"shard {report.shard['index']}/{report.shard['count']}: the lake is written when the shards "
                       f"are merged (harness campaign merge)")
        report.changes = Changes(None, note="a shard is compared with the last campaign when the shards are merged")
        _close(report, out)
        return
    rows = lakes.rows_of(report.results, report.name, report.started_at, report.seed, report.folder)
    try:
        previous_id, previous = lakes.previous_campaign(lake, report.name, report.campaign_id)
    except (OSError, ValueError) as exc:  # an unreadable lake is said, never fatal
        log.warning("cannot read the campaigns table in %s: %s", lake, exc)
        previous_id, previous = None, []
    report.changes = compare(rows, previous, previous_id)
    notes = []
    try:
        lakes.write_campaign(lake, report.campaign_id, rows)
        notes.append(f"campaign recorded in {lake / lakes.TABLE}")
    except OSError as exc:
        notes.append(f"campaign not recorded in the lake ({exc})")
    report.history = flakes.history_of(lake, report.name, report.source)
    if ingest is None:
        notes.append("runs not ingested (the campaign was interrupted)")
    elif any(r.attempts for r in report.results):
        notes.append(ingest(report.folder / RUNS, lake))
    report.lake = "; ".join(notes)
    _close(report, out)


def _close(report: CampaignReport, out: TextIO) -> None:
    write_outputs(report)
    out.write(f"campaign {report.campaign_id}: " + ", ".join(f"{n} {o}" for o, n in report.counts.items() if n) + "\n")
    for line in change_lines(report.changes):
        out.write(f"  {line}\n")
    for line in flakes.history_lines(report.history) if report.history else []:
        out.write(f"  {line}\n")
    for result in report.results:
        if result.skipped and not result.attempts:
            out.write(f"  skipped: {result.case.scenario} [{result.case.label}]: {result.skipped}\n")
    out.write(f"  {report.lake}\n  {report.folder / INDEX_FILE}\n  {report.folder / SUMMARY_FILE}\n")
    out.flush()
