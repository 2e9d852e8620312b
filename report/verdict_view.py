"""The report's view of a verdict: reading a verdict.json (spec/history.md) the way every report output
states it (the verdict document is `checkers/verdict.py`'s, judging a run `harness/judge.py`).

One place decides what "valid", "invalid" and "unknown" mean for the report,
the summary and junit.xml: ``valid`` true is valid, false is invalid, and
anything else (the string "unknown", a missing or unreadable verdict) is
unknown, with the checker's ``reason`` where it gave one. It also owns the
verdict's one line (`verdict_line`), which says two things apart: whether the
scenario's expectation held, and whether the history is safe:
``PASS (expected) · INVALID: lost 9,204 acknowledged writes``. A run's result
line, `show`, the report's header and a campaign's pages all say it so.
Must never: write a verdict or judge a history (it reads what the checker wrote).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from checkers.anomalies import REGISTRY
from report.anomalies import anomaly_order

State = Literal["valid", "invalid", "unknown"]


@dataclass(frozen=True)
class Outcome:
    """A verdict, read: its state, the reason when unknown, and its anomaly counts split by kind."""

    state: State
    reason: str
    errors: tuple[tuple[str, int], ...]
    information: tuple[tuple[str, int], ...]
    counts: tuple[tuple[str, int | None], ...]
    stats: dict[str, Any]
    engine: str | None

    @property
    def errors_line(self) -> str:
        """"lost=3, divergence=2"."""
        return ", ".join(f"{name}={n}" for name, n in self.errors)

    @property
    def information_line(self) -> str:
        return ", ".join(f"{name}={n}" for name, n in self.information)

    @property
    def safety(self) -> str:
        """Whether the history is safe, each error anomaly's count in words: "INVALID: lost 9,204 acknowledged
        writes", "VALID", "UNKNOWN: <reason>"."""
        if self.state == "invalid":
            said = ", ".join(REGISTRY[name].count_words(n) if name in REGISTRY else f"{n:,} {name}"
                             for name, n in self.errors)
            return f"INVALID: {said}" if said else "INVALID"
        if self.state == "unknown":
            return f"UNKNOWN: {self.reason}"
        return "VALID"

    @property
    def headline(self) -> str:
        """One line: "invalid: lost=3, divergence=2", "valid", "unknown: <reason>"."""
        if self.state == "invalid":
            return f"invalid: {self.errors_line}" if self.errors else "invalid"
        if self.state == "unknown":
            return f"unknown: {self.reason}"
        return "valid"


def _number(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _mapping(verdict: dict[str, Any], key: str) -> dict[str, Any]:
    value = verdict.get(key)
    return dict(value) if isinstance(value, dict) else {}


def read_outcome(verdict: dict[str, Any] | None) -> Outcome:
    """The outcome of a verdict document (None: no verdict was written)."""
    if verdict is None:
        return Outcome("unknown", "no verdict.json: the checker did not finish", (), (), (), {}, None)
    valid = verdict.get("valid")
    state: State = "valid" if valid is True else "invalid" if valid is False else "unknown"
    reason = str(verdict.get("reason") or ("" if state != "unknown" else "the checker could not judge this history"))
    errors_in = _mapping(verdict, "errors")
    counts_in = _mapping(verdict, "counts")
    order = anomaly_order(verdict)
    errors = tuple((n, _number(errors_in[n]) or 0) for n in order if n in errors_in)
    information = tuple(
        (n, c) for n in order if n not in errors_in and (c := _number(counts_in.get(n))) is not None and c > 0
    )
    counts = tuple((n, _number(counts_in.get(n))) for n in order if n in counts_in or n in errors_in)
    stats = _mapping(verdict, "stats")
    engine = verdict.get("engine")
    return Outcome(state, reason, errors, information, counts, stats,
                   str(engine) if engine is not None else None)


@dataclass(frozen=True)
class ScenarioExpectation:
    """What the scenario expected of this configuration and what the run showed (verdict ``expectation``)."""

    expected: str
    observed: str
    passed: bool
    mismatches: tuple[str, ...]
    unmet: tuple[str, ...] = ()  # the expectations it missed, in `expected`'s words (older verdicts: none)
    inconclusive: tuple[str, ...] = ()  # the preconditions never shown: the run neither passed nor failed

    @property
    def mark(self) -> str:
        """"PASS (expected)", "INCONCLUSIVE (precondition not shown: ...)", or "FAIL (expected no lost,
        two-leaders)": what was expected and did not happen. Inconclusive as checkers.verdict.expectation_state
        judges it (and the exit status and the campaign with it): a missing precondition listed, whatever else the
        run missed (an anomaly the expectation forbids turns a missing precondition into a mismatch instead)."""
        if self.passed:
            return "PASS (expected)"
        if self.inconclusive:
            return f"INCONCLUSIVE ({'; '.join(self.inconclusive)})"
        return f"FAIL (expected {', '.join(self.unmet) or self.expected})"


def read_expectation(verdict: dict[str, Any] | None) -> ScenarioExpectation | None:
    """The verdict's ``expectation``, written by the scenario runner; None where there is none."""
    raw = (verdict or {}).get("expectation")
    if not isinstance(raw, dict) or not isinstance(raw.get("passed"), bool):
        return None
    mismatches, unmet, missing = raw.get("mismatches"), raw.get("unmet"), raw.get("inconclusive")
    return ScenarioExpectation(str(raw.get("expected", "")), str(raw.get("observed", "")), raw["passed"],
                               tuple(str(m) for m in mismatches) if isinstance(mismatches, list) else (),
                               tuple(str(u) for u in unmet) if isinstance(unmet, list) else (),
                               tuple(str(m) for m in missing) if isinstance(missing, list) else ())


def verdict_line(verdict: dict[str, Any] | None) -> str:
    """The verdict in one line, the expectation and the history's safety apart: "PASS (expected) · INVALID: lost
    9,204 acknowledged writes", "FAIL (expected no lost) · INVALID: ...", "PASS · VALID" (a spec that expects
    nothing passes when the history is valid), "FAIL · UNKNOWN: <reason>"."""
    outcome = read_outcome(verdict)
    expectation = read_expectation(verdict)
    if expectation is None:  # nothing expected: the history must be safe
        return f"{'PASS' if outcome.state == 'valid' else 'FAIL'} · {outcome.safety}"
    return f"{expectation.mark} · {outcome.safety}"
