"""The verdict's one line says apart whether the scenario's expectation held and whether the history is safe, each
error anomaly counted in its words: a loss the scenario expected reads `PASS (expected) · INVALID: lost ...`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.expectation import compare, parse_expect
from report.verdict_view import verdict_line


def judged(valid: bool | str, errors: dict[str, int], expect: dict[str, Any] | None = None,
           reason: str | None = None, facts: dict[str, bool] | None = None) -> dict[str, Any]:
    """A verdict as the harness writes it: the checker's part, then the expectation compared against it."""
    verdict: dict[str, Any] = {"valid": valid, "errors": errors, "counts": {"lost": 0, **errors}}
    if reason is not None:
        verdict["reason"] = reason
    expectation = compare(parse_expect(expect), verdict, facts or {}) if expect is not None else None
    if expectation is not None:
        verdict["expectation"] = expectation
    return verdict


@pytest.mark.parametrize("verdict, line", [
    (judged(False, {"lost": 9204, "divergence": 4815}, {"present": ["lost", "divergence"]}),
     "PASS (expected) · INVALID: lost 9,204 acknowledged writes, 4,815 offsets holding two values"),
    (judged(False, {"lost": 9204}, {"absent": ["lost"]}),
     "FAIL (expected no lost) · INVALID: lost 9,204 acknowledged writes"),
    (judged(True, {}, {"absent": ["lost"]}), "PASS (expected) · VALID"),
    (judged(True, {}, {"present": ["lost"], "observed": ["two-leaders"]}, facts={"two-leaders": True}),
     "FAIL (expected lost > 0) · VALID"),
    (judged(True, {}), "PASS · VALID"),
    (judged(False, {"lost": 1, "duplicate": 2}), "FAIL · INVALID: lost 1 acknowledged write, 2 values written twice"),
    (judged("unknown", {}, reason="the drain did not finish"), "FAIL · UNKNOWN: the drain did not finish"),
    (judged("unknown", {}, {"absent": ["lost"]}, reason="the cluster never settled"),
     "FAIL (expected a verdict) · UNKNOWN: the cluster never settled"),
    (judged("unknown", {}, {"valid": "unknown", "reason": "ISR \\[0\\]"}, reason="faultline-0 leader 0, ISR [0]"),
     "PASS (expected) · UNKNOWN: faultline-0 leader 0, ISR [0]"),
    (judged(False, {"made-up": 1200}), "FAIL · INVALID: 1,200 made-up"),  # a name no anomaly record has
    (None, "FAIL · UNKNOWN: no verdict.json: the checker did not finish"),
])
def test_every_form_of_the_line(verdict: dict[str, Any] | None, line: str) -> None:
    assert verdict_line(verdict) == line


def test_a_verdict_written_before_unmet_existed_names_what_was_expected() -> None:
    verdict = judged(False, {"lost": 3}, {"absent": ["lost", "divergence"]})
    del verdict["expectation"]["unmet"]
    assert verdict_line(verdict) == "FAIL (expected no lost, no divergence) · INVALID: lost 3 acknowledged writes"


def test_recover_ends_in_the_same_line(tmp_path: Path) -> None:
    from faultline.cli import summary_line

    verdict = judged(False, {"lost": 610}, {"present": ["lost"]})
    assert summary_line(verdict, tmp_path).startswith("PASS (expected) · INVALID: lost 610 acknowledged writes | ")


def test_a_missing_precondition_reads_inconclusive_whatever_else_was_missed() -> None:
    """A precondition not shown and an expected anomaly not seen (the run never hit its window, so neither could
    show): the line says INCONCLUSIVE, as the exit status and the campaign judge it (expectation_state)."""
    from checkers.verdict import INCONCLUSIVE, expectation_state

    verdict: dict[str, Any] = {"valid": True, "errors": {}, "counts": {"lost": 0},
                               "expectation": {"expected": "lost > 0, the window", "observed": "lost = 0",
                                               "passed": False, "mismatches": ["lost = 0 (expected > 0)"],
                                               "unmet": ["lost > 0"],
                                               "inconclusive": ["precondition not shown: the window: 0 line(s)"]}}
    assert expectation_state(verdict["expectation"]) == INCONCLUSIVE
    assert verdict_line(verdict) == "INCONCLUSIVE (precondition not shown: the window: 0 line(s)) · VALID"
