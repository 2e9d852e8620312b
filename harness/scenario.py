"""Running a spec file: every configuration in turn, each its own run folder, one summary and junit.xml.

Results: `results/<name>/<timestamp>/` for a spec without configurations, else
`results/<name>/<timestamp>/<configuration>/`; `results/<name>/latest` points
at the newest timestamp.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from checkers.verdict import EXIT_INVALID, EXIT_VALID
from harness.run import execute_run
from harness.spec import Spec
from harness.verdicts import RunOutcome
from testbed.lifecycle import timestamp
from testbed.paths import RESULTS_DIR
from testbed.runfolder import RunFolder


@dataclass
class CaseResult:
    scenario: str
    configuration: str
    expected: str
    observed: str
    passed: bool
    seconds: float
    run_dir: Path
    status: int


def link_latest(scenario_dir: Path, target: Path) -> None:
    link = scenario_dir / "latest"
    tmp = scenario_dir / f".latest.{os.getpid()}"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(target.name)
    os.replace(tmp, link)


def run_specs(specs: list[Spec], results: Path | None, engine: str | None, out: TextIO) -> tuple[int, list[CaseResult]]:
    """Run each configuration; return the exit status and one case per configuration."""
    name = specs[0].name
    top = (results or RESULTS_DIR) / name / timestamp()
    top.mkdir(parents=True, exist_ok=True)
    link_latest(top.parent, top)
    cases: list[CaseResult] = []
    for spec in specs:
        run_dir = top / spec.configuration if spec.configuration else top
        started = time.monotonic()
        outcome = execute_run(spec, run_dir, engine)
        cases.append(case_of(spec, outcome, time.monotonic() - started))
        out.write(describe(cases[-1], outcome) + "\n")
        out.flush()
    write_junit(top, cases)
    if any(not spec.expect.empty for spec in specs):
        return (EXIT_VALID if all(c.passed for c in cases) else EXIT_INVALID), cases
    return max(c.status for c in cases), cases


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
    try:
        from harness.report.junit import render_junit_cases
    except ImportError:
        return
    render_junit_cases(RunFolder(top).junit, cases)
