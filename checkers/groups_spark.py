"""Contract v3 in the Spark engine: group-skip, redelivered, rewound and lost-commit, riding on the v1 shuffle.

spec/history.md, "Consumer groups and delivery semantics (contract v3)"; checkers.groups_pandas is the
reference these queries are tested against, and its docstring says what an instance names.

Like contract v2 (checkers.txn_spark), v3 adds columns to the v1 engine's one shuffle by value rather
than shuffles of its own. Each group gets a bit of a long (up to MAX_GROUPS groups; a history with more
is judged by checkers.groups_spark_general's own shuffles). `Plan.reads` gives each read ``gbits``: a
live group read its group's bit, a final read the bits of the groups whose final committed offset on its
partition lies above it (one broadcast join with the final rows). The (value, position) and per-value
facts then carry spark_queries.GROUP_FACTS, and the per-value facts sieve the values:

- **redelivered**: some group read a value twice or more exactly when the value's live group reads
  outnumber the groups that read it live (its ``n_glive`` against the bits of ``glive``);
- **group-skip**: only a value with a final read below a group's committed offset that the group never
  read live (``fbelow`` and not ``glive``) can be one.

Redelivered's first reads and rewound come from the engine's shuffle of the live reads, which v1 pays
for its poll order (spark_queries.odd_polls): `Plan.polls` adds the acknowledged commits to it and
shuffles both by (topic, partition), which clusters each process's polls of a partition and each group's
reads and commits of it alike, so rewound (the latest commit completed strictly before each read: commits
sort after reads at equal times) is one more window over the same partitions, with no shuffle of its own,
and redelivered's sieved values are found there too (a broadcast join) rather than by another scan of the
reads. The engine caches only the rows that are an odd pair, a rewound read or a sieved value's group read.
Group-skip's positions come from the cached (value, position) facts, with the group's lowest live offset per
partition (an aggregation of the engine's cached positions, which carry the groups that read there);
lost-commit is the commits alone. The members' flags (whether a group starts at the beginning, the member
it is judged by) are known before the job (checkers.group_terms.member_flags over the row-check pass's
members and the commits) and enter as literals.

Must never: use a Python UDF, collect() or start a job.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from checkers import anomalies as a
from checkers import group_terms
from checkers import spark_queries as q
from checkers.classify import ClientConfig, Rule
from checkers.group_terms import GroupTerms, MemberFlags
from checkers.parquet import RowSummary
from checkers.sources import TableSource
from checkers.spark_tables import read_table

MAX_GROUPS = 62  # a group per bit of a long (the sign bit and one more left alone)
GTP = ["gid", "topic", "partition"]
FIRST = ("poll_ns", "process", "seq", "topic", "partition", "offset")  # a (group, value)'s first read


def _lookup(names: tuple[str, ...], col: SparkColumn) -> SparkColumn:
    """The id (0-based position) of ``col`` among ``names`` (-1 where it is none of them)."""
    if not names:
        return F.lit(-1)
    return (F.array_position(F.array(*[F.lit(n) for n in names]), col) - 1).cast("int")


def _bit(gid: SparkColumn) -> SparkColumn:
    """1 << gid, as a long (a power of two is exact in a double)."""
    return F.pow(F.lit(2), gid).cast("long")


def _pick(values: tuple[object, ...], gid: SparkColumn) -> SparkColumn:
    """values[gid], a literal per group."""
    return F.get(F.array(*[F.lit(v) for v in values]), gid)


@dataclass(frozen=True)
class Plan:
    """A history's groups as bits, their final offsets and members' flags (see the module docstring)."""

    terms: GroupTerms
    commits: TableSource
    groups: tuple[str, ...]  # a group's id is its place here; its bit 1 << id
    flags: Mapping[str, MemberFlags]
    processes: tuple[str, ...]  # the engine's process and topic dictionaries (checkers.spark_engine.Names)
    topics: tuple[str, ...]

    def _gids(self, mask: SparkColumn) -> SparkColumn:
        """The ids of the groups whose bits ``mask`` has, as an array."""
        ids = F.array(*[F.lit(i) for i in range(len(self.groups))])
        return F.filter(ids, lambda g: mask.bitwiseAND(_bit(g)) != 0)

    def reads(self, spark: SparkSession, r: DataFrame) -> DataFrame:
        """``r`` (process and topic ids) with ``gbits`` (the module docstring); a final read below the committed
        offsets of several groups of its partition is one row per group (the v1 facts' aggregations are ors,
        maxima and minima, which a repeated read leaves alone)."""
        rows = [(self.topics.index(t), p, 1 << self.groups.index(g), o)
                for g, t, p, o in zip(*(self.terms.finals.column(c).to_pylist()
                                        for c in ("group", "topic", "partition", "offset")), strict=True)
                if o is not None and t in self.topics]
        final = spark.createDataFrame(rows, "c_topic int, c_partition int, c_bit long, c_offset long")
        on = ((F.col("topic") == F.col("c_topic")) & (F.col("partition") == F.col("c_partition"))
              & (F.col("phase") == "final"))
        bit = _bit(_lookup(self.groups, F.col("group")))
        gbits = (F.when(F.col("phase") == "live", F.when(F.col("group").isNotNull(), bit))
                 .otherwise(F.when(F.col("offset") < F.col("c_offset"), F.col("c_bit"))))
        joined = r.join(F.broadcast(final), on, "left")
        return joined.withColumn("gbits", gbits).drop("c_topic", "c_partition", "c_bit", "c_offset")

    def polls(self, spark: SparkSession, r: DataFrame, values: DataFrame, parts: int) -> DataFrame:
        """The live reads' odd pairs (spark_queries.odd_polls) and the rows rewound and redelivered need, from one
        shuffle of the live reads (``r``, with ids, as the engine's shuffle by value gets them) and the
        acknowledged commits by (topic, partition), which clusters both windows: each group's commits and reads
        by time (``rewound``: the group had committed past the read when it polled; commits sort after reads at
        equal times), then each process's poll order (the pairs). ``redo``: a live group read of a value that
        some group read twice (the per-value facts, ``values``, sieve them). Only the rows that are one of the
        three are kept (the engine caches them)."""
        gid = F.when(F.col("group").isNotNull(), _lookup(self.groups, F.col("group")))
        polls = q.live_polls(r, gid.alias("gid"), F.lit(0).alias("ord"))
        merged = polls.unionByName(self._done(spark), allowMissingColumns=True).repartition(parts, "topic", "partition")
        running = Window.partitionBy("gid", "topic", "partition").orderBy("poll_ns", "ord").rowsBetween(
            Window.unboundedPreceding, Window.currentRow)
        # rewound's window first: the commits leave before the poll order's sort, which then sorts what v1 sorts
        paired = q.with_prev_polls(merged.withColumn("passed", F.max("committed").over(running))
                                   .filter(F.col("ord") == 0))
        twice = F.coalesce(F.col("n_glive"), F.lit(0)) > F.bit_count(F.coalesce(F.col("glive"), F.lit(0)))
        sieved = values.filter(twice).select("value", F.lit(True).alias("sieved"))
        flags = {"rewound": F.coalesce(F.col("passed") > F.col("offset"), F.lit(False)),
                 "redo": F.col("gid").isNotNull() & F.col("sieved").isNotNull()}
        kept = paired.join(F.broadcast(sieved), "value", "left").withColumns(flags)
        return kept.filter(q.odd_pair() | F.col("rewound") | F.col("redo")).drop("ord", "committed", "passed",
                                                                                   "sieved")

    def _done(self, spark: SparkSession) -> DataFrame:
        """The acknowledged commits that completed, as rows of ``polls``' shuffle (their time in poll_ns)."""
        c = read_table(spark, self.commits)
        done = c.filter((F.col("kind") != "final") & (F.col("status") == "ok") & F.col("complete_ns").isNotNull())
        return done.select(_lookup(self.topics, F.col("topic")).alias("topic"),
                           "partition", F.col("complete_ns").alias("poll_ns"),
                           _lookup(self.groups, F.col("group")).alias("gid"), F.col("offset").alias("committed"),
                           F.lit(1).alias("ord"))

    @staticmethod
    def odd_pairs(polls: DataFrame) -> DataFrame:
        """The odd pairs among ``polls``' rows, as spark_queries.odd_polls gives them."""
        return polls.filter(q.odd_pair()).drop("gid", "rewound", "redo")

    def frames(self, spark: SparkSession, values: DataFrame, facts: DataFrame, positions: DataFrame,
               polls: DataFrame, table: dict[str, Rule]) -> list[DataFrame]:
        """Every v3 instance, as frames of the engine's instance rows. ``values`` and ``facts``: the engine's
        cached per-value and (value, position) facts with GROUP_FACTS; ``positions``: its cached per-position
        table with ``glive`` (the groups that read there live); ``polls``: the cached rows of `polls`."""
        c = read_table(spark, self.commits)
        acked = c.filter((F.col("kind") != "final") & (F.col("status") == "ok"))
        frames = {
            a.REDELIVERED: self._redelivered(polls.filter(F.col("redo"))),
            a.REWOUND: self._rewound(polls.filter(F.col("rewound"))),
            a.LOST_COMMIT: _lost_commit(acked, c.filter(F.col("kind") == "final")),
            a.GROUP_SKIP: self._group_skip(values, facts, positions),
        }
        return [q.as_instances(f, name, table[name]) for name, f in frames.items()]

    def _named(self, per: DataFrame, first: str) -> DataFrame:
        """``per``'s (gid, value) and its struct ``first`` of FIRST, with the names back."""
        cols = {k: F.col(f"{first}.{k}") for k in FIRST}
        return per.select(_pick(self.groups, F.col("gid")).alias("group"), "value",
                          *[(_pick(self.processes, v) if k == "process" else _pick(self.topics, v) if k == "topic"
                             else v).alias(k) for k, v in cols.items()])

    def _redelivered(self, rows: DataFrame) -> DataFrame:
        per = rows.groupBy("gid", "value").agg(F.count(F.lit(1)).alias("n"), F.min(F.struct(*FIRST)).alias("first"))
        return self._named(per.filter(F.col("n") >= 2), "first")

    def _rewound(self, hits: DataFrame) -> DataFrame:
        return self._named(hits.groupBy("gid", "value").agg(F.min(F.struct(*FIRST)).alias("first")), "first")

    def _group_skip(self, values: DataFrame, facts: DataFrame, positions: DataFrame) -> DataFrame:
        miss = F.col("fbelow").bitwiseAND(F.bitwise_not(F.coalesce(F.col("glive"), F.lit(0).cast("long"))))
        sieved = values.select("value", miss.alias("miss")).filter(F.col("miss") != 0)
        below = (facts.filter(F.col("fbelow") != 0).select("value", *q.POS, "fbelow")
                 .join(F.broadcast(sieved), "value")
                 .select("value", *q.POS, F.explode(self._gids(F.col("fbelow").bitwiseAND(F.col("miss")))).alias("gid")))
        # the group's lowest live read per partition, from the positions: by distinct masks first (few), then per group
        masks = (positions.filter(F.col("glive") != 0).groupBy("glive", "topic", "partition")
                 .agg(F.min("offset").alias("low")))
        low = (masks.select("topic", "partition", "low", F.explode(self._gids(F.col("glive"))).alias("gid"))
               .groupBy(*GTP).agg(F.min("low").alias("low")))
        begins = _pick(tuple(self.flags[g].begins if g in self.flags else False for g in self.groups), F.col("gid"))
        found = below.join(F.broadcast(low), GTP, "left").filter(
            begins | F.coalesce(F.col("offset") >= F.col("low"), F.lit(False)))
        per = found.groupBy("gid", "value").agg(F.min(F.struct(*q.POS)).alias("at"))
        judged_by = tuple(self.flags[g].judged_by if g in self.flags else None for g in self.groups)
        return per.select(_pick(self.groups, F.col("gid")).alias("group"), "value",
                          _pick(judged_by, F.col("gid")).alias("process"),
                          _pick(self.topics, F.col("at.topic")).alias("topic"), "at.partition", "at.offset")


def _lost_commit(acked: DataFrame, final: DataFrame) -> DataFrame:
    keys = ["group", "topic", "partition"]
    high = acked.groupBy(*keys).agg(F.max("offset").alias("high"))
    joined = final.select(*keys, "offset").join(high, keys)
    return joined.filter(F.col("offset").isNull() | (F.col("high") > F.col("offset"))).select(*keys)


def prepare(terms: GroupTerms | None, commits: TableSource | None, summary: RowSummary,
            configs: Mapping[str, ClientConfig], processes: tuple[str, ...], topics: tuple[str, ...]) -> Plan | None:
    """The v3 plan of a history with group commits of at most MAX_GROUPS groups; None otherwise (no group
    commits: no v3 work; more groups: checkers.groups_spark_general)."""
    if terms is None or commits is None:
        return None
    members = summary.members | group_terms.committers_by_group(terms)
    groups = tuple(sorted({g for g, _ in members} | set(terms.finals.column("group").to_pylist())))
    if len(groups) > MAX_GROUPS:
        return None
    return Plan(terms, commits, groups, group_terms.member_flags(members, configs), processes, topics)
