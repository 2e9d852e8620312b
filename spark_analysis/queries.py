"""The notebook's questions as Spark queries over the lake; each returns the small pandas table behind a plot.

Every query starts from `table(...)`, which reads `<lake>/<table>` and applies the
notebook's filters (scenarios, first day) to the partition columns, so Spark reads
only the folders asked for. The aggregation runs in Spark; only its result comes
back to the driver.
Must never: read anything but the lake, or write anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

from checkers.anomalies import ANOMALIES, REGISTRY
from checkers.verdict import RUN_OUTCOMES
from spark_analysis.lake_tables import PARTITION_COLUMNS, TABLES, count_column


@dataclass(frozen=True)
class Filters:
    """What the notebook looks at: scenarios (empty: all) and runs from `since` (YYYY-MM-DD, empty: all)."""

    scenarios: tuple[str, ...] = ()
    since: str = ""


def table(spark: SparkSession, lake: str | Path, name: str, filters: Filters = Filters()) -> DataFrame:
    """`<lake>/<name>` with the filters applied to its partition columns (kept as text: "day" is not a date)."""
    spark.conf.set("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
    frame = spark.read.parquet(str(Path(lake).resolve() / name))
    if filters.scenarios:
        frame = frame.filter(F.col("scenario").isin(list(filters.scenarios)))
    if filters.since:
        frame = frame.filter(F.col("day") >= filters.since)
    return frame


OUTCOME_COLUMNS = {o: o.lower() for o in RUN_OUTCOMES}  # pass, fail, error, inconclusive: each run outcome's count


def _count_if(condition: F.Column) -> F.Column:
    return F.sum(F.when(condition, 1).otherwise(0))


def _outcome_counts() -> list[F.Column]:
    """A count per run outcome (OUTCOME_COLUMNS): every tally of the lake's outcomes shows all of them."""
    return [_count_if(F.col("outcome") == o).alias(column) for o, column in OUTCOME_COLUMNS.items()]


def overview(runs: DataFrame) -> pd.DataFrame:
    """Per scenario and configuration: runs, first and last start, verdicts and outcomes."""
    return (runs.groupBy("scenario", "configuration")
            .agg(F.count("*").alias("runs"), F.min("started_at").alias("first"), F.max("started_at").alias("last"),
                 _count_if(F.col("valid") == "true").alias("valid"), _count_if(F.col("valid") == "false").alias("invalid"),
                 _count_if(F.col("valid") == "unknown").alias("unknown"), *_outcome_counts(),
                 *(F.sum(count_column(a)).alias(count_column(a)) for a in ANOMALIES))
            .orderBy("scenario", "configuration").toPandas())


def loss_by_acks_and_fault(runs: DataFrame) -> pd.DataFrame:
    """How often, and how much, each acks setting lost or diverged under each set of fault kinds."""
    return (runs.groupBy("acks", "faults")
            .agg(F.count("*").alias("runs"), _count_if(F.col("lost") > 0).alias("runs_with_loss"),
                 F.sum("lost").alias("lost_total"), F.round(F.avg("lost"), 1).alias("lost_mean"),
                 F.max("lost").alias("lost_max"), _count_if(F.col("divergence") > 0).alias("runs_with_divergence"),
                 F.sum("divergence").alias("divergence_total"))
            .orderBy("faults", "acks").toPandas())


def duplicates_by_settings(runs: DataFrame) -> pd.DataFrame:
    """Duplicates by idempotence, retries and requests in flight."""
    return (runs.groupBy("enable_idempotence", "retries", "max_in_flight")
            .agg(F.count("*").alias("runs"), _count_if(F.col("duplicate") > 0).alias("runs_with_duplicates"),
                 F.sum("duplicate").alias("duplicate_total"), F.round(F.avg("duplicate"), 1).alias("duplicate_mean"),
                 F.max("duplicate").alias("duplicate_max"))
            .orderBy("enable_idempotence", "retries", "max_in_flight").toPandas())


def availability_by_fault_and_az(availability: DataFrame, runs: DataFrame) -> pd.DataFrame:
    """Per fault kind, acks setting and AZ (targeted or not): how long writes went unacknowledged."""
    joined = availability.join(runs.select("run_id", "acks"), "run_id")
    return (joined.groupBy("fault", "acks", "targeted", "az")
            .agg(F.count("*").alias("faults"),
                 F.round(F.avg("first_ack_after_start_s"), 3).alias("first_ack_after_start_s_mean"),
                 F.round(F.max("longest_gap_s"), 3).alias("longest_gap_s_max"),
                 F.round(F.avg("longest_gap_s"), 3).alias("longest_gap_s_mean"),
                 F.round(F.avg("first_ack_after_heal_s"), 3).alias("first_ack_after_heal_s_mean"))
            .orderBy("fault", "acks", F.col("targeted").desc(), "az").toPandas())


def pass_fail_over_time(runs: DataFrame) -> pd.DataFrame:
    """Per scenario, configuration and day: PASS, FAIL, ERROR, INCONCLUSIVE (runs held to an expectation only)."""
    return (runs.filter(F.col("outcome").isNotNull())
            .groupBy("scenario", "configuration", "day")
            .agg(*_outcome_counts())
            .orderBy("scenario", "configuration", "day").toPandas())


def flaky(over_time: pd.DataFrame) -> pd.DataFrame:
    """Scenario configurations that both passed and failed (or erred): the ones to look at. Their runs count
    every outcome; an INCONCLUSIVE run makes none flaky (it neither passed nor failed)."""
    if over_time.empty:
        return over_time.assign(runs=[])
    totals = over_time.groupby(["scenario", "configuration"], dropna=False)[list(OUTCOME_COLUMNS.values())].sum()
    totals["runs"] = totals.sum(axis=1)
    return totals[(totals["pass"] > 0) & ((totals["fail"] + totals["error"]) > 0)].reset_index()


def pick_run(runs: DataFrame, run_id: str = "") -> str | None:
    """The run to drill into: `run_id` if given, else the one that lost the most writes (latest first on ties)."""
    if run_id:
        return run_id
    row = runs.orderBy(F.col("lost").desc_nulls_last(), F.col("started_at").desc()).select("run_id").first()
    return None if row is None else str(row["run_id"])


def run_partition(runs: DataFrame, run_id: str) -> tuple[str, ...] | None:
    """A run's values of the partition columns in `runs`: the one folder of each table that holds its rows."""
    row = runs.filter(F.col("run_id") == run_id).select(*PARTITION_COLUMNS).first()
    return None if row is None else tuple(str(row[c]) for c in PARTITION_COLUMNS)


def one_run(spark: SparkSession, lake: str | Path, name: str, run_id: str,
            partition: tuple[str, ...] | None = None) -> pd.DataFrame:
    """All rows of one run in a lake table (the drill-down's throughput, faults, leadership, availability).

    Given the run's partition (run_partition), Spark lists and reads only that folder, not the table's every
    folder (a year of nights holds thousands); a table with no folder there has no row of the run.
    """
    if partition is None:
        return table(spark, lake, name).filter(F.col("run_id") == run_id).toPandas()
    root = Path(lake).resolve() / name
    folder = root.joinpath(*(f"{column}={value}" for column, value in zip(PARTITION_COLUMNS, partition, strict=True)))
    if not folder.is_dir():
        return pd.DataFrame({f.name: pd.Series(dtype=object) for f in TABLES[name]})
    spark.conf.set("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
    frame = spark.read.option("basePath", str(root)).parquet(str(folder))
    return frame.filter(F.col("run_id") == run_id).toPandas()



def version_label(runs: DataFrame) -> F.Column:
    """`3.9.1 kraft`, with ` client 2.10.1` when the clients under test ran another confluent-kafka than the
    harness's own: one column per cell of a version matrix."""
    client = F.when(F.col("client_confluent_kafka_version") != F.col("confluent_kafka_version"),
                    F.concat(F.lit(" client "), F.col("client_confluent_kafka_version"))).otherwise(F.lit(""))
    return F.concat(F.coalesce(F.col("kafka_version"), F.lit("?")), F.lit(" "),
                    F.coalesce(F.col("metadata"), F.lit("?")), client)


def anomalies_by_version(runs: DataFrame) -> pd.DataFrame:
    """Version x scenario: per scenario, configuration and version cell (Kafka, metadata mode, client under test),
    the runs and their outcomes, and each anomaly's total count over them (long form: pivot it for a view)."""
    return (runs.withColumn("version", version_label(runs))
            .groupBy("scenario", "configuration", "version")
            .agg(F.count("*").alias("runs"), *_outcome_counts(),
                 *(F.sum(count_column(a)).alias(count_column(a)) for a in ANOMALIES))
            .orderBy("scenario", "configuration", "version").toPandas())


def version_pivot(by_version: pd.DataFrame, anomaly: str) -> pd.DataFrame:
    """One anomaly's counts as a table: a row per scenario [configuration], a column per version cell (blank: not
    run there)."""
    if by_version.empty:
        return pd.DataFrame()
    key = by_version["scenario"] + " [" + by_version["configuration"].fillna("-") + "]"
    return by_version.assign(key=key).pivot_table(index="key", columns="version", values=count_column(anomaly),
                                                  aggfunc="sum")


def transactions_by_scenario(txns: DataFrame, runs: DataFrame) -> pd.DataFrame:
    """Per scenario and configuration: transactions committed, aborted and unknown, how many overlapped a fault,
    and how long they took from begin to outcome (median and p99, ms)."""
    joined = txns.join(runs.select("run_id", "configuration"), "run_id")
    return (joined.groupBy("scenario", "configuration")
            .agg(F.countDistinct("run_id").alias("runs"), F.count("*").alias("transactions"),
                 _count_if(F.col("status") == "ok").alias("committed"),
                 _count_if(F.col("status") == "fail").alias("aborted"),
                 _count_if(F.col("status") == "info").alias("unknown"),
                 _count_if(F.col("faults").isNotNull()).alias("during_a_fault"),
                 F.round(F.percentile_approx("duration_ms", 0.5), 1).alias("duration_ms_p50"),
                 F.round(F.percentile_approx("duration_ms", 0.99), 1).alias("duration_ms_p99"))
            .orderBy("scenario", "configuration").toPandas())


def commit_modes(runs: DataFrame, commits: DataFrame) -> pd.DataFrame:
    """Per scenario, configuration and commit mode (contract v3): the runs, each v3 anomaly's total and how many
    runs had it, and the members' commits: asked for, acknowledged, refused, unknown and during a fault."""
    v3 = REGISTRY.of_contract(3)
    made = (commits.where(F.col("kind") != "final").groupBy("run_id")
            .agg(_count_if(F.col("status") == "fail").alias("refused"),
                 _count_if(F.col("status") == "info").alias("unknown"),
                 _count_if(F.col("faults").isNotNull()).alias("during_a_fault")))
    joined = runs.where(F.col("consumer_commit").isNotNull() | (F.col("stat_commits") > 0)).join(
        made, "run_id", "left")
    totals = [F.sum(F.coalesce(F.col(count_column(a)), F.lit(0))).alias(count_column(a)) for a in v3]
    with_it = [_count_if(F.col(count_column(a)) > 0).alias(f"runs_with_{count_column(a)}") for a in v3]
    return (joined.groupBy("scenario", "configuration", "consumer_commit")
            .agg(F.count("*").alias("runs"), *totals, *with_it,
                 F.sum(F.coalesce("stat_commits", F.lit(0))).alias("commits"),
                 F.sum(F.coalesce("stat_commits_ok", F.lit(0))).alias("acknowledged"),
                 F.sum(F.coalesce("refused", F.lit(0))).alias("refused"),
                 F.sum(F.coalesce("unknown", F.lit(0))).alias("unknown"),
                 F.sum(F.coalesce("during_a_fault", F.lit(0))).alias("during_a_fault"))
            .orderBy("scenario", "configuration", "consumer_commit").toPandas())
