"""Observed facts: what a run showed besides its anomaly counts, that a scenario may require.

The one owner of the facts' names and of the rule that decides each. The spec
checks a scenario's ``expect.observed`` against ``OBSERVED_FACTS``, the verdict
(harness.judge) holds the expectation to ``observed_facts``, and the report
draws and lists the very split brains those facts stand on (``split_brains``),
so what the report shows and what the verdict says cannot drift apart.

- ``two-leaders``: two brokers, each in its own view, leading one partition at once.
- ``leader-disagreement``: the observers' views name two leaders of one partition
  at once (a stale view counts: it need not be the brokers' own claims).
- ``two-controllers``: the observers' views name two controllers at once.
- ``unavailability``: some write was not acknowledged (its status is not ``ok``).
- ``isr-shrink-grow``: some observer's view of a partition's ISR lost a replica
  and later held as many as it ever did again (a follower dropped out and rejoined).

"At once" means views overlapping for at least one polling period: observers
poll a moment apart, so every ordinary leader change shows a disagreement of a
few milliseconds that nobody needs to see and no scenario may count.

Must never: import the report, or judge a run (it states facts; the
scenario's expectation decides what they mean).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from checkers.leadership import Disagreement, Segment

TWO_LEADERS = "two-leaders"
TWO_CONTROLLERS = "two-controllers"
LEADER_DISAGREEMENT = "leader-disagreement"
UNAVAILABILITY = "unavailability"
ISR_SHRINK_GROW = "isr-shrink-grow"
OBSERVED_FACTS: tuple[str, ...] = (TWO_LEADERS, TWO_CONTROLLERS, LEADER_DISAGREEMENT, UNAVAILABILITY, ISR_SHRINK_GROW)

Partition = tuple[str, int]


@dataclass(frozen=True)
class SplitBrains:
    """A run's leadership views and the disagreements among them that last a polling period or longer.

    ``leaders`` holds, per partition, the stretches in which the observers' views named two or more
    leaders; ``self_claims`` the stretches in which two or more brokers each named itself.
    """

    period: int
    partitions: dict[Partition, list[Segment]]
    controllers: list[Segment]
    leaders: dict[Partition, list[Disagreement]]
    self_claims: dict[Partition, list[Disagreement]]
    controller_splits: list[Disagreement]


def split_brains(observations: pd.DataFrame) -> SplitBrains:
    """The views and split brains of an ``observations`` table (spec/history.md), empty or not."""
    # Imported here: the spec imports the names above, and validating a spec needs no pandas.
    from checkers.leadership import controller_views, disagreements, observation_period, partition_views

    period = observation_period(observations)
    partitions = partition_views(observations)
    controllers = controller_views(observations)
    return SplitBrains(
        period=period,
        partitions=partitions,
        controllers=controllers,
        leaders={key: disagreements(segments, period) for key, segments in partitions.items()},
        self_claims={key: disagreements([s for s in segments if s.broker == _broker_id(s.observer)], period)
                     for key, segments in partitions.items()},
        controller_splits=disagreements(controllers, period),
    )


def facts_of(brains: SplitBrains | None, write_statuses: pd.Series | None) -> dict[str, bool]:
    """Every fact, in OBSERVED_FACTS order; no observations or no writes means none of their facts."""
    facts = dict.fromkeys(OBSERVED_FACTS, False)
    if write_statuses is not None:
        facts[UNAVAILABILITY] = bool((write_statuses != "ok").any())
    if brains is not None:
        facts[TWO_LEADERS] = any(brains.self_claims.values())
        facts[LEADER_DISAGREEMENT] = any(brains.leaders.values())
        facts[TWO_CONTROLLERS] = bool(brains.controller_splits)
    return facts


def observed_facts(history_dir: Path) -> dict[str, bool]:
    """The facts of the history the harness wrote (its Parquet ``writes`` and ``observations`` tables)."""
    import pandas as pd

    writes_path, obs_path = history_dir / "writes.parquet", history_dir / "observations.parquet"
    statuses = pd.read_parquet(writes_path, columns=["status"])["status"] if writes_path.exists() else None
    observations = pd.read_parquet(obs_path) if obs_path.exists() else None
    brains = split_brains(observations) if observations is not None and not observations.empty else None
    facts = facts_of(brains, statuses)
    facts[ISR_SHRINK_GROW] = brains is not None and observations is not None and isr_shrank_and_grew(observations)
    return facts


def isr_shrank_and_grew(observations: pd.DataFrame) -> bool:
    """Whether one observer saw a partition's ISR smaller than its largest and, later, that large again."""
    import json

    rows = observations.dropna(subset=["isr"]).sort_values("time_ns")
    for _, views in rows.groupby(["observer", "topic", "partition"]):
        sizes = [len(json.loads(isr)) for isr in views["isr"]]
        full = max(sizes)
        first_short = next((i for i, size in enumerate(sizes) if size < full), None)
        if first_short is not None and full in sizes[first_short:]:
            return True
    return False


def _broker_id(observer: str) -> int | None:
    """The broker an observer speaks for ("broker-2" -> 2), None for any other observer."""
    match = re.search(r"(\d+)$", observer)
    return int(match.group(1)) if match and not observer.startswith("zookeeper") else None
