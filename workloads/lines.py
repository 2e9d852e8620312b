"""The journal line kinds: what each workload writes, one JSON object a line, `kind` first.

Times (`t`) are nanoseconds since the Unix epoch (time.time_ns()).

Every journal:
- ``process`` (always the first line): process, role, az, topic, pid, start_ns,
  config (the settings that matter to the verdict; becomes `processes.config`).
- ``client_error``: t, error, detail, fatal: an error librdkafka reported
  outside any one message (a broker went down, a fatal idempotence error).
  A producer journals each fatal error once, as the error behind it (e.g.
  OUT_OF_ORDER_SEQUENCE_NUMBER, not the bare `_FATAL` produce() raises once
  the instance is fatal), then abandons that instance for a fresh one.
- ``end``: t plus the process's counts, written when it stops normally (or,
  for a producer, gives up: see `restarts` and `fatal` below).
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
  one failed send (delivery report error, or produce() refused it). After a
  fatal error, sends in flight may still be acknowledged for a moment; every
  other send the instance still held gets its outcome here from the delivery
  reports of librdkafka's purge, always `info` whatever the error
  (`_PURGE_QUEUE`, `_PURGE_INFLIGHT`, or the fatal error's own code): a
  fatal instance may have written it. A send a fatal instance refused in
  produce() gets no outcome from it: the next instance sends it (or, if the
  producer gives up instead, it is `fail` with `_FATAL`: never taken).
- Each op gets exactly one ``ack`` entry or ``outcome`` line, ever: both come
  only from librdkafka's one delivery report a message (or from produce()
  refusing it), and an abandoned instance is never polled again.
- ``end`` also holds ``restarts`` (how many times a fatal error made the
  producer replace its librdkafka instance) and ``fatal``: null, or why it
  gave up (more than `MAX_RESTARTS` fatal errors, or sends of an abandoned
  instance left without outcome) and exited 1.

Transactional producer (`transactions` rows, and `txn` of its `writes` rows; workloads/txn_producer.py):
- ``txn_begin``: t (begin_transaction() was called), txn (``<process>-t<n>``).
- ``invoke`` lines also hold ``txn``: the transaction of those sends.
- ``txn_end``: t (commit or abort is about to be asked for: `end_ns`), txn, intent (`commit` or `abort`);
  journaled and flushed before the call.
- ``txn_done``: t, txn, status (`ok`, `fail`, `info`), error: the transaction's outcome. A transaction
  without one (the process died) is `info`.
- ``end`` also holds transactions, committed, aborted, unknown.

Consumer and drain (`reads` rows):
- ``poll``: t (when the poll returned), seq (of its first record), phase
  (`live` or `final`), group, records: [[partition, offset, key, value,
  leader_epoch], ...] in the order the poll returned them.
- ``consume_error``: t, error, detail, partition: an error event from a poll.
- ``commit_begin`` (group consumers, synchronous commits): t, id, mode (`sync`), offsets
  [[partition, offset], ...]: journaled and flushed before the commit is asked for (contract v3).
- ``commit`` (group consumers): t (asked), done (answered), id (synchronous commits), mode (`sync` or
  `auto`, the latter from the commit callback), error, offsets [[partition, offset, error], ...]; the
  process line of a group member also holds ``commit`` (before, after, auto, none). A line without
  ``done`` is from before contract v3 and makes no `commits` row.
- ``committed`` (drain, contract v3): t, done, group, offsets [[partition, offset or null], ...]: the
  group's committed offsets; ``committed_error``: t, group, error, when it could not read them.
- ``rebalance`` (group consumers): t, event (`assign`, `revoke`, `lost`), partitions.
- ``watermarks`` (drain): t, partitions {partition: [low, high]} at the start.
- ``drain_end`` (drain): t, complete, records, reason, behind {partition: [position, high]}.

Observer (`observations` rows):
- ``observation``: t, observer, broker, controller, partitions: [[topic,
  partition, leader, isr, leader_epoch, error_code, high_watermark, last_stable_offset], ...]: one answer
  of its broker (the last two null where it does not lead the partition; absent in older journals).
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


def client_error_line(error: Any, fatal: bool | None = None) -> dict[str, Any]:
    """A librdkafka KafkaError reported outside any one message; `fatal` overrides the error's own flag."""
    return {"kind": "client_error", "t": time.time_ns(), "error": error.name(), "detail": error.str(),
            "fatal": bool(error.fatal()) if fatal is None else fatal}
