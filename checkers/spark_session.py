"""The one Spark session of this process, started on first use and reused.

Settings fit the target machine (2 cores, 24 GiB, shared with Kafka JVMs):
a 4 GiB driver, few shuffle partitions, no UI, quiet logs. Environment
variables override them: FAULTLINE_SPARK_DRIVER_MEMORY,
FAULTLINE_SPARK_SHUFFLE_PARTITIONS, FAULTLINE_SPARK_EXECUTOR_MEMORY (1 GiB, for
a cluster master). Any master URL works (``spark://host:7077`` for a standalone
cluster); ``local[*]`` is the default.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

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

_session: SparkSession | None = None
_master: str | None = None


def _log_config() -> Path:
    path = Path(tempfile.gettempdir()) / "faultline-checker-log4j2.properties"
    if not path.exists() or path.read_text() != LOG4J2:
        path.write_text(LOG4J2)
    return path


def settings(master: str) -> dict[str, str]:
    """The Spark configuration the checker starts its session with."""
    conf = {
        "spark.driver.memory": os.environ.get("FAULTLINE_SPARK_DRIVER_MEMORY", "4g"),
        "spark.sql.shuffle.partitions": os.environ.get("FAULTLINE_SPARK_SHUFFLE_PARTITIONS", "8"),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{_log_config()}",
    }
    if master.startswith("local") or any(f"//{h}:" in master for h in LOOPBACK):
        # Bind to loopback: the host may sit in network namespaces the harness builds (and a standalone
        # master on loopback, `make spark-cluster`, must reach the driver there too).
        conf["spark.driver.host"] = "127.0.0.1"
        conf["spark.driver.bindAddress"] = "127.0.0.1"
    if not master.startswith("local"):
        conf["spark.executor.memory"] = os.environ.get("FAULTLINE_SPARK_EXECUTOR_MEMORY", "1g")
    return conf


def spark_session(master: str | None = None) -> SparkSession:
    """The shared session; a different ``master`` stops the old one and starts anew."""
    global _session, _master
    wanted = master or _master or DEFAULT_MASTER
    if _session is not None and wanted == _master:
        return _session
    if _session is not None:
        _session.stop()
    builder = SparkSession.builder.master(wanted).appName("faultline-checker")
    for key, value in settings(wanted).items():
        builder = builder.config(key, value)
    _session = builder.getOrCreate()
    _session.sparkContext.setLogLevel("ERROR")
    _master = wanted
    return _session


def stop_session() -> None:
    """Stop the shared session, if one was started."""
    global _session, _master
    if _session is not None:
        _session.stop()
    _session, _master = None, None
