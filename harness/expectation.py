"""A scenario configuration's expectation: what its verdict must show, compared with what it showed.

`expect.reason` pins the mechanism of an expected unknown verdict: a regular expression the verdict's reason must
match (a stall names its partitions, leaders and ISRs), so an unknown for another cause fails the expectation, and
with it the campaign's PASS. Must never: read a run folder or judge a history (it compares a verdict already made).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from checkers.anomalies import ANOMALIES
from testbed.errors import SpecError


@dataclass(frozen=True)
class Expectation:
    absent: tuple[str, ...] = ()
    present: tuple[str, ...] = ()
    valid: bool | str | None = None  # "unknown": the run must end unjudged
    observed: tuple[str, ...] = ()
    reason: str | None = None  # with valid "unknown": a pattern the unknown verdict's reason must match

    @property
    def empty(self) -> bool:
        return not (self.absent or self.present or self.observed or self.valid is not None)


def parse_expect(raw: dict[str, Any] | None, where: str = "expect") -> Expectation:
    """The expectation of a spec or configuration, its keys already type-checked (harness.spec_keys.EXPECT)."""
    raw = raw or {}
    absent, present = ([*ANOMALIES] if raw.get(k) == "all" else raw.get(k, []) for k in ("absent", "present"))
    reason = raw.get("reason")
    if reason is not None:
        if raw.get("valid") != "unknown":
            raise SpecError(f"{where}.reason: only with valid: unknown (it is matched against an unknown verdict's "
                            f"reason), got valid: {raw.get('valid')!r}")
        try:
            re.compile(reason)
        except re.error as exc:
            raise SpecError(f"{where}.reason: {reason!r} is not a regular expression: {exc}") from None
    return Expectation(tuple(absent), tuple(present), raw.get("valid"), tuple(raw.get("observed", [])), reason)


def compare(expect: Expectation, verdict: dict[str, Any], facts: dict[str, bool]) -> dict[str, Any] | None:
    """Expected against observed for a scenario configuration; None when the spec expects nothing. `mismatches`
    says what the run showed instead of each expectation it missed, `unmet` those expectations in `expected`'s
    words ("no lost", "a verdict"), for the run's one line (report.verdict_view.verdict_line)."""
    if expect.empty:
        return None
    counts = verdict.get("counts", {})
    unmet: list[tuple[str, str]] = []  # (what was expected, what the run showed instead)
    unmet += [(f"no {a}", f"{a} = {counts.get(a)} (expected none)") for a in expect.absent if counts.get(a, 0) != 0]
    unmet += [(f"{a} > 0", f"{a} = 0 (expected > 0)") for a in expect.present if counts.get(a, 0) == 0]
    unmet += [(fact, f"{fact} not observed") for fact in expect.observed if not facts.get(fact)]
    if expect.valid is not None and verdict.get("valid") != expect.valid:
        unmet.append((f"valid = {expect.valid}", f"valid = {verdict.get('valid')} (expected {expect.valid})"))
    reason = str(verdict.get("reason", "no reason given"))
    if verdict.get("valid") == "unknown" and expect.valid != "unknown":
        unmet.append(("a verdict", f"verdict unknown: {reason}"))
    elif verdict.get("valid") == "unknown" and expect.reason and not re.search(expect.reason, reason):
        unmet.append((f"reason ~ /{expect.reason}/",
                      f"verdict unknown for another reason than /{expect.reason}/: {reason}"))
    expected = ", ".join([*(f"no {a}" for a in expect.absent), *(f"{a} > 0" for a in expect.present),
                          *expect.observed] + ([f"valid = {expect.valid}"] if expect.valid is not None else [])
                         + ([f"reason ~ /{expect.reason}/"] if expect.reason else []))
    observed = [f"{a} = {counts.get(a, 0)}" for a in (*expect.absent, *expect.present)]
    observed += [f"{fact}: {'yes' if facts.get(fact) else 'no'}" for fact in expect.observed]
    observed.append(f"valid = {verdict.get('valid')}")
    return {"expected": expected, "observed": ", ".join(observed), "passed": not unmet,
            "mismatches": [shown for _, shown in unmet], "unmet": [wanted for wanted, _ in unmet], "facts": facts}
