"""What changed since the previous campaign: newly failing, fixed, flaky, new anomaly kinds.

Both campaigns as rows of the lake's campaigns table (`campaign.lake`), compared per
(scenario, configuration): a case's outcome is its worst over the campaign's rows, its anomaly kinds
those any of its attempts saw. Cases only one of the two campaigns ran are listed as such, never
counted as fixed or failing.
Must never: read or write a file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from campaign.records import FAIL, FAILING, FLAKE, INCONCLUSIVE, OUTCOMES, PASS, REGRESSION, SKIPPED
from checkers.anomalies import ANOMALIES

# Worst first: the outcome a case has when a campaign ran it more than once.
_SEVERITY = {REGRESSION: 0, FAIL: 1, FLAKE: 2, INCONCLUSIVE: 3, PASS: 4, SKIPPED: 5}
Key = tuple[str, str]


@dataclass
class Changes:
    previous: str | None  # the previous campaign's id; None: there was none in the lake
    newly_failing: list[Key] = field(default_factory=list)
    fixed: list[Key] = field(default_factory=list)
    still_failing: list[Key] = field(default_factory=list)
    flaky: list[Key] = field(default_factory=list)
    new_kinds: list[tuple[Key, list[str]]] = field(default_factory=list)
    new_cases: list[Key] = field(default_factory=list)  # run now, not run (or skipped) last time
    not_run: list[Key] = field(default_factory=list)  # run last time, not run (or skipped) now
    note: str | None = None  # why nothing was compared (a shard: its merge compares)

    @property
    def any(self) -> bool:
        return bool(self.newly_failing or self.fixed or self.flaky or self.new_kinds)

    def to_json(self) -> dict[str, Any]:
        def keys(items: list[Key]) -> list[dict[str, str]]:
            return [{"scenario": s, "configuration": c} for s, c in items]
        return {"previous": self.previous, "newly_failing": keys(self.newly_failing), "fixed": keys(self.fixed),
                "still_failing": keys(self.still_failing), "flaky": keys(self.flaky),
                "new_anomaly_kinds": [{"scenario": s, "configuration": c, "kinds": kinds}
                                      for (s, c), kinds in self.new_kinds],
                "new_cases": keys(self.new_cases), "not_run": keys(self.not_run)}


def summarize(rows: list[dict[str, Any]]) -> dict[Key, tuple[str, set[str]]]:
    """Per (scenario, configuration): the worst outcome and the anomaly kinds seen."""
    out: dict[Key, tuple[str, set[str]]] = {}
    for row in rows:
        key = (str(row["scenario"]), str(row["configuration"]))
        outcome = row["outcome"] if row["outcome"] in OUTCOMES else REGRESSION
        kinds = set(row.get("anomaly_kinds") or [])
        if key in out:
            before, seen = out[key]
            outcome = min(before, outcome, key=_SEVERITY.__getitem__)
            kinds |= seen
        out[key] = (outcome, kinds)
    return out


def compare(current: list[dict[str, Any]], previous: list[dict[str, Any]], previous_id: str | None) -> Changes:
    changes = Changes(previous_id)
    if previous_id is None:
        return changes
    now, before = summarize(current), summarize(previous)
    for key, (outcome, kinds) in now.items():
        if outcome == FLAKE:
            changes.flaky.append(key)
        if outcome == SKIPPED:
            if key in before and before[key][0] != SKIPPED:
                changes.not_run.append(key)
            continue
        if key not in before or before[key][0] == SKIPPED:
            changes.new_cases.append(key)
            continue
        was, seen = before[key]
        if outcome in FAILING and was not in FAILING:
            changes.newly_failing.append(key)
        elif outcome in FAILING:
            changes.still_failing.append(key)
        elif was in FAILING and outcome != INCONCLUSIVE:  # an inconclusive run shows no fix
            changes.fixed.append(key)
        if kinds - seen:
            changes.new_kinds.append((key, [a for a in ANOMALIES if a in kinds - seen]))
    changes.not_run += [key for key, (was, _) in before.items() if key not in now and was != SKIPPED]
    return changes
