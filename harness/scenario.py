"""Running a spec file: every configuration in turn, each its own run folder, one summary and junit.xml.

Results: `results/<name>/<timestamp>/` for a spec without configurations, else
`results/<name>/<timestamp>/<configuration>/`; `results/<name>/latest` points
at the newest timestamp.

Statuses: a configuration whose run raised (the harness failed: a workload
died, a fault could not be applied, a bug) is a JUnit `error` and makes the
exit status 3; the other configurations still run and keep their results. With
expectations in the spec, 0 means every configuration matched them and 1 that
one did not; without, the worst verdict's status (0 valid, 1 invalid, 2
unknown). `junit.xml` is written whatever happened, an interrupt included, and
the whole timestamp folder is handed over (readable by all, owned by the user
behind `sudo`). Must never: let one configuration's failure hide another's result.
"""


from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from checkers.verdict import EXIT_FAILED, EXIT_INVALID, EXIT_VALID
from harness.run import execute_run
from harness.runfolders import LATEST
from harness.spec import Spec
from harness.verdicts import RunOutcome
from testbed.errors import HarnessError
from testbed.handover import hand_over
from testbed.lifecycle import terminate_on_sigterm, timestamp
from testbed.paths import RESULTS_DIR
from testbed.runfolder import RunFolder

log = logging.getLogger("faultline.scenario")


@dataclass
class CaseResult:
    """One configuration's result; `passed` None when the harness failed (no verdict: a JUnit error)."""

    scenario: str
    configuration: str
    expected: str
    observed: str
    passed: bool | None
    seconds: float
    run_dir: Path
    status: int


def link_latest(scenario_dir: Path, target: Path) -> None:
    link = scenario_dir / LATEST
    tmp = scenario_dir / f".latest.{os.getpid()}"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(target.name)
    os.replace(tmp, link)


def run_specs(specs: list[Spec], results: Path | None, engine: str | None, out: TextIO,
              keep_data: bool = False) -> tuple[int, list[CaseResult]]:
    """Run each configuration; return the exit status and one case per configuration."""
    name = specs[0].name
    top = (results or RESULTS_DIR) / name / timestamp()
    made = [p for p in (top.parent.parent, top.parent) if not p.exists()]  # handed over too
    top.mkdir(parents=True, exist_ok=True)
    link_latest(top.parent, top)
    cases: list[CaseResult] = []
    try:
        with terminate_on_sigterm():
            for spec in specs:
                cases.append(run_one(spec, top, engine, out, keep_data))
    except BaseException as exc:  # interrupted (SIGINT, SIGTERM): the configuration under way is an error
        if len(cases) < len(specs):
            cases.append(failed_case(specs[len(cases)], run_dir_of(top, specs[len(cases)]), exc, 0.0))
        raise
    finally:
        write_junit(top, cases)
        hand_over(top, [*made, top.parent / LATEST])
    return exit_status(specs, cases), cases


def run_dir_of(top: Path, spec: Spec) -> Path:
    return top / spec.configuration if spec.configuration else top


def run_one(spec: Spec, top: Path, engine: str | None, out: TextIO, keep_data: bool) -> CaseResult:
    """One configuration's run and its line on `out`; a run that raised is a failed case, said and logged."""
    run_dir = run_dir_of(top, spec)
    started = time.monotonic()
    try:
        outcome = execute_run(spec, run_dir, engine, keep_data)
    except Exception as exc:  # the harness failed: said as such, and the next configuration still runs
        log.error("%s failed: %s", spec.run_name, one_line(exc), exc_info=not isinstance(exc, HarnessError))
        case = failed_case(spec, run_dir, exc, time.monotonic() - started)
        out.write(f"ERROR {case.scenario} [{case.configuration}] {case.observed} | {case.seconds:.0f} s | "
                  f"{run_dir}\n")
        out.flush()
        return case
    case = case_of(spec, outcome, time.monotonic() - started)
    out.write(describe(case, outcome) + "\n")
    out.flush()
    return case


def one_line(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())


def failed_case(spec: Spec, run_dir: Path, exc: BaseException, seconds: float) -> CaseResult:
    return CaseResult(spec.name, spec.configuration or "default", "a verdict",
                      f"the harness failed: {one_line(exc)}", None, seconds, run_dir, EXIT_FAILED)


def exit_status(specs: list[Spec], cases: list[CaseResult]) -> int:
    """3 if any configuration's harness failed; else, with expectations, 0 all matched or 1; else the worst verdict."""
    if any(c.passed is None and c.status == EXIT_FAILED for c in cases):
        return EXIT_FAILED
    if any(not spec.expect.empty for spec in specs):
        return EXIT_VALID if all(c.passed for c in cases) else EXIT_INVALID
    return max(c.status for c in cases)


def case_of(spec: Spec, outcome: RunOutcome, seconds: float) -> CaseResult:
    v = outcome.verdict
    if outcome.expectation is not None:
        e = outcome.expectation
        return CaseResult(spec.name, spec.configuration or "default", e["expected"],
                          e["observed"] + ("; " + "; ".join(e["mismatches"]) if e["mismatches"] else ""),
                          bool(e["passed"]), seconds, outcome.run_dir, outcome.status)
    observed = f"valid = {v.get('valid')}" + (f", errors: {v.get('errors')}" if v.get("errors") else "")
    return CaseResult(spec.name, spec.configuration or "default", "valid = True", observed,
                      v.get("valid") is True, seconds, outcome.run_dir, outcome.status)


def describe(case: CaseResult, outcome: RunOutcome) -> str:
    stats = outcome.verdict.get("stats", {})
    mark = "PASS" if case.passed else "FAIL"
    return (f"{mark} {case.scenario} [{case.configuration}] expected: {case.expected} | observed: {case.observed}"
            f" | writes {stats.get('writes')} ok {stats.get('ok')} final reads {stats.get('final_reads')}"
            f" | {case.seconds:.0f} s | {case.run_dir}")


def write_junit(top: Path, cases: list[CaseResult]) -> None:
    """`top/junit.xml`, one case per configuration; a failure to write it is logged, never raised."""
    if not cases:
        return
    try:
        from harness.report.junit import render_junit_cases

        render_junit_cases(RunFolder(top).junit, cases)
    except Exception as exc:  # noqa: BLE001 - the runs' own results stand; say what went wrong
        log.error("could not write %s: %s", RunFolder(top).junit, one_line(exc))


def junit_of_folders(top: Path, finished: list[Path], unfinished: list[Path]) -> Path:
    """`top/junit.xml` again from its configurations' folders (`report` on a timestamp folder)."""
    from harness.report.junit import JUnitCase, case_from_run, render_junit_cases

    cases = [case_from_run(run_dir) for run_dir in finished]
    scenario = cases[0].scenario
    cases += [JUnitCase(scenario, run_dir.name, "a verdict", "the run did not finish (see its harness.log)", None,
                        0.0, run_dir=run_dir) for run_dir in unfinished]
    return render_junit_cases(RunFolder(top).junit, sorted(cases, key=lambda c: c.configuration))
