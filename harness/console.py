"""What reaches the terminal during a command: faultline's own lines, nothing else.

The console handler passes records of the `faultline` loggers only. Every other
library's records (py4j's connection chatter, Python warnings such as pyspark's
pandas-version FutureWarning, the Spark JVM's output that checkers.spark_session
forwards, librdkafka's log lines) go to the run's `harness.log` while a run is
open (harness.runlog) and nowhere otherwise.
Must never: drop a record of a `faultline` logger, or let a third-party library
write to the terminal through logging.
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

OWN_LOGGER = "faultline"
FORMAT = "%(asctime)s %(levelname)s %(message)s"


def is_own(record: logging.LogRecord) -> bool:
    """Whether the record comes from one of faultline's loggers."""
    return record.name == OWN_LOGGER or record.name.startswith(OWN_LOGGER + ".")


def quiet_console(stream: TextIO | None = None) -> logging.Handler:
    """Log INFO and above; show only faultline's records on `stream` (stderr); route warnings into logging."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(logging.Formatter(FORMAT))
    handler.addFilter(is_own)
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    root.addHandler(handler)
    logging.captureWarnings(True)
    return handler
