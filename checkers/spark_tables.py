"""Read `writes` and `reads` into Spark and check their rows there.

Parquet is read directly (every column cast to the contract's type: long or
string; absent optional columns as null); JSONL with an explicit schema,
after checkers.tables has validated it line by line. Row checks (nulls in
non-nullable columns, values outside a domain) run as Spark aggregations so
no single process has to hold a table; the same pass yields the stats. Parquet
tables are summarized by a streaming pyarrow pass instead (checkers.parquet).
"""

from __future__ import annotations

from functools import reduce
from typing import Any
from urllib.parse import unquote, urlparse

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from checkers.errors import HistoryError
from checkers.parquet import RowSummary, null_free_columns
from checkers.parquet import summarize as summarize_parquet
from checkers.schema import TABLES, Column, TableSpec
from checkers.sources import TableSource


def spark_type(col: Column) -> T.DataType:
    """The column's canonical type (checkers.schema.read_type) in Spark: long or string."""
    return T.LongType() if col.kind == "int" else T.StringType()


def spark_schema(spec: TableSpec) -> T.StructType:
    """The explicit schema of a table, every column nullable (the row checks enforce the rest)."""
    return T.StructType([T.StructField(c.name, spark_type(c), True) for c in spec.columns])


def read_table(spark: SparkSession, source: TableSource) -> DataFrame:
    """The table as a DataFrame with exactly the spec's columns and types."""
    spec = TABLES[source.table]
    if source.format == "jsonl":
        return spark.read.schema(spark_schema(spec)).option("mode", "FAILFAST").json(str(source.path))
    frame = spark.read.option("mergeSchema", str(len(source.files) > 1).lower()).parquet(
        *[str(f) for f in source.files]
    )
    present = set(frame.columns)
    return frame.select(
        *[
            (F.col(f"`{c.name}`") if c.name in present else F.lit(None))
            .cast(spark_type(c))
            .alias(c.name)
            for c in spec.columns
        ]
    )


def bad_row(spec: TableSpec, source: TableSource | None = None) -> SparkColumn:
    """True for a row breaking a non-null or domain rule of ``spec``.

    With ``source``, rules already proven are left out: a JSONL table was
    validated line by line; a Parquet column whose footers count no null
    cannot hold one (so the check need not read it).
    """
    if source is not None and source.format == "jsonl":
        return F.lit(False)
    proven = null_free_columns(source, spec) if source is not None else set()
    checks = [F.col(c.name).isNull() for c in spec.columns if not c.nullable and c.name not in proven]
    checks += [~F.col(name).isin(*allowed) | F.col(name).isNull() for name, allowed in spec.domains.items()]
    return reduce(lambda x, y: x | y, checks)


def raise_bad_row(frame: DataFrame, spec: TableSpec, source: TableSource) -> None:
    """Name the first bad row's file, column and problem (called only when one exists)."""
    row = frame.filter(bad_row(spec)).withColumn("_file", F.input_file_name()).limit(1).collect()[0]
    where = _local_path(row["_file"]) or str(source.path)
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


def _local_path(uri: str | None) -> str | None:
    if not uri:
        return None
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else uri


def _identify(row: Any) -> str:
    fields = row.asDict()
    keys = [k for k in ("process", "op_id", "seq", "value") if fields.get(k) is not None]
    return "the row with " + ", ".join(f"{k}={fields[k]!r}" for k in keys) if keys else "a row"


def summarize(frame: DataFrame, spec: TableSpec, source: TableSource) -> RowSummary:
    """Counts, names and the row rules of a table (see checkers.parquet.summarize).

    Parquet is summarized by pyarrow, streaming a few columns: a fraction of what a Spark
    job costs. JSONL (validated line by line already) by one Spark aggregation.
    """
    if source.format == "parquet":
        return summarize_parquet(source, spec)
    (domain,) = spec.domains
    allowed = spec.domains[domain]
    has_group = any(c.name == "group" for c in spec.columns)
    rows = (
        frame.groupBy("process", "topic")
        .agg(
            F.count(F.lit(1)).alias("rows"),
            *[F.sum((F.col(domain) == v).cast("long")).alias(v) for v in allowed],
            (F.max(F.col("group").isNotNull()) if has_group else F.lit(False)).alias("in_group"),
            # the reads' domain is `phase`: group members are the processes of live group reads
            (F.collect_set(F.when(F.col(domain) == "live", F.col("group"))) if has_group
             else F.array().cast("array<string>")).alias("groups"),
            F.sum(bad_row(spec, source).cast("long")).alias("bad"),
        )
        .collect()
    )
    out = RowSummary(rows=sum(int(r["rows"]) for r in rows), bad=any(r["bad"] for r in rows))
    out.counts.update({v: sum(int(r[v] or 0) for r in rows) for v in allowed})
    out.processes = {r["process"] for r in rows}
    out.topics = {r["topic"] for r in rows}
    out.grouped = {r["process"] for r in rows if r["in_group"]}
    out.members = {(g, r["process"]) for r in rows for g in r["groups"]}
    for r in rows:
        out.by_process.update({(r["process"], v): int(r[v] or 0) for v in allowed if r[v]})
    return out
