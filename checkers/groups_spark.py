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

- **rewound**: ``Plan.reads`` also gives each live group read ``rbits``, its bit where its group had
  committed past it (checkers.group_steps: the group's passed offset when it polled, found by a broadcast
  range join on time buckets, with no sort of the reads), and the values some group read so carry
  ``grew``.

Only the sieved values go back to rows: to the live reads (one scan and a broadcast join, which gives
both redelivered's and rewound's first reads; a read is matched to its step again there) and to the
cached (value, position) facts for group-skip's positions, with the group's lowest live offset per
partition (an aggregation of the engine's cached positions, which carry the groups that read there).
Lost-commit is the commits alone. The members' flags (whether a group starts at the beginning, the
member it is judged by) are known before the job (checkers.group_terms.member_flags over the row-check
pass's members and the commits) and enter as literals.

Must never: use a Python UDF, collect() or start a job.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from checkers import anomalies as a
from checkers import group_terms
from checkers import spark_queries as q
from checkers.classify import ClientConfig, Rule
from checkers.group_steps import Steps, bucketed
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
class _StepJoin:
    """The steps as a frame, and how a live group read joins them."""

    frame: DataFrame
    on: SparkColumn


@dataclass(frozen=True)
class Plan:
    """A history's groups as bits, their final offsets and members' flags (see the module docstring)."""

    terms: GroupTerms
    commits: TableSource
    groups: tuple[str, ...]  # a group's id is its place here; its bit 1 << id
    flags: Mapping[str, MemberFlags]
    processes: tuple[str, ...]  # the engine's process and topic dictionaries (checkers.spark_engine.Names)
    topics: tuple[str, ...]
    steps: Steps  # the groups' passed offsets over time (checkers.group_steps)

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
        joined = r.join(F.broadcast(final), on, "left").withColumn("gbits", gbits)
        steps = self._steps(spark, F.col("topic") == F.col("s_topic"))
        rbits = F.when(F.col("offset") < F.col("s_passed"), F.col("gbits"))
        return (joined.join(F.broadcast(steps.frame), steps.on, "left").withColumn("rbits", rbits)
                .drop("c_topic", "c_partition", "c_bit", "c_offset", *steps.frame.columns))

    def _steps(self, spark: SparkSession, topic_on: SparkColumn) -> _StepJoin:
        """The steps as a small frame (topic as an id and as a name) and the join condition of a live group
        read on them (``topic_on``: how the read's topic meets them)."""
        rows = self.steps.rows.filter(pc.is_in(self.steps.rows.column("topic"), pa.array(self.topics, pa.string())))
        ids = pc.index_in(rows.column("topic"), pa.array(self.topics, pa.string())).cast(pa.int32())
        names = [f"s_{c}" if c != "topic" else "s_tname" for c in rows.column_names]
        frame = spark.createDataFrame(rows.rename_columns(names).append_column("s_topic", ids))
        bucket = F.least(F.expr(f"poll_ns div {self.steps.width}"), F.lit(self.steps.last))
        on = ((F.col("phase") == "live") & (F.col("group") == F.col("s_group")) & topic_on
              & (F.col("partition") == F.col("s_partition")) & (bucket == F.col("s_bucket"))
              & (F.col("poll_ns") > F.col("s_start")) & (F.col("poll_ns") <= F.col("s_end")))
        return _StepJoin(frame, on)

    def frames(self, spark: SparkSession, values: DataFrame, facts: DataFrame, positions: DataFrame,
               reads: DataFrame, table: dict[str, Rule]) -> list[DataFrame]:
        """Every v3 instance, as frames of the engine's instance rows. ``values`` and ``facts``: the engine's
        cached per-value and (value, position) facts with GROUP_FACTS; ``positions``: its cached per-position
        table with ``glive`` (the groups that read there live); ``reads``: the reads as read."""
        c = read_table(spark, self.commits)
        acked = c.filter((F.col("kind") != "final") & (F.col("status") == "ok"))
        live = reads.filter((F.col("phase") == "live") & F.col("group").isNotNull())
        per = self._first_reads(spark, values, live)
        first = [F.col(f"first.{k}").alias(k) for k in FIRST]
        frames = {
            a.REDELIVERED: per.filter(F.col("n") >= 2).select("group", "value", *first),
            a.REWOUND: per.filter(F.col("rfirst").isNotNull()).select(
                "group", "value", *[F.col(f"rfirst.{k}").alias(k) for k in FIRST]),
            a.LOST_COMMIT: _lost_commit(acked, c.filter(F.col("kind") == "final")),
            a.GROUP_SKIP: self._group_skip(values, facts, positions),
        }
        return [q.as_instances(f, name, table[name]) for name, f in frames.items()]

    def _first_reads(self, spark: SparkSession, values: DataFrame, live: DataFrame) -> DataFrame:
        """Per (group, value) of the sieved values (some group read it twice, or after committing past it): how
        many times the group read it live (``n``), its first live read (``first``) and its first read after the
        group had committed past it (``rfirst``, null: none). One scan of the live reads serves both anomalies: a
        value that no group read twice has ``n`` 1 for every group (its live reads as many as its groups)."""
        twice = F.coalesce(F.col("n_glive"), F.lit(0)) > F.bit_count(F.coalesce(F.col("glive"), F.lit(0)))
        sieved = values.filter(twice | (F.coalesce(F.col("grew"), F.lit(0)) != 0)).select("value")
        rows = live.join(F.broadcast(sieved), "value", "left_semi")
        steps = self._steps(spark, F.col("topic") == F.col("s_tname"))
        stepped = rows.join(F.broadcast(steps.frame), steps.on, "left")
        after = F.col("offset") < F.col("s_passed")
        return stepped.groupBy("group", "value").agg(
            F.count(F.lit(1)).alias("n"), F.min(F.struct(*FIRST)).alias("first"),
            F.min(F.when(after, F.struct(*FIRST))).alias("rfirst"))

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
    return Plan(terms, commits, groups, group_terms.member_flags(members, configs), processes, topics,
                bucketed(terms.acknowledged()))
