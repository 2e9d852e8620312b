"""The anomalies of spec/history.md: one record per anomaly, and every table derived from the records.

The one list of anomaly names: the harness (spec validation, the report), the
lake and docs/history.md take it from here rather than keeping their own. A
record says everything about an anomaly except how an engine finds it: its
name, the contract version that defined it, a sentence for a person, when it
is an error (a checkers.classify `Judge`), how its example is written (a
checkers.example_builders builder), how its instances are ordered (its sort
key, after "errors first": always non-null columns, the same in both engines)
and where the report shows it. Adding an anomaly is a record here plus its
logic in each engine (checkers.pandas_engine / txn_pandas, checkers.spark_engine /
spark_queries / txn_spark); a test fails while an engine does not find it.

Must never: import an engine, pandas or pyspark (the harness imports this module).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal

from checkers import example_builders as b
from checkers import group_examples as g
from checkers.classify import (
    ALWAYS,
    NEVER,
    UNLESS_ACKS_0,
    UNLESS_AT_LEAST_ONCE,
    UNLESS_GROUP_CONSUMER,
    UNLESS_NOT_ALL_AFTER,
    UNLESS_NOT_TRANSACTIONAL,
    UNLESS_PIPELINED,
    ClientConfig,
    Judge,
    Rule,
)
from checkers.example_order import INSTANCE_COLUMNS, MAX_EXAMPLES, example_positions

__all__ = ["INSTANCE_COLUMNS", "MAX_EXAMPLES", "example_positions"]  # re-exported: their owner is example_order

LOST = "lost"
DUPLICATE = "duplicate"
DIVERGENCE = "divergence"
PHANTOM = "phantom"
VANISHED_READ = "vanished-read"
FAILED_PRESENT = "failed-present"
RECOVERED = "recovered"
REORDERED = "reordered"
NONMONOTONIC_POLL = "nonmonotonic-poll"
POLL_SKIP = "poll-skip"
# Contract v2 (transactions and exactly-once).
ABORTED_READ = "aborted-read"
UNCOMMITTED_READ = "uncommitted-read"
TORN_TRANSACTION = "torn-transaction"
UNREADABLE = "unreadable"
REPROCESSED = "reprocessed"
SKIPPED_INPUT = "skipped-input"
# Contract v3 (consumer groups and delivery semantics).
GROUP_SKIP = "group-skip"
REDELIVERED = "redelivered"
REWOUND = "rewound"
LOST_COMMIT = "lost-commit"


@dataclass(frozen=True)
class Anomaly:
    """One anomaly: everything the checker, the report, the lake and the docs need to know of it.

    ``contract``: the history contract version that defined it (2: 0 in a history without transactions,
    reprocessed: without `source` values; 3: 0 in a history without group commits). ``restated``: a v1 anomaly whose rule a history with
    transactions restates. ``located_by``: what an instance names, a value or a position (the examples
    fetch the rows of that). ``lake_version``: the lake schema version that added its count column to
    `runs` (a new anomaly takes the next one, so an old lake is refused rather than mixed).
    Every record states its ``lake_version`` (keyword, no default) so a new one cannot forget it.
    ``transactions_view``: where the report's transactions view traces its examples to their
    transaction, in this order (None: it does not). ``located_by`` "group": an instance names a group's
    partition, and its example needs no `writes` or `reads` rows.
    """

    name: str
    contract: Literal[1, 2, 3]
    description: str
    sort_key: tuple[str, ...]
    example: b.Builder
    judge: Judge = ALWAYS
    restated: bool = False
    located_by: Literal["value", "position", "group"] = "value"
    lake_version: int = field(kw_only=True)
    transactions_view: int | None = None
    counted: tuple[str, str] = field(kw_only=True, default=("{n} {name}", "{n} {name}"))

    def count_words(self, n: int) -> str:
        """Its count in words, for a verdict's one line: "lost 9,204 acknowledged writes", "1 value written twice"."""
        return self.counted[n != 1].format(n=f"{n:,}", name=self.name)


_WRITE_KEY = ("invoke_ns", "value")
_PAIR_KEY = ("process", "topic", "partition", "seq", "offset", "value")
_GROUP_POSITION_KEY = ("group", "topic", "partition", "offset", "value")

RECORDS: tuple[Anomaly, ...] = (
    Anomaly(LOST, 1, "Writes the broker acknowledged that are missing from the final log.", _WRITE_KEY,
            b.write_example, UNLESS_ACKS_0, restated=True, transactions_view=8, lake_version=1,
            counted=("lost {n} acknowledged write", "lost {n} acknowledged writes")),
    Anomaly(DUPLICATE, 1, "Values that sit at two or more positions of the final log: one send, written twice.",
            ("value",), b.duplicate, UNLESS_AT_LEAST_ONCE, lake_version=1,
            counted=("{n} value written twice", "{n} values written twice")),
    Anomaly(DIVERGENCE, 1, "Positions (topic, partition, offset) that held different values across "
            "acknowledgements and reads: two replicas wrote different logs at the same offsets.",
            ("topic", "partition", "offset"), b.divergence, located_by="position", lake_version=1,
            counted=("{n} offset holding two values", "{n} offsets holding two values")),
    Anomaly(PHANTOM, 1, "Values read that no producer ever sent.", ("value",), b.phantom, lake_version=1,
            counted=("{n} value read that no producer sent", "{n} values read that no producer sent")),
    Anomaly(VANISHED_READ, 1, "Values a consumer read while the test ran that are missing from the final log.",
            ("value",), b.vanished, restated=True, lake_version=1,
            counted=("{n} value read, then gone from the final log", "{n} values read, then gone from the final log")),
    Anomaly(FAILED_PRESENT, 1, "Writes the client was told definitely failed, which were read all the same.",
            _WRITE_KEY, b.failed_present, lake_version=1,
            counted=("{n} failed write present in the log", "{n} failed writes present in the log")),
    Anomaly(RECOVERED, 1, "Writes with an unknown outcome (timeout, lost connection) that did reach the final log.",
            _WRITE_KEY, b.recovered, NEVER, restated=True, transactions_view=7, lake_version=1,
            counted=("{n} unknown write that landed", "{n} unknown writes that landed")),
    Anomaly(REORDERED, 1, "Pairs of acknowledged writes from one producer to one partition that landed in the "
            "log in the opposite order.", ("process", "topic", "partition", "op_id", "value"), b.reordered,
            UNLESS_PIPELINED, lake_version=1,
            counted=("{n} pair of writes out of order", "{n} pairs of writes out of order")),
    Anomaly(NONMONOTONIC_POLL, 1, "Consecutive live reads by one consumer whose offset went backwards or repeated.",
            _PAIR_KEY, b.poll_pair, UNLESS_GROUP_CONSUMER, lake_version=1,
            counted=("{n} poll going backwards", "{n} polls going backwards")),
    Anomaly(POLL_SKIP, 1, "Consecutive live reads by one consumer that skipped records present in the final log.",
            _PAIR_KEY, b.poll_pair, restated=True, lake_version=1,
            counted=("{n} poll skipping records", "{n} polls skipping records")),
    Anomaly(ABORTED_READ, 2, "Values of aborted transactions that a read_committed consumer read.", _WRITE_KEY,
            b.aborted_read, lake_version=2, transactions_view=1,
            counted=("{n} aborted value read", "{n} aborted values read")),
    Anomaly(UNCOMMITTED_READ, 2, "Values a read_committed consumer read before their transaction was asked to "
            "commit.", _WRITE_KEY, b.uncommitted_read, lake_version=2, transactions_view=2,
            counted=("{n} value read before its commit", "{n} values read before their commit")),
    # a transaction, by its first write missing from Frc
    Anomaly(TORN_TRANSACTION, 2, "Transactions partly in the committed final log and partly missing from it.",
            _WRITE_KEY, b.torn, lake_version=2, transactions_view=3,
            counted=("{n} torn transaction", "{n} torn transactions")),
    Anomaly(UNREADABLE, 2, "Acknowledged values the read_uncommitted drain read but the read_committed drain "
            "never reached.", _WRITE_KEY, b.unreadable, lake_version=2, transactions_view=4,
            counted=("{n} acknowledged value never read_committed", "{n} acknowledged values never read_committed")),
    Anomaly(REPROCESSED, 2, "Input records processed into the committed output twice.", ("value",),  # the input
            b.reprocessed, UNLESS_NOT_TRANSACTIONAL, lake_version=2, transactions_view=6,
            counted=("{n} input processed twice", "{n} inputs processed twice")),
    Anomaly(SKIPPED_INPUT, 2, "Input records marked consumed by a committed transaction but never processed into "
            "the committed output.", ("value",), b.skipped_input, lake_version=2, transactions_view=5,
            counted=("{n} input consumed but never processed", "{n} inputs consumed but never processed")),
    Anomaly(GROUP_SKIP, 3, "Records below a group's final committed offset that no member of the group was "
            "handed: the group committed past them.", _GROUP_POSITION_KEY, g.group_skip, UNLESS_NOT_ALL_AFTER,
            lake_version=5,
            counted=("{n} record skipped by a group's commit", "{n} records skipped by a group's commit")),
    Anomaly(REDELIVERED, 3, "Records handed to a consumer group twice or more (at-least-once delivery repeats "
            "what was not yet committed).", ("group", "value"), g.redelivered, NEVER, lake_version=5,
            counted=("{n} record redelivered to a group", "{n} records redelivered to a group")),
    Anomaly(REWOUND, 3, "Records handed to a group member after the group's acknowledged commit had already "
            "passed them.", _GROUP_POSITION_KEY, g.rewound, lake_version=5,
            counted=("{n} record handed out after its commit", "{n} records handed out after their commit")),
    Anomaly(LOST_COMMIT, 3, "Group partitions whose final committed offset is behind a commit the coordinator "
            "acknowledged, or missing: an acknowledged commit it did not keep.", ("group", "topic", "partition"),
            g.lost_commit, located_by="group", lake_version=5,
            counted=("lost {n} acknowledged commit", "lost {n} acknowledged commits")),
)


class Registry:
    """A sequence of anomaly records (in the verdict's order) and the tables derived from them.

    Iterating gives the records; ``registry[name]`` one of them (KeyError for a name no record has).
    """

    def __init__(self, records: Iterable[Anomaly]) -> None:
        self.records = tuple(records)
        self._by_name = {r.name: r for r in self.records}
        if len(self._by_name) != len(self.records):
            raise ValueError("two anomaly records have one name")
        if any(not r.sort_key or not r.description for r in self.records):
            raise ValueError("every anomaly record has a sort key and a description")

    def __iter__(self) -> Iterator[Anomaly]:
        return iter(self.records)

    def __getitem__(self, name: str) -> Anomaly:
        return self._by_name[name]

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def plus(self, *records: Anomaly) -> Registry:
        """This registry with ``records`` added at the end (a test's new anomaly)."""
        return Registry((*self.records, *records))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.records)

    def of_contract(self, version: int) -> tuple[str, ...]:
        return tuple(r.name for r in self.records if r.contract == version)

    @property
    def restated(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.records if r.restated)

    @property
    def transactions_view(self) -> tuple[str, ...]:
        """The anomalies the report's transactions view traces to their transaction, in its order."""
        traced = [r for r in self.records if r.transactions_view is not None]
        return tuple(r.name for r in sorted(traced, key=lambda r: r.transactions_view or 0))

    @property
    def lake_version(self) -> int:
        """The newest lake schema version an anomaly's count column needs."""
        return max(r.lake_version for r in self.records)

    def rules(self, configs: Mapping[str, ClientConfig], group_consumers: Iterable[str]) -> dict[str, Rule]:
        """The rule for every anomaly, given the known configs and the group consumers."""
        groups = frozenset(group_consumers)
        return {r.name: r.judge(configs, groups) for r in self.records}


REGISTRY = Registry(RECORDS)

ANOMALIES: tuple[str, ...] = REGISTRY.names
# The anomalies of contract v2: 0 in a history without transactions (reprocessed: without `source` values).
V2_ANOMALIES: tuple[str, ...] = REGISTRY.of_contract(2)
# The anomalies of contract v3: 0 in a history without group commits.
V3_ANOMALIES: tuple[str, ...] = REGISTRY.of_contract(3)
# The v1 anomalies whose rule a history with transactions restates.
RESTATED: tuple[str, ...] = REGISTRY.restated
# Each anomaly in a sentence, for a person reading a verdict (spec/history.md has the exact definitions).
DESCRIPTIONS: dict[str, str] = {r.name: r.description for r in REGISTRY}
# Sort key of each anomaly's instances (after "errors first"); always non-null columns.
SORT_KEYS: dict[str, tuple[str, ...]] = {r.name: r.sort_key for r in REGISTRY}


def rules(configs: Mapping[str, ClientConfig], group_consumers: Iterable[str],
          registry: Registry = REGISTRY) -> dict[str, Rule]:
    """The rule for every anomaly of ``registry``, given the known configs and the group consumers."""
    return registry.rules(configs, group_consumers)
