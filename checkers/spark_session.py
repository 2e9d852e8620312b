"""The one Spark session of this process, started on first use and reused.

Settings fit the target machine (2 cores, 24 GiB, shared with Kafka JVMs):
a 4 GiB driver, few shuffle partitions, no UI, quiet logs, cached tables kept
uncompressed, a code-generation cache big enough for every class a check
generates (BENCHMARKS.md, "fifth pass") and no PySpark call-site capture per
DataFrame call ("seventh pass"). Environment
variables override them: FAULTLINE_SPARK_DRIVER_MEMORY,
FAULTLINE_SPARK_SHUFFLE_PARTITIONS, FAULTLINE_SPARK_EXECUTOR_MEMORY (1 GiB, for
a cluster master). Any master URL works (``spark://host:7077`` for a standalone
cluster); ``local[*]`` is the default.

The driver JVM runs the parallel collector (JVM_OPTIONS): a check is a batch
job, and a fresh JVM judged a 10M-operation history ~9% sooner with it than
with G1, warm checks no slower (BENCHMARKS.md, "seventh pass").
Two more are for measuring, not tuning: FAULTLINE_SPARK_JVM_OPTIONS (the
driver JVM's options, replacing JVM_OPTIONS) and
FAULTLINE_SPARK_WHOLE_STAGE_CODEGEN (true by default). On 2 cores the JIT
compiler's threads use about as much CPU as Spark's tasks at 10M operations,
yet C1-only (-XX:TieredStopAtLevel=1), C2-only (-XX:-TieredCompilation),
Java 25 and whole-stage code generation off measured no better than the
defaults (BENCHMARKS.md, "third pass" to "fifth pass").

The JVM's own output (its incubator-module warning, Spark's start-up lines,
anything log4j prints) never reaches the terminal: it is read from a pipe and
logged line by line to the ``spark.jvm`` logger, which a run's harness.log
records and the console leaves out (harness.console).
Must never: leave the JVM writing to the process's stderr, or stop reading its
pipe while it runs (a full pipe would block the JVM).
"""

from __future__ import annotations

import logging
import os
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from pyspark import SparkConf, SparkContext
from pyspark.java_gateway import launch_gateway
from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
LOOPBACK = ("127.0.0.1", "localhost")

# Only errors reach the console; Spark's WARN chatter would bury the checker's one-line messages.
LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
logger.shutdown.name = org.apache.spark.util.ShutdownHookManager
logger.shutdown.level = off
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = off
"""

JVM_OPTIONS = "-XX:+UseParallelGC"  # throughput, not pauses: nothing waits on the driver while it collects
CODEGEN_CACHE_ENTRIES = "2000"

_session: SparkSession | None = None
_master: str | None = None
jvm_log = logging.getLogger("spark.jvm")


def _log_config() -> Path:
    path = Path(tempfile.gettempdir()) / "faultline-checker-log4j2.properties"
    if not path.exists() or path.read_text() != LOG4J2:
        path.write_text(LOG4J2)
    return path


def jvm_options() -> str:
    """The driver JVM's options beyond the log configuration: JVM_OPTIONS, or FAULTLINE_SPARK_JVM_OPTIONS instead."""
    return os.environ.get("FAULTLINE_SPARK_JVM_OPTIONS", JVM_OPTIONS)


def settings(master: str) -> dict[str, str]:
    """The Spark configuration the checker starts its session with."""
    conf = {
        "spark.driver.memory": os.environ.get("FAULTLINE_SPARK_DRIVER_MEMORY", "4g"),
        "spark.sql.shuffle.partitions": os.environ.get("FAULTLINE_SPARK_SHUFFLE_PARTITIONS", "8"),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.codegen.wholeStage": os.environ.get("FAULTLINE_SPARK_WHOLE_STAGE_CODEGEN", "true"),
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # The cached tables are read a few times in one job: building them compressed cost more (its Scala
        # HashMap of boxed values for dictionary stats was a tenth of the CPU at 10M) than the scans save.
        "spark.sql.inMemoryColumnarStorage.compressed": "false",
        # A check generates a few hundred classes; the default 100-entry cache made every check (and each
        # v1/v2 switch) compile them all again with Janino and then the JIT.
        "spark.sql.codegen.cache.maxEntries": CODEGEN_CACHE_ENTRIES,
        # PySpark's DataFrame call-site capture costs four py4j calls and a stack walk per functions.* call
        # (~a quarter of a check's ~13,000 calls); the checker's plans are its own, not a user's to debug.
        "spark.python.sql.dataFrameDebugging.enabled": "false",
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{_log_config()} {jvm_options()}".strip(),
    }
    if master.startswith("local") or any(f"//{h}:" in master for h in LOOPBACK):
        # Bind to loopback: the host may sit in network namespaces the harness builds (and a standalone
        # master on loopback, `make spark-cluster`, must reach the driver there too).
        conf["spark.driver.host"] = "127.0.0.1"
        conf["spark.driver.bindAddress"] = "127.0.0.1"
    if not master.startswith("local"):
        conf["spark.executor.memory"] = os.environ.get("FAULTLINE_SPARK_EXECUTOR_MEMORY", "1g")
    return conf


# Settings for the checker's own plans only, set while it plans and runs them and restored after (the lake's
# queries keep the session's). Adaptive execution re-plans the whole remaining query after each of the
# check's 20-30 stages and runs each as its own job; the check's plan is static (its joins are broadcast by
# hint, its partitions few), and without it a 10M-operation check measured 1-2 s faster (BENCHMARKS.md).
CHECKER_SQL = {"spark.sql.adaptive.enabled": "false"}


@contextmanager
def checker_settings(spark: SparkSession) -> Iterator[None]:
    """CHECKER_SQL in force in ``spark`` inside the block, the session's own values again after it."""
    before: dict[str, str | None] = {key: spark.conf.get(key, None) for key in CHECKER_SQL}
    for key, value in CHECKER_SQL.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, old in before.items():
            if old is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, old)


def spark_session(master: str | None = None) -> SparkSession:
    """The shared session; a different ``master`` stops the old one and starts anew."""
    global _session, _master
    wanted = master or _master or DEFAULT_MASTER
    if _session is not None and wanted == _master:
        return _session
    if _session is not None:
        _session.stop()
    conf = SparkConf().setMaster(wanted).setAppName("faultline-checker").setAll(list(settings(wanted).items()))
    if SparkContext._active_spark_context is None:
        SparkContext(conf=conf, gateway=_quiet_gateway(conf))
    builder = SparkSession.builder.master(wanted).appName("faultline-checker")
    for key, value in settings(wanted).items():
        builder = builder.config(key, value)
    _session = builder.getOrCreate()
    _session.sparkContext.setLogLevel("ERROR")
    _master = wanted
    return _session


def _quiet_gateway(conf: SparkConf) -> object:
    """Spark's JVM, started as pyspark starts it, but with its stdout and stderr read into `spark.jvm`."""
    if SparkContext._gateway is not None:  # a JVM of an earlier session: reuse it
        return SparkContext._gateway
    gateway = launch_gateway(conf, popen_kwargs={"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT})
    proc = getattr(gateway, "proc", None)
    if proc is not None and proc.stdout is not None:
        threading.Thread(target=_forward, args=(proc.stdout,), name="spark-jvm-output", daemon=True).start()
    return gateway


def _forward(pipe: IO[bytes]) -> None:
    for line in iter(pipe.readline, b""):
        jvm_log.info("%s", line.decode(errors="replace").rstrip())


def stop_session() -> None:
    """Stop the shared session, if one was started."""
    global _session, _master
    if _session is not None:
        _session.stop()
    _session, _master = None, None


def jvm_pid() -> int | None:
    """The pid of the Spark JVM this process started (None if none runs)."""
    proc = getattr(SparkContext._gateway, "proc", None)
    return proc.pid if proc is not None and proc.poll() is None else None


def warm_up() -> None:
    """Start the shared session and run one small shuffle, so the first check finds the JVM started and warm."""
    from pyspark.sql import functions as F

    spark_session().range(10_000).groupBy((F.col("id") % 7).alias("k")).count().collect()
