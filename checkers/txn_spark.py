"""Contract v2 in the Spark engine: the restated v1 anomalies and the six new ones as DataFrame operations.

spec/history.md, "Transactions and exactly-once (contract v2)"; checkers.txn_pandas is the reference
these queries are tested against. They ride on the v1 plan (checkers.spark_engine) rather than
beside it: `prepare` returns None for a history with no transaction and no `source` value (no v2
work at all); otherwise a `Plan` whose `writes` gives each write its transaction (id, status, intent
and end: one broadcast join with `transactions`) and whose `reads` flags the reads of read_committed
processes, so the v1 engine's one shuffle by value and its per-value facts carry what v2 needs (in F
by a read_committed process or not, the first read_committed poll, the write's transaction, whether
it has a `source`). The restated v1 anomalies and the
per-value v2 ones are then conditions on that one per-value table (`conditions`), poll-skip is
restated inside the v1 poll query, and `frames` adds torn-transaction, reprocessed and
skipped-input, all lazy, in the engine's one job. A `writes.txn` without its `transactions` row is
found in the same job and named afterwards (`raise_missing`, one small job only then). The
read_committed final reads are counted by the row-check pass, not by a job. Must never: use a Python
UDF or collect more than a row.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import pyarrow.parquet as pq
from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from checkers import anomalies as a
from checkers import spark_queries as q
from checkers import txn_terms
from checkers.classify import ClientConfig, Rule
from checkers.parquet import RowSummary
from checkers.sources import TableSource
from checkers.spark_tables import read_table
from checkers.txn_terms import Terms

POS = ["topic", "partition", "offset"]
MISSING_TXN = "_missing-txn"  # an instance per value whose `writes.txn` has no `transactions` row
BROADCAST_ROWS = 5_000_000  # up to this many transactions (or sourced writes), they are broadcast (no shuffle)


def _flag(cond: SparkColumn) -> SparkColumn:
    return F.coalesce(cond, F.lit(False))


@dataclass(frozen=True)
class Plan:
    """A history's v2 terms and what the Spark engine needs of them (see the module docstring)."""

    terms: Terms
    t: DataFrame | None  # the transactions table (None: the history has none)
    w: DataFrame  # `writes` as read (its `source` column)
    n_rc_final: int  # final reads by read_committed processes
    n_sourced: int | None = None  # writes with a `source` (from Parquet footers; None: not known)

    @property
    def use_frc(self) -> bool:
        """O is Frc when some read_committed process read the final log, else F."""
        return self.n_rc_final > 0

    def stats(self) -> dict[str, int]:
        return txn_terms.stats(self.terms, self.n_rc_final)

    def reads(self, r: DataFrame) -> DataFrame:
        """``r`` with ``rc``: 1 for a read by a read_committed process."""
        rc = sorted(self.terms.read_committed)
        return r.withColumn("rc", (F.col("process").isin(*rc) if rc else F.lit(False)).cast("int"))

    @cached_property
    def _ids(self) -> DataFrame | None:
        """The transactions as integers: w_txn_id (an id per row), its status id, intent abort and end_ns."""
        if self.t is None:
            return None
        tx = self.t.select("txn", F.monotonically_increasing_id().alias("w_txn_id"),
                           q.status_id(F.col("status")).alias("w_tstatus"),
                           (F.col("intent") == "abort").cast("int").alias("w_abort"), F.col("end_ns").alias("w_end_ns"))
        rows = self.terms.transactions.num_rows if self.terms.transactions is not None else 0
        return F.broadcast(tx) if rows <= BROADCAST_ROWS else tx

    def writes(self, w: DataFrame) -> DataFrame:
        """``w`` with its transaction: w_txn_id (its id, -1 for a `txn` without a `transactions` row, null for
        none), w_tstatus (status id), w_abort and w_end_ns (null without a row).

        The shuffle carries them packed (spark_queries.value_position_facts), so the per-value rows need no
        second join with the transactions.
        """
        tx = self._ids
        in_txn = F.col("txn").isNotNull()
        if tx is None:
            nulls = {"w_tstatus": F.lit(None).cast("int"), "w_abort": F.lit(None).cast("int"),
                     "w_end_ns": F.lit(None).cast("long")}
            return w.withColumns({"w_txn_id": F.when(in_txn, F.lit(-1)).cast("long"), **nulls})
        joined = w.join(tx.withColumnRenamed("w_txn_id", "_id"), "txn", "left")
        return joined.withColumn("w_txn_id", F.when(in_txn, F.coalesce(F.col("_id"), F.lit(-1))).cast("long"))

    def conditions(self) -> dict[str, SparkColumn]:
        """The per-value anomalies on a row of spark_queries.value_facts(v2=True): v1's, restated with transactions."""
        conditions = q.value_conditions()
        if not self.terms.has_transactions:
            return conditions
        in_txn = F.col("w_txn_id").isNotNull()
        status, tstatus = F.col("status"), F.col("w_tstatus")
        is_w = q.seen(q.WRITE_BIT)
        acked = is_w & _flag((~in_txn & (status == "ok")) | (in_txn & (tstatus == q.STATUS_IDS["ok"])))
        aborted = _flag(in_txn & (tstatus == q.STATUS_IDS["fail"]))
        unknown = is_w & _flag((~in_txn & (status == "info")) | (in_txn & (tstatus == q.STATUS_IDS["info"])))
        in_f = F.coalesce(F.col("n_fpos"), F.lit(0)) > 0
        rc_poll = F.col("rc_poll")
        early = _flag((F.col("w_abort") == 1) | F.col("w_end_ns").isNull() | (F.col("w_end_ns") > rc_poll))
        conditions |= {
            a.LOST: acked & ~in_f,
            a.VANISHED_READ: q.seen(q.LIVE_BITS) & ~in_f & ~aborted,
            a.RECOVERED: unknown & F.when(in_txn, q.seen(q.RC_FINAL_BIT)).otherwise(in_f),
            a.ABORTED_READ: aborted & rc_poll.isNotNull(),
            a.UNCOMMITTED_READ: is_w & in_txn & rc_poll.isNotNull() & early,
        }
        if self.use_frc:
            conditions[a.UNREADABLE] = acked & q.seen(q.UC_FINAL_BIT) & ~q.seen(q.RC_FINAL_BIT)
        return conditions

    def frames(self, spark: SparkSession, values: DataFrame, facts: DataFrame, table: dict[str, Rule],
               topics: tuple[str, ...]) -> list[DataFrame]:
        """torn-transaction, reprocessed, skipped-input and MISSING_TXN instances.

        ``values`` is the engine's per-value table, names decoded; ``facts`` its per-(value, position)
        table with topic ids (``topics``: the names by id).
        """
        # Rare rows are found by a bare comparison with a literal: the cached table's per-batch statistics then
        # skip every batch without one, unread (a wrapped column, as in _has, cannot be checked against them).
        missing = values.filter(F.col("w_txn_id") == -1)
        frames = [q.as_instances(missing.select("value"), MISSING_TXN, Rule("error"))]
        if self.terms.has_transactions:
            frames.append(q.as_instances(_torn(values), a.TORN_TRANSACTION, table[a.TORN_TRANSACTION]))
        in_o = q.seen(q.RC_FINAL_BIT) if self.use_frc else F.coalesce(F.col("n_fpos"), F.lit(0)) > 0
        outputs = None
        # Few sourced writes (the Parquet footers count them): broadcast them, and the sources O names.
        few = self.n_sourced is not None and self.n_sourced <= BROADCAST_ROWS
        if self.terms.source_maybe or self.terms.consumed_high:
            sourced = self.w.filter(F.col("source").isNotNull()).select("value", "source")
            if few:
                sourced = F.broadcast(sourced)  # else the join would shuffle every value of O
            # Only the values whose write has a `source` (flagged in the big shuffle) meet the join.
            outputs = sourced.join(values.filter((F.col("vmask") >= q.SOURCED_BIT) & in_o).select("value", "process"), "value")
        if self.terms.source_maybe and outputs is not None:
            rule = table[a.REPROCESSED]
            frames.append(q.as_instances(_reprocessed(outputs, rule), a.REPROCESSED, rule))
        if self.terms.consumed_high and outputs is not None:
            o = facts.filter(q.any_bits(F.col("mask"), q.RC_FINAL_BIT if self.use_frc else q.FINAL_BITS))
            skipped = _skipped(spark, values, o, outputs, self.terms.consumed_high, topics, few)
            frames.append(q.as_instances(skipped, a.SKIPPED_INPUT, table[a.SKIPPED_INPUT]))
        return frames

    def raise_missing(self, sources: dict[str, TableSource]) -> None:
        """HistoryError naming the first (least) `writes.txn` without a `transactions` row."""
        txns = self.w.filter(F.col("txn").isNotNull()).select("txn")
        if self.t is not None:
            txns = txns.join(self.t.select("txn"), "txn", "left_anti")
        missing = txns.agg(F.min("txn").alias("txn")).collect()[0]["txn"]
        if missing is not None:
            raise txn_terms.missing_row(sources, missing)


def prepare(spark: SparkSession, w: DataFrame, sources: dict[str, TableSource], configs: dict[str, ClientConfig],
            reads: RowSummary) -> Plan | None:
    """The v2 plan of a history, or None when it needs no v2 work; ``reads`` is the reads' row-check summary."""
    terms = txn_terms.prepare(sources, configs)
    if terms is None:
        return None
    t = read_table(spark, sources["transactions"]) if terms.has_transactions else None
    n_rc_final = sum(n for (p, phase), n in reads.by_process.items() if phase == "final" and p in terms.read_committed)
    return Plan(terms=terms, t=t, w=w, n_rc_final=n_rc_final, n_sourced=_non_null(sources["writes"], "source"))


def _non_null(source: TableSource, column: str) -> int | None:
    """How many rows of a Parquet table hold ``column`` non-null, from the footers (None if they do not say)."""
    if source.format != "parquet":
        return None
    total = 0
    for path in source.files:
        meta = pq.ParquetFile(path).metadata
        names = [meta.schema.column(i).path for i in range(meta.num_columns)]
        if column not in names:
            continue
        for group in range(meta.num_row_groups):
            stats = meta.row_group(group).column(names.index(column)).statistics
            if stats is None or not stats.has_null_count:
                return None
            total += meta.row_group(group).num_rows - stats.null_count
    return total


def _torn(v: DataFrame) -> DataFrame:
    """Per transaction (status ok or info) with a value in Frc and an `ok` write not in it: the first missing.

    Only transactions with a missing write can be torn, and those are few (each is a lost write or
    a whole transaction the read_committed drain did not see): they are found first and broadcast,
    so only their values are shuffled by transaction, not every transactional write.
    """
    in_frc = q.seen(q.RC_FINAL_BIT)
    missing = (F.col("status") == "ok") & ~in_frc
    pool = v.filter(F.col("w_txn_id").isNotNull() & F.col("w_tstatus").isin(q.STATUS_IDS["ok"], q.STATUS_IDS["info"]))
    candidates = pool.filter(missing).select("w_txn_id").distinct()
    per_txn = (
        pool.join(F.broadcast(candidates), "w_txn_id", "left_semi")
        .groupBy("w_txn_id")
        .agg(
            F.min(F.when(in_frc, F.col("value"))).alias("prev_value"),
            F.min(F.when(missing, F.struct("value", "process", "invoke_ns"))).alias("first"),
        )
        .filter(F.col("prev_value").isNotNull())
    )
    return per_txn.select("first.value", "first.process", "first.invoke_ns", "prev_value")


def _reprocessed(outputs: DataFrame, rule: Rule) -> DataFrame:
    """Per source value named by two or more values of O: attributed to a strictly judged writer if any."""
    strict = q.error_expr(rule)
    return (
        outputs.groupBy("source")
        .agg(
            F.count(F.lit(1)).alias("n"),
            F.min("value").alias("prev_value"),
            F.coalesce(F.min(F.when(strict, F.col("process"))), F.min("process")).alias("process"),
        )
        .filter(F.col("n") >= 2)
        .select(F.col("source").alias("value"), "process", "prev_value")
    )


def _skipped(spark: SparkSession, v: DataFrame, o: DataFrame, outputs: DataFrame,
             high: dict[txn_terms.Partition, int], topics: tuple[str, ...], few_named: bool) -> DataFrame:
    """Values of O below the committed consumed offset of their partition, named as no O value's source.

    ``o``: O's (value, position) rows, topic ids (``topics``: the names by id), partitioned by value.
    Integer filters keep only the rows of consumed topics below their highest offset before the join
    with the limits. ``few_named``: the sources O names are few enough to broadcast, so the values
    below are neither shuffled nor sorted for the anti-join.
    """
    ids = {name: i for i, name in enumerate(topics)}
    rows = [(ids[t], p, off) for (t, p), off in sorted(high.items()) if t in ids]  # else no row of O is there
    limits = spark.createDataFrame(rows, "topic int, partition long, high long")
    consumed = sorted({topic for topic, _, _ in rows})
    near = F.col("topic").isin(*consumed) & (F.col("offset") < max(off for _, _, off in rows)) if rows else F.lit(False)
    below = (o.filter(near).join(F.broadcast(limits), ["topic", "partition"])
             .filter(F.col("offset") < F.col("high")).select("value"))
    named = outputs.select(F.col("source").alias("value"))
    skipped = below.join(F.broadcast(named) if few_named else named, "value", "left_anti")
    # Every value of O has its row in v (the writer's process and invoke_ns, null for a value nobody wrote), and
    # the skipped ones are few: broadcast them (a value at two positions below is named twice: a semi-join
    # keeps its one row), so v is not shuffled for the join.
    return v.join(F.broadcast(skipped), "value", "left_semi").select("value", "process", "invoke_ns")
