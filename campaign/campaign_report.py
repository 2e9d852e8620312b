"""What a campaign's outputs say: `CampaignReport` (its cases, counts, status, headline and links) and
`change_lines` (what changed since the campaign before it, one line each).

The model that `campaign/outputs.py` (campaign.json, junit.xml, summary.md) and `campaign/page.py`
(index.html) both render, so neither imports the other for it.
Must never: write a file, run anything or read a run folder.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from campaign.changes import Changes, Key
from campaign.flakes import History
from campaign.lake import relative
from campaign.records import FAIL, FAILING, INCONCLUSIVE, OUTCOMES, REGRESSION, CaseResult


@dataclass
class CampaignReport:
    """Everything a campaign's outputs say."""

    campaign_id: str
    name: str
    source: Path
    folder: Path
    seed: int
    seed_from: str  # "the date" or "--seed"
    budget_s: float
    engine: str | None
    started_at: datetime
    results: list[CaseResult]
    refused: list[dict[str, Any]] = field(default_factory=list)
    finished_at: datetime | None = None
    lake: str = "not written yet"
    changes: Changes = field(default_factory=lambda: Changes(None))
    shard: dict[str, Any] | None = None  # a shard's: which share of which plan (campaign.shards.shard_record)
    shards: list[dict[str, Any]] = field(default_factory=list)  # a merged campaign's: the shards it joined
    history: History | None = None  # the campaigns of this name over the window, this one included (campaign.flakes)

    @property
    def made_of(self) -> str:
        """How this campaign relates to its plan's shards, for the headers ("" when it is not sharded)."""
        if self.shard is not None:
            return (f"shard {self.shard['index']}/{self.shard['count']} ({len(self.results)} of the plan's "
                    f"{len(self.shard['planned'])} runs)")
        if self.shards:
            return f"merged from {len(self.shards)} shards ({', '.join(s['campaign_id'] for s in self.shards)})"
        return ""

    @property
    def counts(self) -> dict[str, int]:
        seen = Counter(r.outcome for r in self.results)
        return {o: seen.get(o, 0) for o in OUTCOMES}

    @property
    def failing(self) -> list[CaseResult]:
        return [r for r in self.results if r.outcome in FAILING]

    @property
    def status(self) -> int:
        """0: nothing failed for good; 1: a regression, or a failure the budget left no time to run again."""
        return 1 if self.failing else 0

    @property
    def headline(self) -> str:
        """"no regression", or how many cases failed for good ("1 REGRESSION, 1 FAIL"); then how many were
        inconclusive, if any ("no regression, 1 INCONCLUSIVE")."""
        counts = self.counts
        head = ", ".join(f"{counts[o]} {o}" for o in (REGRESSION, FAIL) if counts[o]) or "no regression"
        return head + (f", {counts[INCONCLUSIVE]} {INCONCLUSIVE}" if counts[INCONCLUSIVE] else "")

    def link(self, path: Path | None) -> str | None:
        return relative(path, self.folder)


def _keys(items: list[Key]) -> str:
    return ", ".join(f"{s} [{c}]" for s, c in items) or "none"


def change_lines(changes: Changes) -> list[str]:
    """What changed, one line each (for summary.md and the console)."""
    if changes.previous is None:
        return [changes.note or "no earlier campaign of this name in the lake: nothing to compare with"]
    lines = [f"newly failing: {_keys(changes.newly_failing)}", f"fixed: {_keys(changes.fixed)}",
             f"flaky: {_keys(changes.flaky)}",
             "new anomaly kinds: " + (", ".join(f"{s} [{c}]: {', '.join(k)}" for (s, c), k in changes.new_kinds)
                                      or "none"),
             f"still failing: {_keys(changes.still_failing)}"]
    if changes.new_cases:
        lines.append(f"not run last time: {_keys(changes.new_cases)}")
    if changes.not_run:
        lines.append(f"run last time, not now: {_keys(changes.not_run)}")
    return lines
