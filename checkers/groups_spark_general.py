"""Contract v3 in the Spark engine for a history of more groups than checkers.groups_spark's bits: group-skip,
redelivered, rewound and lost-commit as DataFrame operations with shuffles of their own.

spec/history.md, "Consumer groups and delivery semantics (contract v3)"; checkers.groups_pandas is the
reference these queries are tested against, and its docstring says what an instance names. `instances`
returns one lazy DataFrame of instance rows that checkers.spark_engine unions into its one job; it runs
only for a history with group commits (checkers.group_terms). The group reads are shuffled by (group,
value) once for redelivered and group-skip's "held" test, and sorted per (group, topic, partition) with
the acknowledged commits for rewound (the latest commit completed strictly before each read: commits sort
after reads at equal times). The members' flags (starts at the beginning, the member an instance is
judged by) are a small aggregation joined by group, in the same job.

Must never: use a Python UDF, collect() or start a job.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import reduce

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from checkers import anomalies as a
from checkers import spark_queries as q
from checkers.classify import ClientConfig, Rule
from checkers.group_terms import after
from checkers.sources import TableSource
from checkers.spark_tables import read_table

GTP = ["group", "topic", "partition"]
FIRST = ("poll_ns", "process", "seq", "topic", "partition", "offset")  # a (group, value)'s first read


def instances(spark: SparkSession, reads: DataFrame, commits: TableSource, configs: Mapping[str, ClientConfig],
              table: dict[str, Rule]) -> DataFrame:
    """Every v3 instance (anomaly, is_error, the instance columns) of a history with group commits."""
    c = read_table(spark, commits)
    members_commits = c.filter(F.col("kind") != "final")
    acked = members_commits.filter(F.col("status") == "ok")
    finals = c.filter(F.col("kind") == "final").select(*GTP, "offset")
    live = reads.filter((F.col("phase") == "live") & F.col("group").isNotNull()).select(
        "value", "topic", "partition", "offset", "group", "process", "seq", "poll_ns")
    frames = {
        a.REDELIVERED: _redelivered(live),
        a.REWOUND: _rewound(live, acked),
        a.LOST_COMMIT: _lost_commit(acked, finals),
        a.GROUP_SKIP: _group_skip(spark, live, reads, finals, members_commits, configs),
    }
    return reduce(DataFrame.unionByName, [q.as_instances(f, n, table[n]) for n, f in frames.items()])


def _redelivered(live: DataFrame) -> DataFrame:
    per = live.groupBy("group", "value").agg(F.count(F.lit(1)).alias("n"), F.min(F.struct(*FIRST)).alias("first"))
    return per.filter(F.col("n") >= 2).select("group", "value", *[F.col(f"first.{k}").alias(k) for k in FIRST])


def _rewound(live: DataFrame, acked: DataFrame) -> DataFrame:
    done = acked.filter(F.col("complete_ns").isNotNull()).select(
        *GTP, F.col("offset").alias("committed"), F.col("complete_ns").alias("at"), F.lit(1).alias("ord"))
    polls = live.withColumns({"at": F.col("poll_ns"), "ord": F.lit(0)})
    merged = polls.unionByName(done, allowMissingColumns=True)
    running = Window.partitionBy(*GTP).orderBy("at", "ord").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    passed = merged.withColumn("passed", F.max("committed").over(running))
    hit = passed.filter((F.col("ord") == 0) & (F.col("passed") > F.col("offset")))
    per = hit.groupBy("group", "value").agg(F.min(F.struct(*FIRST)).alias("first"))
    return per.select("group", "value", *[F.col(f"first.{k}").alias(k) for k in FIRST])


def _lost_commit(acked: DataFrame, finals: DataFrame) -> DataFrame:
    high = acked.groupBy(*GTP).agg(F.max("offset").alias("high"))
    joined = finals.join(high, GTP)
    return joined.filter(F.col("offset").isNull() | (F.col("high") > F.col("offset"))).select(*GTP)


def _member_flags(spark: SparkSession, live: DataFrame, commits: DataFrame,
                  configs: Mapping[str, ClientConfig]) -> DataFrame:
    """Per group with a member: ``begins`` (every member starts at the beginning) and ``process`` (its least member
    not known to commit `after`, else its least member)."""
    rows = [(p, after(configs, p), c.from_beginning) for p, c in sorted(configs.items())]
    flags = spark.createDataFrame(rows or [("", False, False)], "process string, after boolean, begins boolean")
    members = live.select("group", "process").unionByName(commits.select("group", "process")).distinct()
    joined = members.join(F.broadcast(flags), "process", "left")
    return joined.groupBy("group").agg(
        F.min(F.coalesce(F.col("begins"), F.lit(False)).cast("int")).alias("begins"),
        F.coalesce(F.min(F.when(~F.coalesce(F.col("after"), F.lit(False)), F.col("process"))),
                   F.min("process")).alias("process"))


def _group_skip(spark: SparkSession, live: DataFrame, reads: DataFrame, finals: DataFrame, commits: DataFrame,
                configs: Mapping[str, ClientConfig]) -> DataFrame:
    committed = finals.filter(F.col("offset").isNotNull()).select(*GTP, F.col("offset").alias("committed"))
    f = reads.filter(F.col("phase") == "final").select("value", "topic", "partition", "offset")
    below = f.join(F.broadcast(committed), ["topic", "partition"]).filter(F.col("offset") < F.col("committed"))
    below = below.join(live.select("group", "value"), ["group", "value"], "left_anti")
    low = live.groupBy(*GTP).agg(F.min("offset").alias("low"))
    flags = _member_flags(spark, live, commits, configs)
    found = (below.join(low, GTP, "left").join(flags, "group", "left")
             .filter((F.coalesce(F.col("begins"), F.lit(0)) == 1) | F.coalesce(F.col("offset") >= F.col("low"),
                                                                            F.lit(False))))
    per = found.groupBy("group", "value", "process").agg(F.min(F.struct("topic", "partition", "offset")).alias("at"))
    return per.select("group", "value", "process", "at.topic", "at.partition", "at.offset")
