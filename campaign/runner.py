"""Running a campaign's cases within its budget: each the way `harness run` runs one, a failure run again once.

Every attempt goes through `harness.scenario.run_specs` (the run flow of `harness run`: its run
folder, its verdict, report and junit.xml), or through the `run_specs` given, which is how the
fast tests drive a campaign on the fake runtime. Before each attempt the runner estimates how long
it takes (the spec's duration plus the overhead measured so far in this campaign) and starts it
only if that fits in what is left of the budget: a campaign stops between runs, never in one, and
every case it did not run is recorded as SKIPPED with the reason. A run tears its own cluster down
on every exit path, so a campaign that stops leaves nothing behind. The environment variable
FAULTLINE_CAMPAIGN_ID names the campaign to every run it starts (the lake records it).
Must never: interrupt a run, judge a run by its exit status alone, or start a run past the budget.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from campaign.plan import Case
from campaign.records import PASS, Attempt, CaseResult, harness_failure, judge_run
from checkers.configuration_result import ConfigurationResult
from harness.manifest import CAMPAIGN_ENV
from harness.spec import Spec
from testbed.errors import HarnessError
from testbed.lifecycle import TerminationRequested

# Before any run of this campaign has finished: what a run adds to its spec's duration (bring-up, settle,
# stopping clients, drain, replica dump, check, report). Measured on 2 cores: 13-33 s, the most for the
# first run of a campaign (the Spark session starts); see BENCHMARKS.md.
DEFAULT_OVERHEAD_S = 30.0
RunSpecs = Callable[[list[Spec], Path | None, str | None, TextIO], tuple[int, list[ConfigurationResult]]]


def default_run_specs(specs: list[Spec], results: Path | None, engine: str | None,
                      out: TextIO) -> tuple[int, list[ConfigurationResult]]:
    from harness.scenario import run_specs

    return run_specs(specs, results, engine, out)


@contextmanager
def campaign_environment(campaign_id: str) -> Iterator[None]:
    previous = os.environ.get(CAMPAIGN_ENV)
    os.environ[CAMPAIGN_ENV] = campaign_id
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(CAMPAIGN_ENV, None)
        else:
            os.environ[CAMPAIGN_ENV] = previous


@dataclass
class Runner:
    """Runs `cases` into `runs_dir` within `budget_s` seconds of `clock` (time.monotonic by default)."""

    campaign_id: str
    cases: list[Case]
    runs_dir: Path
    budget_s: float
    engine: str | None = None
    run_specs: RunSpecs = default_run_specs
    out: TextIO = sys.stdout
    clock: Callable[[], float] = time.monotonic
    overhead_s: float = DEFAULT_OVERHEAD_S
    on_progress: Callable[[list[CaseResult]], None] | None = None
    results: list[CaseResult] = field(default_factory=list)
    _overheads: list[float] = field(default_factory=list)
    _start: float = 0.0

    def run(self) -> list[CaseResult]:
        """Every case, each run, re-run or skipped; on an interrupt the rest are skipped, said, and it re-raises."""
        self._start = self.clock()
        self.results = [CaseResult(case) for case in self.cases]
        with campaign_environment(self.campaign_id):
            for number, result in enumerate(self.results, 1):
                try:
                    self._run_case(number, result)
                except (KeyboardInterrupt, TerminationRequested):
                    for rest in self.results[number - 1:]:
                        if not rest.attempts:
                            rest.skipped = "the campaign was interrupted"
                    self._progress()
                    raise
                self._progress()
        return self.results

    def _progress(self) -> None:
        if self.on_progress is not None:
            self.on_progress(self.results)

    @property
    def elapsed_s(self) -> float:
        return self.clock() - self._start

    def estimate_s(self, spec: Spec) -> float:
        """How long a run of `spec` takes: its duration plus the median overhead of this campaign's runs so far."""
        overhead = statistics.median(self._overheads) if self._overheads else self.overhead_s
        return spec.duration_s + overhead

    def _fits(self, spec: Spec) -> str | None:
        """None if a run of `spec` fits in what is left of the budget, else why not."""
        left = self.budget_s - self.elapsed_s
        needs = self.estimate_s(spec)
        if needs <= left:
            return None
        return (f"over budget: {max(left, 0):.0f} s of {self.budget_s:.0f} s left, "
                f"a run of {spec.name} takes about {needs:.0f} s")

    def _run_case(self, number: int, result: CaseResult) -> None:
        case = result.case
        for attempt in (1, 2):
            spec = case.load()
            reason = self._fits(spec)
            if reason is not None:
                result.skipped = reason if attempt == 1 else f"not run again ({reason})"
                self._say(f"[{number}/{len(self.results)}] {case.scenario} [{case.label}] "
                          f"{'SKIPPED' if attempt == 1 else 'not run again'}: {reason}")
                return
            made = self._attempt(spec, attempt)
            result.attempts.append(made)
            self._say(f"[{number}/{len(self.results)}] {case.scenario} [{case.label}] attempt {attempt}: "
                      f"{made.outcome} in {made.duration_s:.0f} s (expected: {made.expected} | observed: "
                      f"{made.observed}) {made.run_dir or ''}")
            if made.outcome == PASS:
                return
        self._say(f"[{number}/{len(self.results)}] {case.scenario} [{case.label}]: {result.outcome}")

    def _attempt(self, spec: Spec, number: int) -> Attempt:
        started_at, started = datetime.now(UTC), self.clock()
        try:
            _, cases = self.run_specs([spec], self.runs_dir, self.engine, self.out)
            run_dir = cases[0].run_dir
            if run_dir is None:  # run_specs names every configuration's folder: a run function that does not is broken
                raise HarnessError(f"the run of {spec.run_name} named no run folder")
        except HarnessError as exc:
            latest = self.runs_dir / spec.name / "latest"
            found = latest / spec.configuration if spec.configuration else latest
            return harness_failure(number, started_at, self.clock() - started,
                                   found.resolve() if found.exists() else None, exc)
        duration = self.clock() - started
        self._overheads.append(max(duration - spec.duration_s, 0.0))
        return judge_run(run_dir, number, started_at, duration)

    def _say(self, line: str) -> None:
        self.out.write(f"campaign: {line}\n")
        self.out.flush()
