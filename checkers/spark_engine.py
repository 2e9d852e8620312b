"""The Spark engine: every anomaly of spec/history.md as DataFrame operations.

Built to scale: no Python UDFs and no collect() of anything larger than
the examples (or SMALL_INSTANCES instance rows). Processes, topics and
statuses travel as small integers (dictionaries taken from the row-check
pass), so the big aggregations keep fixed-width buffers and stay hash
aggregations. Every write, read and acknowledged offset is shuffled once,
by value, and aggregated twice without another shuffle: into the *edges*,
distinct (value, position) pairs flagged "in F" and "read live", and into
the per-value facts, which carry the value's write (no join). Positions
(divergence, poll-skip) are one aggregation of the edges; write order
(reordered) and poll order (nonmonotonic-poll, poll-skip) are window
functions. The intermediate tables are cached for the one job that computes
(and caches) every anomaly instance and returns their counts; when instances
are few (the usual case) they are fetched whole and examples picked here,
otherwise one more job ranks each anomaly and fetches only its examples.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
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
from checkers.spark_tables import raise_bad_row, read_table, summarize

DUPLICATE_WRITE = "_duplicate-write"
INSTANCE_TYPES = {
    c: ("string" if c in ("value", "topic", "process", "prev_value") else "long") for c in a.INSTANCE_COLUMNS
}
POS = ["topic", "partition", "offset"]
SMALL_INSTANCES = 50_000  # instance rows fetched whole (a few MB); past it Spark picks the examples
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


def _top_from_rows(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The example instances of a small instance set, fetched whole."""
    by_name: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_name.setdefault(row["anomaly"], []).append(row)
    return {name: top_instances(found, name) for name, found in by_name.items()}


def _totals(flagged: DataFrame) -> Totals:
    """Per anomaly: how many instances, and how many of them are errors."""
    return {
        row["anomaly"]: (int(row["n"]), int(row["errors"]))
        for row in flagged.groupBy("anomaly")
        .agg(F.count(F.lit(1)).alias("n"), F.sum(F.col("is_error").cast("long")).alias("errors"))
        .collect()
    }


def _top_in_spark(flagged: DataFrame, totals: Totals) -> dict[str, list[dict[str, Any]]]:
    """The example instances of a large instance set, picked in Spark (as top_instances does).

    Each anomaly has its own order, so each is ranked on its own; one job fetches them all.
    """
    picked = []
    for name in (*a.ANOMALIES, DUPLICATE_WRITE):
        n, n_errors = totals.get(name, (0, 0))
        if n:
            keys = a.SORT_KEYS.get(name, ("value",))
            order = Window.orderBy(F.col("is_error").desc(), *[F.col(k).asc() for k in keys])
            picked.append(
                flagged.filter(F.col("anomaly") == name)
                .withColumn("_rank", F.row_number().over(order) - 1)
                .filter(F.col("_rank").isin(*a.example_positions(n_errors, n)))
            )
    instances: dict[str, list[dict[str, Any]]] = {}
    rows = sorted(
        (row.asDict() for row in reduce(DataFrame.unionByName, picked).collect()), key=lambda r: r["_rank"]
    )
    for row in rows:
        instances.setdefault(row["anomaly"], []).append(_instance(row))
    return instances


def _error_expr(rule: Rule, process: str = "process") -> SparkColumn:
    if rule.kind != "by-process":
        return F.lit(rule.kind == "error")
    if not rule.info_processes:
        return F.lit(True)
    return F.col(process).isNull() | ~F.col(process).isin(*sorted(rule.info_processes))


@dataclass(frozen=True)
class Names:
    """The processes and topics of a history, as integer ids inside the big shuffles."""

    processes: tuple[str, ...]
    topics: tuple[str, ...]

    @staticmethod
    def _encode(names: tuple[str, ...], col: str) -> SparkColumn:
        # array_position is 1-based; every name of the tables is in the dictionary
        if not names:  # an empty history: no row to encode
            return F.lit(None).cast("int")
        return (F.array_position(F.array(*[F.lit(n) for n in names]), F.col(col)) - 1).cast("int")

    @staticmethod
    def _decode(names: tuple[str, ...], col: str) -> SparkColumn:
        if not names:
            return F.lit(None).cast("string")
        return F.get(F.array(*[F.lit(n) for n in names]), F.col(col))

    def encode(self, frame: DataFrame) -> DataFrame:
        """``frame`` with process and topic replaced by their ids."""
        return frame.withColumns(
            {"process": self._encode(self.processes, "process"), "topic": self._encode(self.topics, "topic")}
        )

    def decode(self, frame: DataFrame) -> DataFrame:
        """The names back, for whichever of process and topic ``frame`` has."""
        named = {"process": self.processes, "topic": self.topics}
        return frame.withColumns({c: self._decode(n, c) for c, n in named.items() if c in frame.columns})


def _instances(frame: DataFrame, name: str, rule: Rule, names: Names) -> DataFrame:
    frame = names.decode(frame)
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
        stats, groups, names = self._check_rows(w, r, sources)
        flagged, cached = self._flagged(names.encode(w), names.encode(r), rules(configs, groups), names)
        # Few partitions: the union has one set per branch, and each later look-up scans them all.
        flagged = flagged.coalesce(self.spark.sparkContext.defaultParallelism).persist(CACHE_LEVEL)
        cached.append(flagged)
        try:
            # One job computes every instance (and caches them) and returns only the counts.
            totals = _totals(flagged)
            if sum(n for n, _ in totals.values()) <= SMALL_INSTANCES:
                # Usually the instances are few: fetch them all and pick the examples here.
                instances = _top_from_rows([row.asDict() for row in flagged.collect()])
            else:
                instances = _top_in_spark(flagged, totals)
        finally:
            for frame in cached:
                frame.unpersist()
        if totals.get(DUPLICATE_WRITE, (0, 0))[0]:
            value = instances[DUPLICATE_WRITE][0]["value"]
            raise HistoryError(f"{sources['writes'].path}: column 'value'", f"duplicate value {value!r}")
        counts = {name: totals.get(name, (0, 0))[0] for name in a.ANOMALIES}
        errors = {name: totals.get(name, (0, 0))[1] for name in a.ANOMALIES}
        return Analysis(stats=stats, counts=counts, errors=errors, instances=instances)

    def _check_rows(
        self, w: DataFrame, r: DataFrame, sources: dict[str, TableSource]
    ) -> tuple[dict[str, int], list[str], Names]:
        ws = summarize(w, WRITES, sources["writes"])
        if ws.bad:
            raise_bad_row(w, WRITES, sources["writes"])
        rs = summarize(r, READS, sources["reads"])
        if rs.bad:
            raise_bad_row(r, READS, sources["reads"])
        stats = {
            "writes": ws.rows,
            **{s: ws.counts[s] for s in ("ok", "fail", "info")},
            "reads": rs.rows,
            "live_reads": rs.counts["live"],
            "final_reads": rs.counts["final"],
        }
        groups = sorted(rs.grouped)
        names = Names(
            processes=tuple(sorted(ws.processes | rs.processes)), topics=tuple(sorted(ws.topics | rs.topics))
        )
        return stats, groups, names

    def _flagged(
        self, w: DataFrame, r: DataFrame, table: dict[str, Rule], names: Names
    ) -> tuple[DataFrame, list[DataFrame]]:
        """Every anomaly instance (plus duplicate writes), and the DataFrames cached for it.

        ``w`` and ``r`` carry process and topic ids; instances get the names back.
        """
        parts = int(self.spark.conf.get("spark.sql.shuffle.partitions") or "8")
        facts = _facts(w, r, parts).persist(CACHE_LEVEL)
        values = _value_facts(facts).persist(CACHE_LEVEL)
        positions = (
            facts.filter(F.col("topic").isNotNull())
            .groupBy(*POS)
            .agg(F.count(F.lit(1)).alias("n_values"), F.max("f").alias("has_final"))
            .persist(CACHE_LEVEL)
        )
        odd_polls = _odd_polls(r).persist(CACHE_LEVEL)
        found = {
            a.DIVERGENCE: positions.filter(F.col("n_values") >= 2),
            a.REORDERED: _reordered(values),
            **_poll_anomalies(odd_polls, positions),
        }
        frames = [_value_instances(names.decode(values), table)]
        frames += [_instances(frame, name, table[name], names) for name, frame in found.items()]
        dup = values.filter(F.col("n_writes") > 1)
        frames.append(_instances(dup, DUPLICATE_WRITE, Rule("error"), names))
        return reduce(DataFrame.unionByName, frames), [facts, values, positions, odd_polls]

    def evidence(self, values: Collection[str], positions: Collection[Position]) -> Evidence:
        assert self.writes is not None and self.reads is not None, "evidence() before analyse()"

        at = reduce(
            lambda acc, pos: (
                acc
                | ((F.col("topic") == pos[0]) & (F.col("partition") == pos[1]) & (F.col("offset") == pos[2]))
            ),
            positions,
            F.lit(False),
        )
        # An offset look-up (a hash set) sieves rows before the per-position comparisons.
        at_position = F.col("offset").isin(*sorted({o for _, _, o in positions})) & at
        cond = (F.col("value").isin(*values) if values else F.lit(False)) | at_position

        def pick(frame: DataFrame) -> list[dict[str, Any]]:
            return [row.asDict() for row in frame.filter(cond).collect()]

        return Evidence(writes=pick(self.writes), reads=pick(self.reads))


STATUS_IDS = {"ok": 0, "fail": 1, "info": 2}  # in id order: an id indexes the list of names
WRITE_FACTS = ("w_process", "w_op_id", "w_status", "w_invoke_ns", "w_topic", "w_partition")


def _facts(w: DataFrame, r: DataFrame, parts: int) -> DataFrame:
    """One row per (value, position): flags f (in F) and l (read live), and the value's write.

    Writes and reads are shuffled together, once, by value. A write's row sits at its
    acknowledged position (the edge its offset proves), or at a null position when it has
    none; its columns are carried as integers so the aggregation stays a hash aggregation.
    """
    acked = (F.col("status") == "ok") & F.col("partition").isNotNull() & F.col("offset").isNotNull()
    status = reduce(lambda acc, kv: acc.when(F.col("status") == kv[0], kv[1]), STATUS_IDS.items(), F)
    writes = w.select(
        "value",
        *[F.when(acked, F.col(c)).alias(c) for c in POS],
        F.lit(0).alias("kind"),
        F.col("process").alias("w_process"),
        F.col("op_id").alias("w_op_id"),
        status.alias("w_status"),
        F.col("invoke_ns").alias("w_invoke_ns"),
        F.col("topic").alias("w_topic"),
        F.col("partition").cast("int").alias("w_partition"),
    )
    reads = r.select(
        "value",
        *POS,
        F.when(F.col("phase") == "final", 2).otherwise(1).alias("kind"),
        *[
            F.lit(None).cast("long" if c in ("w_op_id", "w_invoke_ns") else "int").alias(c)
            for c in WRITE_FACTS
        ],
    )
    kind = F.col("kind")
    return (
        writes.unionByName(reads)
        .repartition(parts, "value")
        .groupBy("value", *POS)
        .agg(
            F.max((kind == 2).cast("int")).alias("f"),
            F.max((kind == 1).cast("int")).alias("l"),
            F.sum((kind == 0).cast("int")).alias("n_writes"),
            *[F.max(c).alias(c) for c in WRITE_FACTS],
        )
    )


def _value_facts(facts: DataFrame) -> DataFrame:
    """Per value: its write (if any; ``n_writes`` of them) and where reads found it.

    ``facts`` is partitioned by value already, so this needs no shuffle.
    """
    status = F.col("w_status")
    return (
        facts.groupBy("value")
        .agg(
            F.sum("f").alias("n_fpos"),
            F.max("l").alias("in_live"),
            F.max(F.col("f") + F.col("l")).alias("n_read_kinds"),
            F.min(F.when(F.col("f") == 1, F.col("offset"))).alias("placed"),
            F.sum("n_writes").alias("n_writes"),
            *[F.max(c).alias(c) for c in WRITE_FACTS],
        )
        .select(
            "value",
            "n_fpos",
            "in_live",
            "n_read_kinds",
            "placed",
            "n_writes",
            F.when(F.col("n_writes") > 0, F.lit(True)).alias("is_w"),
            F.col("w_process").alias("process"),
            F.col("w_op_id").alias("op_id"),
            F.get(F.array(*[F.lit(name) for name in STATUS_IDS]), status).alias("status"),
            F.col("w_invoke_ns").alias("invoke_ns"),
            F.col("w_topic").alias("topic"),
            F.col("w_partition").alias("partition"),
        )
    )


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
