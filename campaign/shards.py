"""Sharded campaigns: `--shard I/N` runs a deterministic share of the plan, balanced by expected run time.

The plan (every case in running order, from the campaign file and the seed) is dealt to N shards
as N runners would take it: each case in plan order goes to the shard with the least expected time
so far (a case's spec `duration_s` plus the per-run overhead; ties to the lower shard number), and
each shard runs its cases in plan order. So the shares are disjoint, their union is the plan, the
same seed always deals the same shares, no two shares differ in expected time by more than one
case's, and when a budget cuts the shards short the cases left out are the plan's last, as
unsharded. Each shard records its plan (name, seed, every case) in campaign.json, so `merge`
can check that it joins the shares of one plan.
Must never: run anything or read a file but the specs the cases load.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from campaign.plan import Case
from testbed.errors import UsageError

_SHARD = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")
CaseId = tuple[int, str, str]  # (entry, scenario, configuration): a case within its plan


@dataclass(frozen=True)
class Shard:
    index: int  # 1..count
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """`I/N` with 1 <= I <= N; a UsageError of one line otherwise."""
    match = _SHARD.fullmatch(text)
    if match is None:
        raise UsageError(f"--shard: expected I/N (e.g. 1/4: the first of 4 shares), got {text!r}")
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1 or not 1 <= index <= count:
        raise UsageError(f"--shard: {text.strip()}: I must be 1 to N and N at least 1 (e.g. 1/{max(count, 2)})")
    return Shard(index, count)


def case_id(case: Case) -> CaseId:
    return case.entry, case.scenario, case.label


def deal(cases: Sequence[Case], count: int, estimate: Callable[[Case], float]) -> list[list[Case]]:
    """The plan dealt to `count` shards: each case, in plan order, to the least loaded shard (the lowest on a tie)."""
    shares: list[list[Case]] = [[] for _ in range(count)]
    loads = [0.0] * count
    for case in cases:
        lightest = min(range(count), key=lambda i: (loads[i], i))
        shares[lightest].append(case)
        loads[lightest] += estimate(case)
    return shares


def fingerprint(name: str, seed: int, cases: Sequence[Case]) -> str:
    """What identifies a plan: the campaign's name, its seed and every case in order."""
    text = json.dumps([name, seed, [list(case_id(c)) for c in cases], [c.settings for c in cases]], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def shard_record(shard: Shard, name: str, seed: int, plan: Sequence[Case]) -> dict[str, Any]:
    """campaign.json's `shard`: which share this is, of which plan (every case of it, in order)."""
    return {"index": shard.index, "count": shard.count, "plan": fingerprint(name, seed, plan),
            "planned": [list(case_id(c)) for c in plan]}
