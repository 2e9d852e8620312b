"""The Spark engine: every anomaly of spec/history.md as DataFrame operations.

Built to scale: no Python UDFs and no collect() of anything larger than
the examples (or SMALL_INSTANCES instance rows). Every read and acknowledged
offset is shuffled once, by value, into the *edges*: distinct
(value, position) pairs flagged "in F" and "read live". `writes`, shuffled by
value alike, joins the per-value facts without another shuffle; positions
(divergence, poll-skip) are one aggregation of the edges; write order
(reordered) and poll order (nonmonotonic-poll, poll-skip) are window
functions. The intermediate tables are cached for the one query that yields
every anomaly instance; when instances are few (the usual case) that query
is the only pass, and counts and examples are taken from its rows.
"""

from __future__ import annotations

from collections.abc import Collection
from functools import reduce
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from checkers import anomalies as a
from checkers.classify import ClientConfig, Rule, rules
from checkers.engine import Analysis, Evidence, Position
from checkers.errors import HistoryError
from checkers.schema import READS, WRITES
from checkers.sources import TableSource
from checkers.spark_session import spark_session
from checkers.spark_tables import raise_bad_row, read_table, reads_summary, writes_summary

DUPLICATE_WRITE = "_duplicate-write"
INSTANCE_TYPES = {
    c: ("string" if c in ("value", "topic", "process", "prev_value") else "long") for c in a.INSTANCE_COLUMNS
}
POS = ["topic", "partition", "offset"]
SMALL_INSTANCES = 5000
CACHE_LEVEL = StorageLevel.MEMORY_AND_DISK
Totals = dict[str, tuple[int, int]]


def _instance(row: dict[str, Any]) -> dict[str, Any]:
    return {k: row[k] for k in (*a.INSTANCE_COLUMNS, "is_error")}


def top_instances(rows: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """The example instances: errors first, then by the anomaly's sort key (as Spark orders them)."""
    keys = a.SORT_KEYS.get(name, ("value",))
    rows = sorted(rows, key=lambda r: (not r["is_error"], *(r[k] for k in keys)))
    n_errors = sum(1 for r in rows if r["is_error"])
    return [_instance(rows[i]) for i in a.example_positions(n_errors, len(rows))]


def _from_rows(rows: list[dict[str, Any]]) -> tuple[Totals, dict[str, list[dict[str, Any]]]]:
    """Counts and first instances of a small instance set, fetched whole."""
    by_name: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_name.setdefault(row["anomaly"], []).append(row)
    totals = {name: (len(found), sum(1 for r in found if r["is_error"])) for name, found in by_name.items()}
    return totals, {name: top_instances(found, name) for name, found in by_name.items()}


def _error_expr(rule: Rule, process: str = "process") -> SparkColumn:
    if rule.kind != "by-process":
        return F.lit(rule.kind == "error")
    if not rule.info_processes:
        return F.lit(True)
    return F.col(process).isNull() | ~F.col(process).isin(*sorted(rule.info_processes))


def _instances(frame: DataFrame, name: str, rule: Rule) -> DataFrame:
    cols = [
        (F.col(c) if c in frame.columns else F.lit(None)).cast(INSTANCE_TYPES[c]).alias(c)
        for c in a.INSTANCE_COLUMNS
    ]
    process = "process" if "process" in frame.columns else None
    error = _error_expr(rule) if process else F.lit(rule.kind != "info")
    return frame.select(F.lit(name).alias("anomaly"), error.alias("is_error"), *cols)


class SparkEngine:
    """Spark engine; see the module docstring and checkers.engine.Engine."""

    name = "spark"

    def __init__(self, master: str | None = None) -> None:
        self.spark = spark_session(master)
        self.writes: DataFrame | None = None
        self.reads: DataFrame | None = None

    def analyse(self, sources: dict[str, TableSource], configs: dict[str, ClientConfig]) -> Analysis:
        w = read_table(self.spark, sources["writes"])
        r = read_table(self.spark, sources["reads"])
        self.writes, self.reads = w, r
        stats, groups = self._check_rows(w, r, sources)
        flagged, cached = self._flagged(w, r, rules(configs, groups))
        try:
            # Usually the instances are few: one job fetches them all and the rest is done here.
            rows = [row.asDict() for row in flagged.limit(SMALL_INSTANCES + 1).collect()]
            if len(rows) <= SMALL_INSTANCES:
                totals, instances = _from_rows(rows)
            else:
                totals, instances = self._from_spark(flagged.persist(StorageLevel.MEMORY_AND_DISK))
                cached.append(flagged)
        finally:
            for frame in cached:
                frame.unpersist()
        if totals.get(DUPLICATE_WRITE, (0, 0))[0]:
            value = instances[DUPLICATE_WRITE][0]["value"]
            raise HistoryError(f"{sources['writes'].path}: column 'value'", f"duplicate value {value!r}")
        counts = {name: totals.get(name, (0, 0))[0] for name in a.ANOMALIES}
        errors = {name: totals.get(name, (0, 0))[1] for name in a.ANOMALIES}
        return Analysis(stats=stats, counts=counts, errors=errors, instances=instances)

    def _from_spark(self, flagged: DataFrame) -> tuple[Totals, dict[str, list[dict[str, Any]]]]:
        """Counts and first instances of a large instance set, computed in Spark."""
        totals = {
            row["anomaly"]: (int(row["n"]), int(row["errors"]))
            for row in flagged.groupBy("anomaly")
            .agg(F.count(F.lit(1)).alias("n"), F.sum(F.col("is_error").cast("long")).alias("errors"))
            .collect()
        }
        instances = {}
        for name in (*a.ANOMALIES, DUPLICATE_WRITE):
            n, n_errors = totals.get(name, (0, 0))
            if n:
                keys = a.SORT_KEYS.get(name, ("value",))
                order = Window.orderBy(F.col("is_error").desc(), *[F.col(k).asc() for k in keys])
                wanted = a.example_positions(n_errors, n)
                top = (
                    flagged.filter(F.col("anomaly") == name)
                    .withColumn("_rank", F.row_number().over(order) - 1)
                    .filter(F.col("_rank").isin(*wanted))
                    .orderBy("_rank")
                )
                instances[name] = [_instance(row.asDict()) for row in top.collect()]
        return totals, instances

    def _check_rows(
        self, w: DataFrame, r: DataFrame, sources: dict[str, TableSource]
    ) -> tuple[dict[str, int], list[str]]:
        ws = writes_summary(w, sources["writes"])
        if ws.pop("bad"):
            raise_bad_row(w, WRITES, sources["writes"])
        rs, groups = reads_summary(r, sources["reads"])
        if rs.pop("bad"):
            raise_bad_row(r, READS, sources["reads"])
        stats = {**ws, "reads": rs["reads"], "live_reads": rs["live_reads"], "final_reads": rs["final_reads"]}
        return stats, groups

    def _flagged(
        self, w: DataFrame, r: DataFrame, table: dict[str, Rule]
    ) -> tuple[DataFrame, list[DataFrame]]:
        """Every anomaly instance (plus duplicate writes), and the DataFrames cached for it."""
        parts = int(self.spark.conf.get("spark.sql.shuffle.partitions") or "8")
        edges, writes = _edges_and_writes(w, r, parts)
        edges = edges.persist(CACHE_LEVEL)
        values = _value_facts(edges, writes).persist(CACHE_LEVEL)
        positions = (
            edges.groupBy(*POS)
            .agg(F.count(F.lit(1)).alias("n_values"), F.max("f").alias("has_final"))
            .persist(CACHE_LEVEL)
        )
        odd_polls = _odd_polls(r).persist(CACHE_LEVEL)
        found = {
            a.DIVERGENCE: positions.filter(F.col("n_values") >= 2),
            a.REORDERED: _reordered(values),
            **_poll_anomalies(odd_polls, positions),
        }
        frames = [_value_instances(values, table)]
        frames += [_instances(frame, name, table[name]) for name, frame in found.items()]
        # Cached values stay partitioned by value: counting writes per value needs no shuffle.
        dup = values.groupBy("value").agg(F.count("is_w").alias("n")).filter(F.col("n") > 1)
        frames.append(_instances(dup, DUPLICATE_WRITE, Rule("error")))
        return reduce(DataFrame.unionByName, frames), [edges, values, positions, odd_polls]

    def evidence(self, values: Collection[str], positions: Collection[Position]) -> Evidence:
        assert self.writes is not None and self.reads is not None, "evidence() before analyse()"

        def pick(frame: DataFrame) -> list[dict[str, Any]]:
            cond = F.col("value").isin(*values) if values else F.lit(False)
            for t, p, o in positions:
                cond = cond | ((F.col("topic") == t) & (F.col("partition") == p) & (F.col("offset") == o))
            return [row.asDict() for row in frame.filter(cond).collect()]

        return Evidence(writes=pick(self.writes), reads=pick(self.reads))


def _edges_and_writes(w: DataFrame, r: DataFrame, parts: int) -> tuple[DataFrame, DataFrame]:
    """Edges: distinct (value, position) pairs with flags f (in F) and l (read live), from every
    read and acknowledged offset; and the writes. Both are hash-partitioned by value alike,
    so the join of the two needs no further shuffle."""
    acked = w.filter((F.col("status") == "ok") & F.col("partition").isNotNull() & F.col("offset").isNotNull())
    evidence = acked.select("value", *POS, F.lit(0).alias("kind")).unionByName(
        r.select("value", *POS, F.when(F.col("phase") == "final", 2).otherwise(1).alias("kind"))
    )
    edges = (
        evidence.repartition(parts, "value")
        .groupBy("value", *POS)
        .agg(
            F.max((F.col("kind") == 2).cast("int")).alias("f"),
            F.max((F.col("kind") == 1).cast("int")).alias("l"),
        )
    )
    writes = w.select("value", "process", "op_id", "topic", "partition", "offset", "status", "invoke_ns")
    return edges, writes.repartition(parts, "value")


def _value_facts(edges: DataFrame, writes: DataFrame) -> DataFrame:
    by_value = edges.groupBy("value").agg(
        F.sum("f").alias("n_fpos"),
        F.max("l").alias("in_live"),
        F.max(F.col("f") + F.col("l")).alias("n_read_kinds"),
        F.min(F.when(F.col("f") == 1, F.col("offset"))).alias("placed"),
    )
    return writes.withColumn("is_w", F.lit(True)).join(by_value, "value", "full_outer")


def _value_instances(v: DataFrame, table: dict[str, Rule]) -> DataFrame:
    """The per-value anomalies in one pass: each row tagged with every anomaly it shows."""
    n_fpos = F.coalesce(F.col("n_fpos"), F.lit(0))
    in_reads = F.coalesce(F.col("n_read_kinds"), F.lit(0)) > 0
    status = F.col("status")
    conditions = {
        a.LOST: (status == "ok") & (n_fpos == 0),
        a.DUPLICATE: n_fpos >= 2,
        a.PHANTOM: F.col("is_w").isNull() & in_reads,
        a.VANISHED_READ: (F.col("in_live") == 1) & (n_fpos == 0),
        a.FAILED_PRESENT: (status == "fail") & in_reads,
        a.RECOVERED: (status == "info") & (n_fpos > 0),
    }
    tags = F.array_compact(F.array(*[F.when(cond, F.lit(name)) for name, cond in conditions.items()]))
    tagged = v.select("value", "process", "invoke_ns", F.explode(tags).alias("anomaly"))
    error = reduce(
        lambda acc, name: acc.when(F.col("anomaly") == name, _error_expr(table[name])),
        list(conditions)[1:],
        F.when(F.col("anomaly") == a.LOST, _error_expr(table[a.LOST])),
    )
    # Phantoms and vanished reads are judged by no process; report none.
    process = F.when(F.col("anomaly").isin(a.PHANTOM, a.VANISHED_READ), F.lit(None)).otherwise(
        F.col("process")
    )
    cols = [
        (F.col(c) if c in ("value", "invoke_ns") else process if c == "process" else F.lit(None))
        .cast(INSTANCE_TYPES[c])
        .alias(c)
        for c in a.INSTANCE_COLUMNS
    ]
    return tagged.select("anomaly", error.alias("is_error"), *cols)


def _reordered(v: DataFrame) -> DataFrame:
    ok = v.filter((F.col("status") == "ok") & F.col("partition").isNotNull() & F.col("placed").isNotNull())
    order = Window.partitionBy("process", "topic", "partition").orderBy("op_id", "value")
    pairs = ok.select(
        "process",
        "topic",
        "partition",
        "op_id",
        "value",
        F.col("placed").alias("offset"),
        F.lag("placed").over(order).alias("prev_offset"),
        F.lag("value").over(order).alias("prev_value"),
        F.lag("op_id").over(order).alias("prev_op_id"),
    )
    return pairs.filter(F.col("offset") < F.col("prev_offset"))


def _odd_polls(r: DataFrame) -> DataFrame:
    """Adjacent live-read pairs that do not advance by exactly one offset (usually few)."""
    order = Window.partitionBy("process", "topic", "partition").orderBy("seq", "offset", "value")
    live = r.filter(F.col("phase") == "live").select("process", *POS, "seq", "value", "poll_ns")
    pairs = live.select(
        "*",
        *[F.lag(c).over(order).alias(f"prev_{c}") for c in ("offset", "value", "seq", "poll_ns")],
    )
    return pairs.filter(F.col("prev_offset").isNotNull() & (F.col("offset") != F.col("prev_offset") + 1))


def _poll_anomalies(pairs: DataFrame, positions: DataFrame) -> dict[str, DataFrame]:
    gaps = pairs.filter(F.col("offset") > F.col("prev_offset") + 1)
    # Does the final log hold an offset strictly inside a gap? Sort gaps and final positions
    # together per partition; the latest final offset before each gap's end must pass its start.
    held = (
        positions.filter(F.col("has_final") == 1)
        .select(*POS)
        .join(F.broadcast(gaps.select("topic", "partition").distinct()), ["topic", "partition"], "left_semi")
    )
    merged = gaps.withColumn("ord", F.lit(0)).unionByName(
        held.withColumn("ord", F.lit(1)), allowMissingColumns=True
    )
    running = (
        Window.partitionBy("topic", "partition")
        .orderBy("offset", "ord")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    last_held = F.max(F.when(F.col("ord") == 1, F.col("offset"))).over(running)
    skips = merged.withColumn("last_held", last_held).filter(
        (F.col("ord") == 0) & (F.col("last_held") > F.col("prev_offset"))
    )
    return {
        a.NONMONOTONIC_POLL: pairs.filter(F.col("offset") <= F.col("prev_offset")),
        a.POLL_SKIP: skips,
    }
