"""The Spark engine's anomaly queries: spec/history.md's rules as DataFrame operations.

Pure functions from DataFrames to DataFrames; checkers.spark_engine plans
them, caches the intermediate tables and runs the one job (its docstring
tells the shape of the plan). Must never: collect() or start a job, or
use a Python UDF.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from checkers import anomalies as a
from checkers.classify import Rule

INSTANCE_TYPES = {
    c: ("string" if c in ("value", "topic", "process", "prev_value", "group") else "long") for c in a.INSTANCE_COLUMNS
}
POS = ["topic", "partition", "offset"]
STATUS_IDS = {"ok": 0, "fail": 1, "info": 2}  # in id order: an id indexes the list of names
# A write's facts as the big shuffle and aggregations carry them: few fixed-width columns. w_who packs its
# status id, process id and topic id into one long (WHO_BITS: name, shift, width); in v2 its transaction's
# status id plus one (0: none) and whether it meant to abort too.
WRITE_FACTS = ("w_who", "w_op_id", "w_invoke_ns", "w_partition")
WHO_BITS = (("status", 0, 2), ("process", 2, 24), ("topic", 26, 24), ("tstatus", 50, 2), ("abort", 52, 1))
LONG_FACTS = ("w_who", "w_op_id", "w_invoke_ns", "w_txn_id")
# Kinds of row, each a bit: 1 a write, 2 a live read, 4 a final read; 8 and 16 the same by a read_committed
# process (v2), and 32 with the write's bit a write with a `source` (v2, a transformer's output). The
# (value, position) aggregation keeps which kinds it saw as one int (their bitwise or).
FINAL_BITS, LIVE_BITS, RC_FINAL_BIT, UC_FINAL_BIT = (1 << 2) | (1 << 4), (1 << 1) | (1 << 3), 1 << 4, 1 << 2
SOURCED_BIT = 1 << 5  # the highest: a value's mask is at least SOURCED_BIT exactly when its write has a source
WRITE_BIT = 1
GROUP_FACTS = ("glive", "n_glive", "fbelow")  # contract v3's columns of the (value, position) and per-value facts


def pack_who(fields: dict[str, SparkColumn]) -> SparkColumn:
    """WHO_BITS' fields (int columns, never null for a write; an absent one is 0) as one long."""
    return reduce(lambda x, y: x + y,
                  [fields[name].cast("long") * (1 << shift) for name, shift, _ in WHO_BITS if name in fields])


def unpack_who(who: SparkColumn) -> dict[str, SparkColumn]:
    """WHO_BITS' fields of a w_who column (null where it is null)."""
    return {name: F.shiftright(who, shift).bitwiseAND((1 << width) - 1).cast("int") for name, shift, width in WHO_BITS}


def status_id(status: SparkColumn) -> SparkColumn:
    """A status name's id (STATUS_IDS; null for another)."""
    ((first, first_id), *rest) = STATUS_IDS.items()
    return reduce(lambda acc, kv: acc.when(status == kv[0], kv[1]), rest, F.when(status == first, first_id))


def error_expr(rule: Rule, process: str = "process") -> SparkColumn:
    """Whether an instance of ``rule`` is an error, per row (by its process where the rule says so)."""
    if rule.kind != "by-process":
        return F.lit(rule.kind == "error")
    if not rule.info_processes:
        return F.lit(True)
    return F.col(process).isNull() | ~F.col(process).isin(*sorted(rule.info_processes))


def as_instances(frame: DataFrame, name: str, rule: Rule) -> DataFrame:
    """``frame`` as rows of the engine's instance DataFrame (anomaly, is_error, the instance columns: those it
    lacks null); judged by its process where it has one."""
    cols = [(F.col(c) if c in frame.columns else F.lit(None)).cast(INSTANCE_TYPES[c]).alias(c)
            for c in a.INSTANCE_COLUMNS]
    error = error_expr(rule) if "process" in frame.columns else F.lit(rule.kind != "info")
    return frame.select(F.lit(name).alias("anomaly"), error.alias("is_error"), *cols)


def any_bits(mask: SparkColumn, bits: int) -> SparkColumn:
    """Whether ``mask`` has any of ``bits`` (null where it is null)."""
    return mask.bitwiseAND(bits) != 0


def has_bits(mask: SparkColumn, bits: int) -> SparkColumn:
    """any_bits as an int: 1 or 0 (null where ``mask`` is null)."""
    return any_bits(mask, bits).cast("int")


def seen(bits: int) -> SparkColumn:
    """Whether a row of value_facts saw any kind of row in ``bits`` (its ``vmask``: every kind at the value)."""
    return any_bits(F.col("vmask"), bits)


def value_position_facts(w: DataFrame, r: DataFrame, parts: int, v2: bool = False, v3: bool = False) -> DataFrame:
    """One row per (value, position): ``mask``, the kinds of row seen there, and the value's write.

    Writes and reads are shuffled together, once, by value. A write's row sits at its
    acknowledged position (the edge its offset proves), or at a null position when it has
    none; its columns are carried as WRITE_FACTS (integers) so the aggregation stays a hash
    aggregation, and the kinds of row seen are one int of bits (FINAL_BITS: in F, LIVE_BITS: read
    live). With ``v2`` (contract v2), ``w`` carries its transaction (checkers.txn_spark.Plan.writes:
    w_txn_id, w_tstatus, w_abort, w_end_ns) and ``r`` an ``rc`` flag (read by a read_committed
    process, kinds 3 and 4): the mask tells F by a read_committed process or not (RC_FINAL_BIT,
    UC_FINAL_BIT) and a write with a `source` (SOURCED_BIT), and the rows add rc_poll (the first poll
    of a read_committed read), w_txn_id and w_end_ns. The shuffle carries rc_poll and w_end_ns in one
    column, at_ns (a read's poll, a write's transaction end), and the transaction's status and intent
    in w_who. With ``v3`` (contract v3, checkers.groups_spark.Plan.reads), ``r`` carries ``gbits``, a group
    read's group as one bit or a final read's groups whose committed offset lies above it, and the rows add
    GROUP_FACTS: the groups that read the value live there, how many live group reads, and the groups a
    final read there is below.
    """
    acked = (F.col("status") == "ok") & F.col("partition").isNotNull() & F.col("offset").isNotNull()
    status = status_id(F.col("status"))
    write_v2: list[SparkColumn | str] = ["w_txn_id", F.col("w_end_ns").alias("at_ns")]
    read_v2: list[SparkColumn | str] = [F.when(F.col("rc") == 1, F.col("poll_ns")).alias("at_ns")]
    who = {"status": status, "process": F.col("process"), "topic": F.col("topic")}
    if v2:
        who |= {"tstatus": F.coalesce(F.col("w_tstatus") + 1, F.lit(0)), "abort": F.coalesce(F.col("w_abort"), F.lit(0))}
    kind = F.when(F.col("phase") == "final", 4).otherwise(2)
    kind = kind * (1 + 3 * F.col("rc")) if v2 else kind
    writes = w.select(
        "value",
        *[F.when(acked, F.col(c)).alias(c) for c in POS],
        (1 + SOURCED_BIT * F.col("source").isNotNull().cast("int") if v2 else F.lit(1)).alias("kind"),
        pack_who(who).alias("w_who"),
        F.col("op_id").alias("w_op_id"),
        F.col("invoke_ns").alias("w_invoke_ns"),
        F.col("partition").cast("int").alias("w_partition"),
        *(write_v2 if v2 else []),
        *([F.lit(None).cast("long").alias("gbits")] if v3 else []),
    )
    reads = r.select(
        "value",
        *POS,
        kind.alias("kind"),
        *[
            F.lit(None).cast("long" if c in LONG_FACTS else "int").alias(c)
            for c in (*WRITE_FACTS, *(["w_txn_id"] if v2 else []))
        ],
        *(read_v2 if v2 else []),
        *(["gbits"] if v3 else []),
    )
    is_write = F.col("kind").bitwiseAND(1) == 1
    txn_aggs = [F.min(F.when(~is_write, F.col("at_ns"))).alias("rc_poll"), F.max("w_txn_id").alias("w_txn_id"),
                F.max(F.when(is_write, F.col("at_ns"))).alias("w_end_ns")]
    return (
        writes.unionByName(reads)
        .repartition(parts, "value")
        .groupBy("value", *POS)
        .agg(
            F.bit_or("kind").alias("mask"),
            F.sum(F.col("kind").bitwiseAND(1)).alias("n_writes"),
            *[F.max(c).alias(c) for c in WRITE_FACTS],
            *(txn_aggs if v2 else []),
            *(_group_aggs() if v3 else []),
        )
    )


def _group_aggs() -> list[SparkColumn]:
    live = any_bits(F.col("kind"), LIVE_BITS)
    return [F.bit_or(F.when(live, F.col("gbits"))).alias("glive"),
            F.sum(F.when(live & F.col("gbits").isNotNull(), 1)).alias("n_glive"),
            F.bit_or(F.when(any_bits(F.col("kind"), FINAL_BITS), F.col("gbits"))).alias("fbelow")]


def value_facts(facts: DataFrame, v2: bool = False, v3: bool = False) -> DataFrame:
    """Per value: its write (if any; ``n_writes`` of them) and where reads found it.

    ``facts`` is partitioned by value already, so this needs no shuffle. ``vmask`` is every kind of
    row seen at the value (``seen`` tests it: written, read live, in F, in F by a read_committed process
    or not, a write with a `source`). With ``v2``: rc_poll and the write's transaction: w_txn_id,
    w_tstatus (its status id), w_abort and w_end_ns. With ``v3``: GROUP_FACTS over the value's positions.
    """
    in_f = has_bits(F.col("mask"), FINAL_BITS)
    txn_aggs = [F.min("rc_poll").alias("rc_poll"), F.max("w_txn_id").alias("w_txn_id"),
                F.max("w_end_ns").alias("w_end_ns")]
    who = unpack_who(F.col("w_who"))
    txn_cols: list[SparkColumn | str] = [
        "rc_poll", "w_txn_id", "w_end_ns", F.when(who["tstatus"] > 0, who["tstatus"] - 1).alias("w_tstatus"),
        who["abort"].alias("w_abort")]
    return (
        facts.groupBy("value")
        .agg(
            F.bit_or("mask").alias("vmask"),
            F.sum(in_f).alias("n_fpos"),
            F.min(F.when(in_f == 1, F.col("offset"))).alias("placed"),
            F.sum("n_writes").alias("n_writes"),
            *[F.max(c).alias(c) for c in WRITE_FACTS],
            *(txn_aggs if v2 else []),
            *([F.bit_or(c).alias(c) if c != "n_glive" else F.sum(c).alias(c) for c in GROUP_FACTS] if v3 else []),
        )
        .select(
            "value",
            "vmask",
            "n_fpos",
            "placed",
            "n_writes",
            who["process"].alias("process"),
            F.col("w_op_id").alias("op_id"),
            F.get(F.array(*[F.lit(name) for name in STATUS_IDS]), who["status"]).alias("status"),
            F.col("w_invoke_ns").alias("invoke_ns"),
            who["topic"].alias("topic"),
            F.col("w_partition").alias("partition"),
            *(txn_cols if v2 else []),
            *(GROUP_FACTS if v3 else []),
        )
    )


def value_conditions() -> dict[str, SparkColumn]:
    """The per-value v1 anomalies, as conditions on a row of value_facts."""
    n_fpos = F.coalesce(F.col("n_fpos"), F.lit(0))
    in_reads = seen(FINAL_BITS | LIVE_BITS)
    status = F.col("status")
    return {
        a.LOST: (status == "ok") & (n_fpos == 0),
        a.DUPLICATE: n_fpos >= 2,
        a.PHANTOM: ~seen(WRITE_BIT) & in_reads,
        a.VANISHED_READ: seen(LIVE_BITS) & (n_fpos == 0),
        a.FAILED_PRESENT: (status == "fail") & in_reads,
        a.RECOVERED: (status == "info") & (n_fpos > 0),
    }


def value_instances(v: DataFrame, table: dict[str, Rule], conditions: dict[str, SparkColumn] | None = None
                    ) -> DataFrame:
    """The per-value anomalies in one pass: each row tagged with every anomaly it shows.

    ``conditions``: anomaly name to condition on a row of ``v`` (default: value_conditions()).
    """
    conditions = value_conditions() if conditions is None else conditions
    tags = F.array_compact(F.array(*[F.when(cond, F.lit(name)) for name, cond in conditions.items()]))
    # Most values show no anomaly: the conditions sieve them out before the tags are built and exploded.
    shows_any = reduce(lambda x, y: x | y, conditions.values())
    tagged = v.filter(shows_any).select("value", "process", "invoke_ns", F.explode(tags).alias("anomaly"))
    error = reduce(lambda acc, name: acc.when(F.col("anomaly") == name, error_expr(table[name])), conditions, F)
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


def reordered(v: DataFrame) -> DataFrame:
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


def live_polls(r: DataFrame, *more: SparkColumn) -> DataFrame:
    """The live reads with the columns odd_polls keeps (and ``rc``, contract v2, where ``r`` has it), and ``more``."""
    extra = ["rc"] if "rc" in r.columns else []  # contract v2: read by a read_committed process
    return r.filter(F.col("phase") == "live").select("process", *POS, "seq", "value", "poll_ns", *extra, *more)


def with_prev_polls(polls: DataFrame) -> DataFrame:
    """``polls`` with each read's predecessor in its process's poll order of its partition (``prev_offset``,
    ``prev_value``, ``prev_seq``, ``prev_poll_ns``; null for the first). Needs its rows clustered by (process,
    topic, partition) or by (topic, partition) (checkers.groups_spark.Plan.polls shuffles them so)."""
    order = Window.partitionBy("process", "topic", "partition").orderBy("seq", "offset", "value")
    return polls.select("*", *[F.lag(c).over(order).alias(f"prev_{c}") for c in ("offset", "value", "seq", "poll_ns")])


def odd_pair() -> SparkColumn:
    """Whether a row of with_prev_polls does not advance its predecessor by exactly one offset."""
    return F.col("prev_offset").isNotNull() & (F.col("offset") != F.col("prev_offset") + 1)


def odd_polls(r: DataFrame) -> DataFrame:
    """Adjacent live-read pairs that do not advance by exactly one offset (usually few)."""
    return with_prev_polls(live_polls(r)).filter(odd_pair())


def poll_anomalies(pairs: DataFrame, positions: DataFrame, restated: bool = False) -> dict[str, DataFrame]:
    """nonmonotonic-poll and poll-skip from odd_polls' pairs and the positions' has_final.

    ``restated`` (contract v2, a history with transactions): a read_committed process's gap
    (``rc`` 1) counts only a position read in F by a read_committed process (``has_frc``).
    """
    gaps = pairs.filter(F.col("offset") > F.col("prev_offset") + 1)
    # Does the final log hold an offset strictly inside a gap? Sort gaps and final positions
    # together per partition; the latest final offset before each gap's end must pass its start.
    held = (
        positions.filter(F.col("has_final") == 1)
        .select(*POS, *(["has_frc"] if restated else []))
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
    if restated:
        last_rc = F.max(F.when((F.col("ord") == 1) & (F.col("has_frc") == 1), F.col("offset"))).over(running)
        last_held = F.when(F.col("rc") == 1, last_rc).otherwise(last_held)
    skips = merged.withColumn("last_held", last_held).filter(
        (F.col("ord") == 0) & (F.col("last_held") > F.col("prev_offset"))
    )
    return {
        a.NONMONOTONIC_POLL: pairs.filter(F.col("offset") <= F.col("prev_offset")),
        a.POLL_SKIP: skips,
    }
