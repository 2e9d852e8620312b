"""What a campaign found: each attempt of each case, read from its run folder, and each case's outcome.

An attempt is judged from the run's own verdict.json (its expectation where the spec has one, else
valid), never from an exit status: PASS, FAIL (it did not show what was expected), INCONCLUSIVE (its
expectation's precondition, the evidence that the run hit what it is about, never showed, and nothing
failed it) or ERROR (no verdict: the verdict is unknown, unless the spec expects `valid: unknown`, or the
harness failed). An inconclusive attempt is run again like a failed one, and a case is judged by its
conclusive attempts (the others stay listed). A case's outcome:

- PASS: its first conclusive attempt passed.
- FLAKE: the first conclusive attempt did not pass, a later one did.
- REGRESSION: it did not pass twice.
- FAIL: it did not pass and was not run again conclusively (no time left in the budget, or the re-run was
  inconclusive).
- INCONCLUSIVE: every attempt was inconclusive: the run never hit what it is about.
- SKIPPED: it never ran (the budget was spent, or the campaign was interrupted).
Must never: run anything or write a file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from campaign.plan import Case
from checkers.anomalies import ANOMALIES
from checkers.verdict import INCONCLUSIVE as STATE_INCONCLUSIVE
from checkers.verdict import PASSED, RUN_OUTCOMES, expectation_state
from report.verdict_view import verdict_line
from testbed.runfolder import RunFolder

PASS, FAIL, ERROR, INCONCLUSIVE = RUN_OUTCOMES
FLAKE, REGRESSION, SKIPPED = "FLAKE", "REGRESSION", "SKIPPED"
OUTCOMES = (PASS, FLAKE, FAIL, REGRESSION, INCONCLUSIVE, SKIPPED)
FAILING = (FAIL, REGRESSION)


@dataclass
class Attempt:
    number: int
    outcome: str  # PASS | FAIL | ERROR | INCONCLUSIVE
    expected: str
    observed: str
    started_at: datetime
    duration_s: float
    run_dir: Path | None
    valid: str = "unknown"  # the verdict's valid, as text: true | false | unknown
    counts: dict[str, int] = field(default_factory=dict)
    mismatches: list[str] = field(default_factory=list)
    verdict_line: str = ""  # the run's own one line (report.verdict_view): "PASS (expected) · INVALID: lost ..."

    @property
    def kinds(self) -> list[str]:
        """The anomalies this run saw at least once, in the contract's order."""
        return [a for a in ANOMALIES if self.counts.get(a, 0) > 0]


@dataclass
class CaseResult:
    case: Case
    attempts: list[Attempt] = field(default_factory=list)
    skipped: str | None = None  # why it never ran, or why it was not run again

    @property
    def outcome(self) -> str:
        if not self.attempts:
            return SKIPPED
        conclusive = [a for a in self.attempts if a.outcome != INCONCLUSIVE]
        if not conclusive:
            return INCONCLUSIVE
        if conclusive[0].outcome == PASS:
            return PASS
        if len(conclusive) == 1:
            return FAIL
        return FLAKE if conclusive[-1].outcome == PASS else REGRESSION

    @property
    def duration_s(self) -> float:
        return sum(a.duration_s for a in self.attempts)


def judge_run(run_dir: Path, number: int, started_at: datetime, duration_s: float) -> Attempt:
    """An attempt as its run folder's verdict.json tells it (ERROR when there is no readable verdict)."""
    try:
        verdict = json.loads(RunFolder(run_dir).verdict.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return Attempt(number, ERROR, "a verdict", f"no verdict ({exc})", started_at, duration_s, run_dir)
    counts = {a: int(verdict.get("counts", {}).get(a) or 0) for a in ANOMALIES}
    valid = str(verdict.get("valid")).lower()
    expectation = verdict.get("expectation")
    state = expectation_state(expectation)
    if state == STATE_INCONCLUSIVE:
        outcome = INCONCLUSIVE
    elif valid == "unknown" and state != PASSED:
        outcome = ERROR  # unless the spec expected `valid: unknown` (a stall the Kafka version is known for) and got it
    elif state is not None:
        outcome = PASS if state == PASSED else FAIL
    else:
        outcome = PASS if verdict.get("valid") is True else FAIL
    if isinstance(expectation, dict):
        expected, observed = str(expectation.get("expected")), str(expectation.get("observed"))
        mismatches = [str(m) for m in [*(expectation.get("mismatches") or []), *(expectation.get("inconclusive") or [])]]
    else:
        errors = verdict.get("errors") or {}
        expected = "valid = True"
        observed = f"valid = {verdict.get('valid')}" + (f", errors: {errors}" if errors else "")
        mismatches = [f"{a} = {n}" for a, n in errors.items()]
    if valid == "unknown":
        observed += f" (unknown: {verdict.get('reason', 'no reason given')})"
    return Attempt(number, outcome, expected, observed, started_at, duration_s, run_dir, valid, counts, mismatches,
                   verdict_line(verdict))


def harness_failure(number: int, started_at: datetime, duration_s: float, run_dir: Path | None,
                    error: BaseException) -> Attempt:
    """An attempt whose run raised: no verdict, the error said."""
    return Attempt(number, ERROR, "a verdict", f"harness failure: {error}", started_at, duration_s, run_dir)
