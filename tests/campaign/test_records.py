"""INCONCLUSIVE in a campaign (campaign.records, campaign.outputs): an attempt whose expectation's precondition
never showed is neither a pass nor a failure, is run again, and a case is judged by its conclusive attempts."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from campaign.plan import Case
from campaign.records import (
    ERROR,
    FAIL,
    FLAKE,
    INCONCLUSIVE,
    OUTCOMES,
    PASS,
    REGRESSION,
    Attempt,
    CaseResult,
    judge_run,
)

MISSING = "precondition not shown: an AlterIsr in flight in broker-0's logs (precondition): 0 line(s)"


def verdict(tmp_path: Path, name: str, expectation: dict[str, Any], valid: Any = True) -> Path:
    run = tmp_path / name
    run.mkdir()
    (run / "verdict.json").write_text(json.dumps({"valid": valid, "counts": {"lost": 0}, "reason": "timed out",
                                                  "expectation": expectation}))
    return run


def test_an_attempt_without_its_precondition_is_inconclusive_even_when_its_verdict_is_unknown(tmp_path: Path) -> None:
    now = datetime.now(UTC)
    missed = {"expected": "no lost", "observed": "lost = 0", "passed": False, "mismatches": [],
              "inconclusive": [MISSING]}
    for valid in (True, "unknown"):
        attempt = judge_run(verdict(tmp_path, f"missed-{valid}", missed, valid), 1, now, 1.0)
        assert attempt.outcome == INCONCLUSIVE and attempt.mismatches == [MISSING]
    failed = {**missed, "mismatches": ["lost = 2 (expected none)", f"{MISSING}"], "inconclusive": []}
    assert judge_run(verdict(tmp_path, "failed", failed), 1, now, 1.0).outcome == FAIL
    assert judge_run(verdict(tmp_path, "unknown", {**failed, "mismatches": ["verdict unknown"]}, "unknown"),
                     1, now, 1.0).outcome == ERROR
    assert INCONCLUSIVE in OUTCOMES


def test_a_case_is_judged_by_its_conclusive_attempts() -> None:
    case = Case(0, "catalogue", "isr-expansion-lost", "kafka-3-0-2", Path("spec.yaml"), {})

    def outcome(*attempts: str) -> str:
        made = [Attempt(i + 1, o, "", "", datetime.now(UTC), 1.0, None) for i, o in enumerate(attempts)]
        return CaseResult(case, made).outcome

    assert outcome(INCONCLUSIVE) == INCONCLUSIVE
    assert outcome(INCONCLUSIVE, INCONCLUSIVE) == INCONCLUSIVE
    assert outcome(INCONCLUSIVE, PASS) == PASS  # the re-run hit the window and passed
    assert outcome(INCONCLUSIVE, FAIL) == FAIL
    assert outcome(FAIL, INCONCLUSIVE) == FAIL  # the failure was not confirmed, nor cleared
    assert outcome(FAIL, PASS) == FLAKE and outcome(FAIL, FAIL) == REGRESSION and outcome(PASS) == PASS


def test_an_inconclusive_case_is_a_skipped_test_case_in_junit() -> None:
    from campaign.outputs import junit_case
    from report.junit import junit_xml
    case = Case(0, "catalogue", "isr-expansion-lost", "kafka-3-0-2", Path("spec.yaml"), {})
    attempts = [Attempt(n, INCONCLUSIVE, "no lost", "lost = 0", datetime.now(UTC), 1.0, None, mismatches=[MISSING])
                for n in (1, 2)]
    result = junit_case(CaseResult(case, attempts))
    assert result.passed is False and result.inconclusive == MISSING
    xml = junit_xml([result])
    assert f'<skipped message="inconclusive: {MISSING}"' in xml.replace("&apos;", "'")
    assert 'failures="0"' in xml and 'skipped="1"' in xml
    assert "kafka-3-0-2: INCONCLUSIVE: INCONCLUSIVE: 2 attempt(s)" in xml


def test_a_failing_case_that_turns_inconclusive_is_not_fixed() -> None:
    from campaign.changes import compare

    def row(configuration: str, outcome: str) -> dict[str, Any]:
        return {"scenario": "s", "configuration": configuration, "outcome": outcome, "anomaly_kinds": []}
    changes = compare([row("a", INCONCLUSIVE), row("b", PASS), row("c", INCONCLUSIVE), row("c", FAIL)],
                      [row("a", REGRESSION), row("b", REGRESSION), row("c", PASS)], "prev")
    assert changes.fixed == [("s", "b")]  # a's inconclusive run showed nothing of a fix
    assert changes.newly_failing == [("s", "c")]  # the worst of a campaign's rows: FAIL over INCONCLUSIVE
