"""Contract v2 in the Spark engine: the restated v1 anomalies and the six new ones as DataFrame operations.

spec/history.md, "Transactions and exactly-once (contract v2)"; checkers.txn_pandas is the
reference these queries are tested against. checkers.spark_engine makes one call, `amend`, with
its instance DataFrame before it runs its one job: for a history with no transaction and no
`source` value it returns that DataFrame untouched (no v2 work at all). Otherwise it validates
`writes.txn` against `transactions` (one small job), counts the final reads of read_committed
processes (one job), and returns the instances with the restated v1 anomalies replaced and the
new ones added, all still lazy. Must never: use a Python UDF or collect more than a row.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from checkers import anomalies as a
from checkers import spark_queries as q
from checkers import txn_terms
from checkers.classify import ClientConfig, Rule
from checkers.sources import TableSource
from checkers.spark_tables import read_table
from checkers.txn_terms import Terms

POS = ["topic", "partition", "offset"]


def _as_instances(frame: DataFrame, name: str, rule: Rule) -> DataFrame:
    """``frame`` as rows of the engine's instance DataFrame (anomaly, is_error, the instance columns)."""
    cols = [
        (F.col(c) if c in frame.columns else F.lit(None)).cast(q.INSTANCE_TYPES[c]).alias(c)
        for c in a.INSTANCE_COLUMNS
    ]
    error = q.error_expr(rule) if "process" in frame.columns else F.lit(rule.kind != "info")
    return frame.select(F.lit(name).alias("anomaly"), error.alias("is_error"), *cols)


def _flag(cond: SparkColumn) -> SparkColumn:
    return F.coalesce(cond, F.lit(False))


def amend(spark: SparkSession, flagged: DataFrame, w: DataFrame, r: DataFrame, sources: dict[str, TableSource],
          configs: dict[str, ClientConfig], table: dict[str, Rule]) -> tuple[DataFrame, dict[str, int]]:
    """The instances judged by contract v2, and the transaction stats (see the module docstring)."""
    terms = txn_terms.prepare(sources, configs)
    if terms is None:
        return flagged, txn_terms.stats(None)
    t = read_table(spark, sources["transactions"]) if terms.has_transactions else None
    if terms.txn_maybe:
        _check_txn_rows(w, t, sources)
    rc = F.col("process").isin(*sorted(terms.read_committed)) if terms.read_committed else F.lit(False)
    final = F.col("phase") == "final"
    n_rc_final = r.filter(final & rc).count()
    frames = _anomalies(spark, terms, t, w, r, rc, n_rc_final > 0, table)
    if terms.has_transactions:
        flagged = flagged.filter(~F.col("anomaly").isin(*a.RESTATED))
    return reduce(DataFrame.unionByName, frames, flagged), txn_terms.stats(terms, n_rc_final)


def _check_txn_rows(w: DataFrame, t: DataFrame | None, sources: dict[str, TableSource]) -> None:
    """HistoryError naming the first (least) `writes.txn` without a `transactions` row."""
    txns = w.filter(F.col("txn").isNotNull()).select("txn")
    if t is not None:
        txns = txns.join(t.select("txn"), "txn", "left_anti")
    missing = txns.agg(F.min("txn").alias("txn")).collect()[0]["txn"]
    if missing is not None:
        raise txn_terms.missing_row(sources, missing)


def _anomalies(spark: SparkSession, terms: Terms, t: DataFrame | None, w: DataFrame, r: DataFrame,
               rc: SparkColumn, use_frc: bool, table: dict[str, Rule]) -> list[DataFrame]:
    final, live = F.col("phase") == "final", F.col("phase") == "live"
    seen = r.groupBy("value").agg(
        F.max(final.cast("int")).alias("in_f"),
        F.max((final & rc).cast("int")).alias("in_frc"),
        F.max((final & ~rc).cast("int")).alias("in_fru"),
        F.max(live.cast("int")).alias("in_live"),
        F.min(F.when(rc, F.col("poll_ns"))).alias("rc_poll"),
    )
    writes = w.select("value", "process", "invoke_ns", "status", "txn", "source", F.lit(True).alias("is_w"))
    if t is not None:
        writes = writes.join(t.select("txn", F.col("status").alias("tstatus"), "intent", "end_ns"), "txn", "left")
    else:
        writes = writes.withColumns({"tstatus": F.lit(None).cast("string"), "intent": F.lit(None).cast("string"),
                                     "end_ns": F.lit(None).cast("long")})
    v = writes.join(seen, "value", "full_outer").withColumn(
        "in_o", F.coalesce(F.col("in_frc" if use_frc else "in_f"), F.lit(0)) == 1
    )
    frames = []
    if terms.has_transactions:
        frames += _value_anomalies(v, use_frc, table)
        frames.append(_as_instances(_torn(v), a.TORN_TRANSACTION, table[a.TORN_TRANSACTION]))
        frames.append(_as_instances(_poll_skips(r, rc), a.POLL_SKIP, table[a.POLL_SKIP]))
    if terms.source_maybe:
        frames.append(_as_instances(_reprocessed(v, table[a.REPROCESSED]), a.REPROCESSED, table[a.REPROCESSED]))
    if terms.consumed_high:
        o = r.filter(final & rc) if use_frc else r.filter(final)
        frames.append(_as_instances(_skipped(spark, v, o, terms.consumed_high), a.SKIPPED_INPUT,
                                    table[a.SKIPPED_INPUT]))
    return frames


def _value_anomalies(v: DataFrame, use_frc: bool, table: dict[str, Rule]) -> list[DataFrame]:
    in_txn = F.col("txn").isNotNull()
    status, tstatus = F.col("status"), F.col("tstatus")
    is_w = _flag(F.col("is_w"))
    acked = is_w & _flag((~in_txn & (status == "ok")) | (in_txn & (tstatus == "ok")))
    aborted = _flag(in_txn & (tstatus == "fail"))
    unknown = is_w & _flag((~in_txn & (status == "info")) | (in_txn & (tstatus == "info")))

    def has(col: str) -> SparkColumn:
        return F.coalesce(F.col(col), F.lit(0)) == 1

    early = _flag((F.col("intent") == "abort") | F.col("end_ns").isNull() | (F.col("end_ns") > F.col("rc_poll")))
    conditions = {
        a.LOST: acked & ~has("in_f"),
        a.VANISHED_READ: has("in_live") & ~has("in_f") & ~aborted,
        a.RECOVERED: unknown & F.when(in_txn, has("in_frc")).otherwise(has("in_f")),
        a.ABORTED_READ: aborted & F.col("rc_poll").isNotNull(),
        a.UNCOMMITTED_READ: is_w & in_txn & F.col("rc_poll").isNotNull() & early,
    }
    if use_frc:
        conditions[a.UNREADABLE] = acked & has("in_fru") & ~has("in_frc")
    # One pass over the values: each row tagged with every anomaly it shows (as spark_queries.value_instances).
    tags = F.array_compact(F.array(*[F.when(cond, F.lit(name)) for name, cond in conditions.items()]))
    tagged = v.select("value", "process", "invoke_ns", F.explode(tags).alias("anomaly"))
    error = reduce(lambda acc, name: acc.when(F.col("anomaly") == name, q.error_expr(table[name])),
                   list(conditions), F)
    process = F.when(F.col("anomaly") == a.VANISHED_READ, F.lit(None)).otherwise(F.col("process"))
    cols = [(F.col(c) if c in ("value", "invoke_ns") else process if c == "process" else F.lit(None))
            .cast(q.INSTANCE_TYPES[c]).alias(c) for c in a.INSTANCE_COLUMNS]
    return [tagged.select("anomaly", error.alias("is_error"), *cols)]


def _torn(v: DataFrame) -> DataFrame:
    """Per transaction (status ok or info) with a value in Frc and an `ok` write not in it: the first missing."""
    in_frc = F.coalesce(F.col("in_frc"), F.lit(0)) == 1
    missing = (F.col("status") == "ok") & ~in_frc
    per_txn = (
        v.filter(F.col("txn").isNotNull() & F.col("tstatus").isin("ok", "info"))
        .groupBy("txn")
        .agg(
            F.min(F.when(in_frc, F.col("value"))).alias("prev_value"),
            F.min(F.when(missing, F.struct("value", "process", "invoke_ns"))).alias("first"),
        )
        .filter(F.col("prev_value").isNotNull() & F.col("first").isNotNull())
    )
    return per_txn.select("first.value", "first.process", "first.invoke_ns", "prev_value")


def _poll_skips(r: DataFrame, rc: SparkColumn) -> DataFrame:
    """poll-skip, restated: a read_committed process's gap counts only a record of Frc inside it."""
    final = r.filter(F.col("phase") == "final")

    def held(frame: DataFrame) -> DataFrame:
        return frame.select(*POS).distinct().withColumn("has_final", F.lit(1))

    committed = q.poll_anomalies(q.odd_polls(r.filter(rc)), held(final.filter(rc)))[a.POLL_SKIP]
    others = q.poll_anomalies(q.odd_polls(r.filter(~rc)), held(final))[a.POLL_SKIP]
    return committed.unionByName(others)


def _reprocessed(v: DataFrame, rule: Rule) -> DataFrame:
    """Per source value named by two or more values of O: attributed to a strictly judged writer if any."""
    strict = q.error_expr(rule)
    return (
        v.filter(F.col("source").isNotNull() & F.col("in_o"))
        .groupBy("source")
        .agg(
            F.count(F.lit(1)).alias("n"),
            F.min("value").alias("prev_value"),
            F.coalesce(F.min(F.when(strict, F.col("process"))), F.min("process")).alias("process"),
        )
        .filter(F.col("n") >= 2)
        .select(F.col("source").alias("value"), "process", "prev_value")
    )


def _skipped(spark: SparkSession, v: DataFrame, o: DataFrame, high: dict[txn_terms.Partition, int]) -> DataFrame:
    """Values of O below the committed consumed offset of their partition, named as no O value's source."""
    limits = spark.createDataFrame([(tp[0], tp[1], off) for tp, off in sorted(high.items())],
                                   "topic string, partition long, high long")
    below = o.join(F.broadcast(limits), ["topic", "partition"]).filter(F.col("offset") < F.col("high"))
    named = v.filter(F.col("source").isNotNull() & F.col("in_o")).select(F.col("source").alias("value"))
    values = below.select("value").distinct().join(named, "value", "left_anti")
    return values.join(v.filter(F.col("is_w")).select("value", "process", "invoke_ns"), "value", "left")
