"""Running a spec file: every configuration in turn, each its own run folder, one summary and junit.xml.

Results: `results/<name>/<timestamp>/` for a spec without configurations, else
`results/<name>/<timestamp>/<configuration>/`; `results/<name>/latest` points
at the newest timestamp.

Statuses: a configuration whose run raised (the harness failed: a workload
died, a fault could not be applied, a bug) is a JUnit `error` and makes the
exit status 3; the other configurations still run and keep their results. With
expectations in the spec, 0 means every configuration matched them, 1 that
one did not, and 4 that none failed but one was inconclusive (its expectation's
precondition, the evidence that the run hit its window, never showed); without,
the worst verdict's status (0 valid, 1 invalid, 2 unknown). `junit.xml` is written whatever happened, an interrupt included, and
the whole timestamp folder is handed over (readable by all, owned by the user
behind `sudo`).

Each configuration's story runs on the calling thread; its judgement goes to
a judging pipeline (harness.pipeline) and runs while the next configuration's
story plays, so its result line may come during the next story. On an
interrupt (SIGINT, SIGTERM) the configuration under way is an error, the
ones whose stories finished are still judged (a bounded wait), and one that
could not be judged in time is an error saying so (its journals are kept;
run.json says error). harness.batch runs several spec files through
one pipeline. Must never: let one configuration's failure hide another's result.
"""


from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from checkers.configuration_result import ConfigurationResult
from checkers.verdict import EXIT_FAILED, EXIT_INCONCLUSIVE, EXIT_INVALID, EXIT_VALID
from harness.judge import RunOutcome
from harness.pipeline import JudgingPipeline
from harness.run import Judgement, run_story
from harness.runfolders import LATEST
from harness.runlog import run_log
from harness.spec import Spec
from testbed.errors import HarnessError
from testbed.handover import hand_over
from testbed.lifecycle import terminate_on_sigterm, timestamp
from testbed.machine import REAL, Machine
from testbed.paths import RESULTS_DIR
from testbed.runfolder import RunFolder

log = logging.getLogger("faultline.scenario")


def link_latest(scenario_dir: Path, target: Path) -> None:
    link = scenario_dir / LATEST
    tmp = scenario_dir / f".latest.{os.getpid()}"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(target.name)
    os.replace(tmp, link)


def run_specs(specs: list[Spec], results: Path | None, engine: str | None, out: TextIO,
              keep_data: bool = False, machine: Machine = REAL) -> tuple[int, list[ConfigurationResult]]:
    """Run each configuration on `machine`; return the exit status and one case per configuration."""
    run = ScenarioRun(specs, results, machine)
    try:
        with terminate_on_sigterm(), judging_pipeline(specs, engine) as pipe:
            run.run(pipe, engine, out, keep_data)
    finally:
        status = run.close()
    return status, run.case_list()


@contextmanager
def judging_pipeline(specs: list[Spec], engine: str | None) -> Iterator[JudgingPipeline]:
    """One judging pipeline for `specs`; Spark warmed up on it as the first story starts if any check uses it."""
    if any((engine or spec.checker) == "spark" for spec in specs):
        with JudgingPipeline(_spark_warm_up, _spark_jvm_pid) as pipe:
            yield pipe
    else:
        with JudgingPipeline() as pipe:
            yield pipe


def _releasing(pipe: JudgingPipeline) -> Callable[[RunFolder], None]:
    """A story is under way in `folder`: judging may start, and a warm-up's lines go to that run's harness.log
    however long it lasts (Spark's JVM, started niced beside a story, may speak only after the story ended)."""
    def release(folder: RunFolder) -> None:
        pipe.release(lambda: run_log(folder, this_thread_only=True))
    return release


def _spark_warm_up() -> None:
    from checkers.spark_session import warm_up

    warm_up()


def _spark_jvm_pid() -> int | None:
    from checkers.spark_session import jvm_pid

    return jvm_pid()


class ScenarioRun:
    """One spec file's configurations in one timestamp folder: their stories, cases, junit.xml and hand-over."""

    def __init__(self, specs: list[Spec], results: Path | None, machine: Machine = REAL) -> None:
        self.specs = specs
        self.machine = machine
        self.name = specs[0].name
        self.top = (results or RESULTS_DIR) / self.name / timestamp()
        self.made = [p for p in (self.top.parent.parent, self.top.parent) if not p.exists()]  # handed over too
        self.top.mkdir(parents=True, exist_ok=True)
        link_latest(self.top.parent, self.top)
        self.cases: dict[int, ConfigurationResult] = {}
        self.lines: dict[int, str] = {}  # each judged configuration's verdict line
        self.judgements: dict[int, Judgement] = {}
        self.out: TextIO | None = None
        self._lock = threading.RLock()

    def run(self, pipe: JudgingPipeline, engine: str | None, out: TextIO, keep_data: bool) -> None:
        """Each configuration's story in turn, its judgement queued on `pipe`; an interrupt is raised."""
        self.out = out
        for index, spec in enumerate(self.specs):
            self.story(index, spec, pipe, engine, out, keep_data)

    def story(self, index: int, spec: Spec, pipe: JudgingPipeline, engine: str | None, out: TextIO,
              keep_data: bool) -> None:
        run_dir = run_dir_of(self.top, spec)
        started = time.monotonic()
        try:
            judgement = run_story(spec, run_dir, engine, keep_data, on_running=_releasing(pipe), machine=self.machine)
        except Exception as exc:  # the harness failed: said as such, and the next configuration still runs
            self._failed(index, spec, run_dir, exc, started, out)
            return
        except BaseException as exc:  # interrupted (SIGINT, SIGTERM): the configuration under way is an error
            self._record(index, failed_case(spec, run_dir, exc, time.monotonic() - started))
            raise
        self.judgements[index] = judgement
        pipe.submit(judgement.judge, self._on_judged(index, spec, run_dir, started, out))

    def _on_judged(self, index: int, spec: Spec, run_dir: Path, started: float,
                   out: TextIO) -> Callable[[Future[RunOutcome]], None]:
        def done(future: Future[RunOutcome]) -> None:
            from report.verdict_view import verdict_line

            try:
                outcome = future.result()
            except Exception as exc:  # its judging failed (the checker's input, a bug): an error
                self._failed(index, spec, run_dir, exc, started, out)
                return
            case = case_of(spec, outcome, time.monotonic() - started)
            self.lines[index] = line = verdict_line(outcome.verdict)
            self._record(index, case)
            out.write(describe(case, outcome, line) + "\n")
            out.flush()
        return done

    def _failed(self, index: int, spec: Spec, run_dir: Path, exc: BaseException, started: float,
                out: TextIO) -> None:
        log.error("%s failed: %s", spec.run_name, one_line(exc), exc_info=not isinstance(exc, HarnessError))
        case = failed_case(spec, run_dir, exc, time.monotonic() - started)
        self._record(index, case)
        out.write(f"ERROR {case.scenario} [{case.configuration}] {case.observed} | {case.seconds:.0f} s | "
                  f"{run_dir}\n")
        out.flush()

    def _record(self, index: int, case: ConfigurationResult) -> None:
        with self._lock:
            self.cases[index] = case
            if len(self.cases) == len(self.specs):  # every configuration has its result: junit.xml now
                write_junit(self.top, self.case_list())

    def case_list(self) -> list[ConfigurationResult]:
        with self._lock:
            return [self.cases[i] for i in sorted(self.cases)]

    def close(self) -> int:
        """Once judging is over: a run never judged is an error; junit.xml, the hand-over; the exit status."""
        for index, judgement in self.judgements.items():
            if index not in self.cases:
                why = "the harness stopped before it was judged (its journals are kept)"
                judgement.abandon(why)
                spec = self.specs[index]
                self._record(index, ConfigurationResult(spec.name, spec.configuration or "default", "a verdict", why,
                                                        None, 0.0, run_dir=judgement.folder.root, status=EXIT_FAILED))
        cases = self.case_list()
        write_junit(self.top, cases)
        hand_over(self.top, [*self.made, self.top.parent / LATEST])
        if self.out is not None and len(self.specs) > 1 and cases:
            self.out.write(self.last_line() + "\n")
            self.out.flush()
        return exit_status(self.specs, cases) if cases else EXIT_FAILED


    def last_line(self) -> str:
        """The file's last line, every configuration's verdict line on it, so that an expected loss in one of them
        is not scrolled away: "isolate-az-leader: 3 of 3 configurations PASS | acks1: PASS (expected) · INVALID:
        lost ... | acksall: PASS (expected) · VALID | ..."."""
        with self._lock:
            said = [f"{case.configuration}: {self.lines.get(i) or 'ERROR · ' + case.observed}"
                    for i, case in sorted(self.cases.items())]
            passed = sum(1 for case in self.cases.values() if case.passed)
        return f"{self.name}: {passed} of {len(self.specs)} configurations PASS | " + " | ".join(said)


def run_dir_of(top: Path, spec: Spec) -> Path:
    return top / spec.configuration if spec.configuration else top


def one_line(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())


def failed_case(spec: Spec, run_dir: Path, exc: BaseException, seconds: float) -> ConfigurationResult:
    return ConfigurationResult(spec.name, spec.configuration or "default", "a verdict",
                               f"the harness failed: {one_line(exc)}", None, seconds, run_dir=run_dir,
                               status=EXIT_FAILED)


def exit_status(specs: list[Spec], cases: list[ConfigurationResult]) -> int:
    """3 if any configuration's harness failed; else, with expectations, 0 all matched, 1 one did not, 4 none
    failed but one was inconclusive; else the worst verdict."""
    if any(c.passed is None and c.status == EXIT_FAILED for c in cases):
        return EXIT_FAILED
    if any(not spec.expect.empty for spec in specs):
        if all(c.passed for c in cases):
            return EXIT_VALID
        return EXIT_INCONCLUSIVE if all(c.passed or c.inconclusive for c in cases) else EXIT_INVALID
    return max(EXIT_FAILED if c.status is None else c.status for c in cases)


def case_of(spec: Spec, outcome: RunOutcome, seconds: float) -> ConfigurationResult:
    v = outcome.verdict
    if outcome.expectation is not None:
        e = outcome.expectation
        return ConfigurationResult(spec.name, spec.configuration or "default", e["expected"],
                                   e["observed"] + ("; " + "; ".join(e["mismatches"]) if e["mismatches"] else ""),
                                   bool(e["passed"]), seconds, run_dir=outcome.run_dir, status=outcome.status,
                                   inconclusive="; ".join(e.get("inconclusive") or []))
    observed = f"valid = {v.get('valid')}" + (f", errors: {v.get('errors')}" if v.get("errors") else "")
    return ConfigurationResult(spec.name, spec.configuration or "default", "valid = True", observed,
                               v.get("valid") is True, seconds, run_dir=outcome.run_dir, status=outcome.status)


def describe(case: ConfigurationResult, outcome: RunOutcome, line: str) -> str:
    """A configuration's result line, its verdict line first (`line`, report.verdict_view.verdict_line): "PASS
    (expected) · INVALID: lost 9,204 acknowledged writes | isolate-az-leader [acks1] | expected: ... | observed: ..."."""
    stats = outcome.verdict.get("stats", {})
    return (f"{line} | {case.scenario} [{case.configuration}] | expected: {case.expected}"
            f" | observed: {case.observed} | writes {stats.get('writes')} ok {stats.get('ok')} final reads"
            f" {stats.get('final_reads')} | {case.seconds:.0f} s | {case.run_dir}")


def write_junit(top: Path, cases: list[ConfigurationResult]) -> None:
    """`top/junit.xml`, one case per configuration; a failure to write it is logged, never raised."""
    if not cases:
        return
    try:
        from report.junit import render_junit_cases, with_run

        render_junit_cases(RunFolder(top).junit, [with_run(case) for case in cases])
    except Exception as exc:  # noqa: BLE001 - the runs' own results stand; say what went wrong
        log.error("could not write %s: %s", RunFolder(top).junit, one_line(exc))


def junit_of_folders(top: Path, finished: list[Path], unfinished: list[Path]) -> Path:
    """`top/junit.xml` again from its configurations' folders (`report` on a timestamp folder)."""
    from report.junit import case_from_run, render_junit_cases

    cases = [case_from_run(run_dir) for run_dir in finished]
    scenario = cases[0].scenario
    cases += [ConfigurationResult(scenario, run_dir.name, "a verdict", "the run did not finish (see its harness.log)",
                                  None, 0.0, run_dir=run_dir) for run_dir in unfinished]
    return render_junit_cases(RunFolder(top).junit, sorted(cases, key=lambda c: c.configuration))
