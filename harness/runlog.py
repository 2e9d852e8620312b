"""`RUN_DIR/harness.log`: what the harness itself said during one run, kept with the run.

Every `faultline.*` logger (cluster, runtime, nemesis, run, verdicts) and the
progress lines (phases, and a throughput line every few seconds) go to the
file while the run lasts, so a run folder copied off the machine still says
what the harness did and when. A run judged on the judging worker
(harness.pipeline) while the next run's story plays keeps its own records:
the worker's thread and what judging starts (the Spark JVM's output, py4j,
Python warnings) go to the judged run's file, the rest to the story's.
Must never: stay attached after the run (the next run in the same process
would write into this one's file), or write one run's records into another's.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator

from testbed.runfolder import RunFolder

FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
# Threads whose records belong to one run's file only (a run judged while the next one's story plays).
_claimed: set[int] = set()
# Loggers of what judging starts; their records come from threads of their own and belong to the run being judged.
JUDGING_LOGGERS = ("spark.jvm", "py4j", "py.warnings")


def _of_judging(record: logging.LogRecord) -> bool:
    return any(record.name == name or record.name.startswith(name + ".") for name in JUDGING_LOGGERS)


@contextlib.contextmanager
def run_log(folder: RunFolder, this_thread_only: bool = False) -> Iterator[logging.Handler]:
    """Append every log record of INFO and above (faultline's, and the other libraries' the console leaves out:
    the Spark JVM's output, py4j, Python warnings, librdkafka) to the run's `harness.log` until the block ends.

    `this_thread_only`: only the calling thread's records and JUDGING_LOGGERS' (judging on a worker), which
    no other run's file then gets."""
    folder.root.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(folder.harness_log, encoding="utf-8")
    handler.setLevel(logging.INFO)
    handler.setFormatter(logging.Formatter(FORMAT))
    me = threading.get_ident()
    if this_thread_only:
        handler.addFilter(lambda record: record.thread == me or _of_judging(record))
        _claimed.add(me)
    else:
        handler.addFilter(lambda record: record.thread not in _claimed and not (_claimed and _of_judging(record)))
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
        if this_thread_only:
            _claimed.discard(me)
        logger.setLevel(previous)
        handler.close()


def progress_record(text: str) -> logging.LogRecord:
    """A progress line as a log record, for the run's file only (the terminal already shows it)."""
    return logging.makeLogRecord({"name": "faultline.progress", "levelno": logging.INFO,
                                  "levelname": "INFO", "msg": text})
