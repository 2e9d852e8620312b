"""Read `writes` and `reads` into Spark and check their rows there.

Parquet is read directly (every column cast to the contract's type: long or
string; absent optional columns as null); JSONL with an explicit schema,
after checkers.tables has validated it line by line. Row checks (nulls in
non-nullable columns, values outside a domain) run as Spark aggregations so
no single process has to hold a table; the same pass yields the stats.
"""

from __future__ import annotations

from functools import reduce
from typing import Any

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from checkers.errors import HistoryError
from checkers.schema import READS, WRITES, TableSpec
from checkers.sources import TableSource

SPARK_TYPES: dict[str, T.DataType] = {"string": T.StringType(), "int": T.LongType()}


def spark_schema(spec: TableSpec) -> T.StructType:
    """The explicit schema of a table (string and int columns only)."""
    return T.StructType([T.StructField(c.name, SPARK_TYPES[c.kind], True) for c in spec.columns])


def read_table(spark: SparkSession, source: TableSource) -> DataFrame:
    """The table as a DataFrame with exactly the spec's columns and types."""
    spec = {"writes": WRITES, "reads": READS}[source.table]
    if source.format == "jsonl":
        return spark.read.schema(spark_schema(spec)).option("mode", "FAILFAST").json(str(source.path))
    frame = spark.read.option("mergeSchema", str(len(source.files) > 1).lower()).parquet(
        *[str(f) for f in source.files]
    )
    present = set(frame.columns)
    return frame.select(
        *[
            (F.col(f"`{c.name}`") if c.name in present else F.lit(None))
            .cast(SPARK_TYPES[c.kind])
            .alias(c.name)
            for c in spec.columns
        ]
    )


def bad_row(spec: TableSpec) -> SparkColumn:
    """True for a row breaking a non-null or domain rule of ``spec``."""
    checks = [F.col(c.name).isNull() for c in spec.columns if not c.nullable]
    checks += [~F.col(name).isin(*allowed) for name, allowed in spec.domains.items()]
    return reduce(lambda x, y: x | y, checks)


def raise_bad_row(frame: DataFrame, spec: TableSpec, source: TableSource) -> None:
    """Name the first bad row's file, column and problem (called only when one exists)."""
    row = frame.filter(bad_row(spec)).withColumn("_file", F.input_file_name()).limit(1).collect()[0]
    where = row["_file"] or str(source.path)
    for col in spec.columns:
        if not col.nullable and row[col.name] is None:
            raise HistoryError(f"{where}: column '{col.name}'", f"is null ({_identify(row)})")
    for name, allowed in spec.domains.items():
        if row[name] not in allowed:
            raise HistoryError(
                f"{where}: column '{name}'",
                f"{row[name]!r} is not one of {', '.join(allowed)} ({_identify(row)})",
            )
    raise HistoryError(where, "a row breaks the contract")


def _identify(row: Any) -> str:
    keys = [k for k in ("process", "op_id", "seq", "value") if row[k] is not None]
    return "the row with " + ", ".join(f"{k}={row[k]!r}" for k in keys) if keys else "a row"


def writes_summary(writes: DataFrame) -> dict[str, int]:
    """Counts by status and of bad rows, in one pass."""
    row = writes.agg(
        F.count(F.lit(1)).alias("writes"),
        *[F.sum((F.col("status") == s).cast("long")).alias(s) for s in ("ok", "fail", "info")],
        F.sum(bad_row(WRITES).cast("long")).alias("bad"),
    ).collect()[0]
    return {k: int(row[k] or 0) for k in ("writes", "ok", "fail", "info", "bad")}


def reads_summary(reads: DataFrame) -> tuple[dict[str, int], list[str]]:
    """Counts by phase and of bad rows, and the group consumers, in one pass."""
    rows = (
        reads.groupBy("process")
        .agg(
            F.count(F.lit(1)).alias("reads"),
            F.sum((F.col("phase") == "live").cast("long")).alias("live_reads"),
            F.sum((F.col("phase") == "final").cast("long")).alias("final_reads"),
            F.max(F.col("group").isNotNull()).alias("in_group"),
            F.sum(bad_row(READS).cast("long")).alias("bad"),
        )
        .collect()
    )
    totals = {k: sum(int(r[k] or 0) for r in rows) for k in ("reads", "live_reads", "final_reads", "bad")}
    groups = sorted(r["process"] for r in rows if r["in_group"] and r["process"] is not None)
    return totals, groups
