"""The Spark engine: every anomaly of spec/history.md as DataFrame operations.

Built to scale: no Python UDFs and no collect() of anything larger than
the examples (or SMALL_INSTANCES instance rows). Processes, topics and
statuses travel as small integers (dictionaries taken from the row-check
pass), a write's three packed into one long and the kinds of row seen at a
(value, position) kept as one int of bits, so the big aggregations keep few
fixed-width buffers and stay hash aggregations. Every write, read and
acknowledged offset is shuffled once, by value, and aggregated twice without
another shuffle: into the *edges*, distinct (value, position) pairs with
the kinds of row seen there ("in F", "read live", ...) as one int, and into
the per-value facts, which carry the value's write (no join) and every kind
seen at the value, again as one int. Positions
(divergence, poll-skip) are one aggregation of the edges; write order
(reordered) and poll order (nonmonotonic-poll, poll-skip) are window
functions. The intermediate tables are cached for the one job that computes
(and caches) every anomaly instance and returns their counts; when instances
are few (up to SMALL_INSTANCES, the usual case) they are fetched whole as
Arrow and examples picked here, otherwise one more job ranks each anomaly and
fetches only its examples. Contract v2 (checkers.txn_spark) adds its columns
to the same shuffle and per-value table rather than a plan of its own, and so does contract v3
(checkers.groups_spark; past its MAX_GROUPS groups, checkers.groups_spark_general unions its own
instances into the same job). The
examples' evidence rows of a Parquet history are picked by a streaming
pyarrow pass (checkers.parquet.pick_rows), not by two more Spark scans.
The per-anomaly queries are in checkers.spark_queries; this module plans
and runs them.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from functools import reduce
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import StorageLevel
from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from checkers import anomalies as a
from checkers import group_terms, groups_spark, groups_spark_general, txn_spark, txn_terms
from checkers import spark_queries as q
from checkers.classify import ClientConfig, Rule
from checkers.engine import Analysis, Evidence, Position
from checkers.errors import HistoryError
from checkers.parquet import RowSummary, pick_rows
from checkers.schema import READS, TABLES, WRITES
from checkers.sources import TableSource
from checkers.spark_session import checker_settings, spark_session
from checkers.spark_tables import raise_bad_row, read_table, summarize

DUPLICATE_WRITE = "_duplicate-write"
CHECK_SORT_KEY = ("value",)  # the engine's own checks (duplicate writes, missing transactions): by value
SMALL_INSTANCES = 1_000_000  # instance rows fetched whole as Arrow (~100 MB at most); past it Spark picks the examples
CACHE_LEVEL = StorageLevel.MEMORY_AND_DISK
Totals = dict[str, tuple[int, int]]


def _instance(row: dict[str, Any]) -> dict[str, Any]:
    return {k: row[k] for k in (*a.INSTANCE_COLUMNS, "is_error")}


def sort_key(name: str) -> tuple[str, ...]:
    """The order of ``name``'s instances after "errors first": its record's sort key, as in the pandas engine
    (KeyError for a name no record has); the engine's own checks by value."""
    return CHECK_SORT_KEY if name in (DUPLICATE_WRITE, txn_spark.MISSING_TXN) else a.REGISTRY[name].sort_key


def top_from_arrow(table: pa.Table) -> dict[str, list[dict[str, Any]]]:
    """The example instances of an instance set fetched whole (as Arrow).

    Each anomaly's rows are ordered by Arrow (errors first, then its sort key, `sort_key`, nulls first
    as in Spark and the pandas engine), anomalies.example_positions picks from that order, and only the
    picked rows become Python values.
    """
    instances: dict[str, list[dict[str, Any]]] = {}
    names = table.column("anomaly")
    for name in sorted(pc.unique(names).drop_null().to_pylist()):
        rows = table.filter(pc.equal(names, name))
        keys = sort_key(name)
        order = pc.sort_indices(rows, sort_keys=[("is_error", "descending", "at_start"),
                                                 *[(k, "ascending", "at_start") for k in keys]])
        n_errors = pc.sum(pc.cast(rows.column("is_error"), pa.int64())).as_py() or 0
        picked = pc.take(order, pa.array(a.example_positions(n_errors, rows.num_rows), pa.int64()))
        instances[name] = [_instance(row) for row in rows.take(picked).to_pylist()]
    return instances


def _totals(flagged: DataFrame) -> Totals:
    """Per anomaly: how many instances, and how many of them are errors."""
    return {
        row["anomaly"]: (int(row["n"]), int(row["errors"]))
        for row in flagged.groupBy("anomaly")
        .agg(F.count(F.lit(1)).alias("n"), F.sum(F.col("is_error").cast("long")).alias("errors"))
        .collect()
    }


def _top_in_spark(flagged: DataFrame, totals: Totals) -> dict[str, list[dict[str, Any]]]:
    """The example instances of a large instance set, picked in Spark (as top_from_arrow picks them).

    Each anomaly has its own order, so each is ranked on its own; one job fetches them all.
    """
    picked = []
    for name in (*a.ANOMALIES, DUPLICATE_WRITE):
        n, n_errors = totals.get(name, (0, 0))
        if n:
            keys = sort_key(name)
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
    return q.as_instances(names.decode(frame), name, rule)


class SparkEngine:
    """Spark engine; see the module docstring and checkers.engine.Engine."""

    name = "spark"

    def __init__(self, master: str | None = None) -> None:
        self.spark = spark_session(master)
        self.writes: DataFrame | None = None
        self.reads: DataFrame | None = None
        self.sources: dict[str, TableSource] = {}

    def analyse(self, sources: dict[str, TableSource], configs: dict[str, ClientConfig]) -> Analysis:
        with checker_settings(self.spark):
            return self._analyse(sources, configs)

    def _analyse(self, sources: dict[str, TableSource], configs: dict[str, ClientConfig]) -> Analysis:
        w = read_table(self.spark, sources["writes"])
        r = read_table(self.spark, sources["reads"])
        self.writes, self.reads, self.sources = w, r, sources
        stats, groups, names, read_summary = self._check_rows(w, r, sources)
        # contract v2 (None without transactions or sources): its columns ride on the v1 plan's one shuffle
        plan = txn_spark.prepare(self.spark, w, sources, configs, read_summary)
        stats.update(plan.stats() if plan else txn_terms.stats(None))
        if plan is not None:
            w, r = plan.writes(w), plan.reads(r)
        gterms = group_terms.prepare(sources)  # contract v3 (None: no group commits)
        stats.update(group_terms.stats(sources))
        table = group_terms.restate_rules(a.rules(configs, groups), gterms, configs, groups)
        # contract v3 rides on the same shuffle too (None: no group commits, or more groups than bits)
        gplan = groups_spark.prepare(gterms, sources.get("commits"), read_summary, configs, names.processes,
                                     names.topics)
        encoded = gplan.reads(self.spark, names.encode(r)) if gplan else names.encode(r)
        flagged, cached = self._flagged(names.encode(w), encoded, table, names, plan, gplan)
        if gterms is not None and gplan is None:  # past MAX_GROUPS groups: its own shuffles, in the one job
            flagged = flagged.unionByName(
                groups_spark_general.instances(self.spark, r, sources["commits"], configs, table))
        # Few partitions: the union has one set per branch, and each later look-up scans them all.
        flagged = flagged.coalesce(self.spark.sparkContext.defaultParallelism).persist(CACHE_LEVEL)
        cached.append(flagged)
        try:
            # One job computes every instance (and caches them) and returns only the counts.
            totals = _totals(flagged)
            if sum(n for n, _ in totals.values()) <= SMALL_INSTANCES:
                # Usually the instances are few: fetch them all and pick the examples here.
                instances = top_from_arrow(flagged.toArrow())
            else:
                instances = _top_in_spark(flagged, totals)
        finally:
            for frame in cached:
                frame.unpersist()
        if plan is not None and totals.get(txn_spark.MISSING_TXN, (0, 0))[0]:
            plan.raise_missing(sources)
        if totals.get(DUPLICATE_WRITE, (0, 0))[0]:
            value = instances[DUPLICATE_WRITE][0]["value"]
            raise HistoryError(f"{sources['writes'].path}: column 'value'", f"duplicate value {value!r}")
        counts = {name: totals.get(name, (0, 0))[0] for name in a.ANOMALIES}
        errors = {name: totals.get(name, (0, 0))[1] for name in a.ANOMALIES}
        return Analysis(stats=stats, counts=counts, errors=errors, instances=instances)

    def _check_rows(
        self, w: DataFrame, r: DataFrame, sources: dict[str, TableSource]
    ) -> tuple[dict[str, int], list[str], Names, RowSummary]:
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
        return stats, groups, names, rs

    def _flagged(
        self, w: DataFrame, r: DataFrame, table: dict[str, Rule], names: Names, plan: txn_spark.Plan | None,
        gplan: groups_spark.Plan | None,
    ) -> tuple[DataFrame, list[DataFrame]]:
        """Every anomaly instance (plus duplicate writes), and the DataFrames cached for it.

        ``w`` and ``r`` carry process and topic ids; instances get the names back. With a
        contract v2 ``plan``, they carry its columns too, and its anomalies join the instances; the
        same with a contract v3 ``gplan``.
        """
        parts = int(self.spark.conf.get("spark.sql.shuffle.partitions") or "8")
        v2, v3 = plan is not None, gplan is not None
        facts = q.value_position_facts(w, r, parts, v2, v3).persist(CACHE_LEVEL)
        values = q.value_facts(facts, v2, v3).persist(CACHE_LEVEL)
        positions = (
            facts.filter(F.col("topic").isNotNull())
            .groupBy(*q.POS)
            .agg(F.count(F.lit(1)).alias("n_values"), F.bit_or("mask").alias("pmask"),
                 *([F.bit_or("glive").alias("glive")] if v3 else []))
            .select(*q.POS, "n_values", q.has_bits(F.col("pmask"), q.FINAL_BITS).alias("has_final"),
                    *([q.has_bits(F.col("pmask"), q.RC_FINAL_BIT).alias("has_frc")] if v2 else []),
                    *(["glive"] if v3 else []))
            .persist(CACHE_LEVEL)
        )
        # contract v3: the live reads' one shuffle and sort serve rewound and redelivered too (Plan.polls)
        polls = (gplan.polls(self.spark, r, values, parts) if gplan else q.odd_polls(r)).persist(CACHE_LEVEL)
        odd_polls = gplan.odd_pairs(polls) if gplan else polls
        restated = plan is not None and plan.terms.has_transactions
        found = {
            a.DIVERGENCE: positions.filter(F.col("n_values") >= 2),
            a.REORDERED: q.reordered(values),
            **q.poll_anomalies(odd_polls, positions, restated),
        }
        decoded = names.decode(values)
        frames = [q.value_instances(decoded, table, plan.conditions() if plan else None)]
        frames += [_instances(frame, name, table[name], names) for name, frame in found.items()]
        if plan is not None:
            frames += plan.frames(self.spark, decoded, facts, table, names.topics)
        if gplan is not None:
            frames += gplan.frames(self.spark, values, facts, positions, polls, table)
        dup = values.filter(F.col("n_writes") > 1)
        frames.append(_instances(dup, DUPLICATE_WRITE, Rule("error"), names))
        return reduce(DataFrame.unionByName, frames), [facts, values, positions, polls]

    def evidence(self, values: Collection[str], positions: Collection[Position]) -> Evidence:
        assert self.writes is not None and self.reads is not None, "evidence() before analyse()"
        if all(self.sources[t].format == "parquet" for t in ("writes", "reads")):
            # A streaming pyarrow pass picks the few rows with no Spark job (two full scans in Spark).
            return Evidence(*(pick_rows(self.sources[t], TABLES[t], values, positions) for t in ("writes", "reads")))

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
