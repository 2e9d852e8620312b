"""What an analysis engine is: the interface both engines implement.

An engine reads `writes` and `reads` itself (validating what the shared
loaders did not), counts every anomaly of spec/history.md, classifies each
instance with the rules of classify.py, and returns MAX_EXAMPLES instances
of each anomaly, picked by anomalies.example_positions from the order of
anomalies.SORT_KEYS (errors first). It then answers small look-ups so examples can be written.
It raises HistoryError for bad input; any other exception is a failure of
the engine, which the caller turns into an "unknown" verdict.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, Protocol

from checkers.classify import ClientConfig
from checkers.sources import TableSource

Position = tuple[str, int, int]


@dataclass
class Analysis:
    """Counts, error counts and example instances of one history."""

    stats: dict[str, int]
    counts: dict[str, int]
    errors: dict[str, int]
    instances: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


@dataclass
class Evidence:
    """Rows of `writes` and `reads` (all contract columns) found by a look-up."""

    writes: list[dict[str, Any]]
    reads: list[dict[str, Any]]


class Engine(Protocol):
    """One way to compute an Analysis from history files."""

    name: str

    def analyse(self, sources: dict[str, TableSource], configs: dict[str, ClientConfig]) -> Analysis:
        """Count and classify every anomaly; see the module docstring."""
        ...

    def evidence(self, values: Collection[str], positions: Collection[Position]) -> Evidence:
        """Writes and reads with one of ``values``, plus every read and acknowledged
        write at one of ``positions``. Only after analyse(); inputs are small."""
        ...
