"""The journal line kinds: what each workload writes, one JSON object a line, `kind` first.

Times (`t`) are nanoseconds since the Unix epoch (time.time_ns()).

Every journal:
- ``process`` (always the first line): process, role, az, topic, pid, start_ns,
  config (the settings that matter to the verdict; becomes `processes.config`).
- ``client_error``: t, error, detail, fatal: an error librdkafka reported
  outside any one message (a broker went down, a fatal idempotence error).
- ``end``: t plus the process's counts, written when it stops normally.
- ``crash``: t, error: written (best effort) when the process dies of an error.

Producer (`writes` rows):
- its ``process`` line also holds ``values``: the `workloads.values.ValuePlan`
  (prefix, width, partitions, key) from which every op's value, key and
  partition follow; the journal itself carries op ids only.
- ``invoke``: t, op (first op id), n: sends op .. op+n-1, journaled *before*
  any of them is handed to librdkafka, so a killed producer never sent
  anything it did not journal.
- ``ack``: t (when the poll that served them returned), op (the op ids as
  comma-separated decimal digits, possibly zero-padded: cheaper to write than
  a JSON list), offset (a list parallel to op): successful delivery reports;
  offset null (or negative) when acks=0 gives none.
- ``outcome``: op, t, status (`fail` or `info`), error, partition, detail:
  one failed send (delivery report error, or produce() refused it).

Consumer and drain (`reads` rows):
- ``poll``: t (when the poll returned), seq (of its first record), phase
  (`live` or `final`), group, records: [[partition, offset, key, value,
  leader_epoch], ...] in the order the poll returned them.
- ``consume_error``: t, error, detail, partition: an error event from a poll.
- ``commit`` (group consumers): t, mode (`auto` or `sync`), error,
  offsets [[partition, offset, error], ...].
- ``rebalance`` (group consumers): t, event (`assign`, `revoke`, `lost`), partitions.
- ``watermarks`` (drain): t, partitions {partition: [low, high]} at the start.
- ``drain_end`` (drain): t, complete, records, reason, behind {partition: [position, high]}.

Observer (`observations` rows):
- ``observation``: t, observer, broker, controller, partitions: [[topic,
  partition, leader, isr, leader_epoch, error_code], ...]: one answer of its broker.
- ``unreachable``: t, observer, error: its broker did not answer (no
  observation rows are made for that moment: absence means "no answer").
"""

from __future__ import annotations

import os
import time
from typing import Any

from workloads.config import WorkloadConfig


def process_line(config: WorkloadConfig, verdict_config: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """The first line of a journal: who this process is and how it is configured."""
    return {"kind": "process", "process": config.process, "role": config.role, "az": config.az,
            "topic": config.topic, "pid": os.getpid(), "start_ns": time.time_ns(),
            "config": verdict_config, **extra}


def client_error_line(error: Any) -> dict[str, Any]:
    """A librdkafka KafkaError reported through error_cb."""
    return {"kind": "client_error", "t": time.time_ns(), "error": error.name(), "detail": error.str(),
            "fatal": bool(error.fatal())}
