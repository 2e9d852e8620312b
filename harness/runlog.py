"""`RUN_DIR/harness.log`: what the harness itself said during one run, kept with the run.

Every `faultline.*` logger (cluster, runtime, nemesis, run, verdicts) and the
progress lines (phases, and a throughput line every few seconds) go to the
file while the run lasts, so a run folder copied off the machine still says
what the harness did and when. Must never: stay attached after the run (the
next run in the same process would write into this one's file).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from testbed.runfolder import RunFolder

FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


@contextlib.contextmanager
def run_log(folder: RunFolder) -> Iterator[logging.Handler]:
    """Append every log record of INFO and above (faultline's, and the other libraries' the console leaves out:
    the Spark JVM's output, py4j, Python warnings, librdkafka) to the run's `harness.log` until the block ends."""
    folder.root.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(folder.harness_log, encoding="utf-8")
    handler.setLevel(logging.INFO)
    handler.setFormatter(logging.Formatter(FORMAT))
    logger = logging.getLogger("faultline")
    previous = logger.level
    if logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        logger.setLevel(previous)
        handler.close()


def progress_record(text: str) -> logging.LogRecord:
    """A progress line as a log record, for the run's file only (the terminal already shows it)."""
    return logging.makeLogRecord({"name": "faultline.progress", "levelno": logging.INFO,
                                  "levelname": "INFO", "msg": text})
