"""The Spark session's settings: the defaults and the environment variables that replace them; the last two tests read
them back from a live session."""

from __future__ import annotations

from typing import Any

import pytest

from checkers import spark_session


def test_defaults_run_the_parallel_collector_and_keep_whole_stage_codegen(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FAULTLINE_SPARK_JVM_OPTIONS", raising=False)
    monkeypatch.delenv("FAULTLINE_SPARK_WHOLE_STAGE_CODEGEN", raising=False)
    conf = spark_session.settings("local[*]")
    assert conf["spark.driver.extraJavaOptions"].split() == [
        f"-Dlog4j2.configurationFile=file:{spark_session._log_config()}", "-XX:+UseParallelGC"]
    assert conf["spark.sql.codegen.wholeStage"] == "true"


def test_measuring_knobs_reach_the_driver_jvm_and_the_sql_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAULTLINE_SPARK_JVM_OPTIONS", "-XX:TieredStopAtLevel=1 -XX:+UseParallelGC")
    monkeypatch.setenv("FAULTLINE_SPARK_WHOLE_STAGE_CODEGEN", "false")
    conf = spark_session.settings("local[*]")
    options = conf["spark.driver.extraJavaOptions"].split()
    assert options[0].startswith("-Dlog4j2.configurationFile=")  # the quiet log configuration is kept
    assert options[1:] == ["-XX:TieredStopAtLevel=1", "-XX:+UseParallelGC"]
    assert conf["spark.sql.codegen.wholeStage"] == "false"


def test_cached_tables_are_uncompressed_and_the_code_cache_holds_a_checks_classes() -> None:
    conf = spark_session.settings("local[*]")
    assert conf["spark.sql.inMemoryColumnarStorage.compressed"] == "false"
    # A 10M-operation v2 check generated ~320 classes (BENCHMARKS.md, "fifth pass"); v1 and v2 in turn, more.
    assert int(conf["spark.sql.codegen.cache.maxEntries"]) >= 1000
    assert spark_session.CHECKER_SQL == {"spark.sql.adaptive.enabled": "false"}


@pytest.mark.spark
def test_the_session_skips_pysparks_call_site_capture(spark: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """PySpark would capture a call site (four py4j calls and a stack walk) per functions.* call; the checker's
    session turns that off, so building a check's plan costs a third of the py4j calls (BENCHMARKS.md)."""
    from pyspark.errors import utils
    from pyspark.errors.utils import is_debugging_enabled

    monkeypatch.setattr(utils, "_enable_debugging_cache", None)  # read again from the live session
    assert spark_session.settings("local[*]")["spark.python.sql.dataFrameDebugging.enabled"] == "false"
    assert is_debugging_enabled() is False


@pytest.mark.spark
def test_the_driver_jvm_collects_with_the_parallel_collector(spark: Any) -> None:
    """The live session's JVM runs what settings() asked for (a fresh JVM judged 10M operations ~9% sooner)."""
    beans = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
    assert {bean.getName() for bean in beans} == {"PS Scavenge", "PS MarkSweep"}
