"""What consumers and the drain share: journaling what a poll returned, and finding the topic's partitions.

`PollRecorder.record` turns one poll's messages into one ``poll`` line
(records in the order the poll returned them, numbered by a per-process
seq) plus a ``consume_error`` line per error event. It never drops a record
and never reorders them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaError, KafkaException, Message

from workloads.journal import JournalSink
from workloads.stopping import StopFlag


def text(data: bytes | str | None) -> str | None:
    if data is None or isinstance(data, str):
        return data
    return data.decode("utf-8", errors="replace")


@dataclass
class PollResult:
    """What one poll brought: the last offset read per partition, and end-of-partition events."""

    count: int = 0
    last_offset: dict[int, int] = field(default_factory=dict)
    eof: dict[int, int] = field(default_factory=dict)
    fatal: str | None = None


def leader_epoch(msg: Message) -> int | None:
    """The record's leader epoch; None from a client under test older than confluent-kafka 2.1.1 (no KIP-320)."""
    method = getattr(msg, "leader_epoch", None)
    return method() if method is not None else None


class PollRecorder:
    def __init__(self, journal: JournalSink, phase: str, group: str | None) -> None:
        self.journal = journal
        self.phase = phase
        self.group = group
        self.seq = 0

    def record(self, messages: list[Message], poll_ns: int) -> PollResult:
        result = PollResult()
        records: list[list[object]] = []
        for msg in messages:
            err = msg.error()
            if err is not None:
                self._error(err, msg, result)
                continue
            partition, offset = msg.partition(), msg.offset()
            records.append([partition, offset, text(msg.key()), text(msg.value()) or "", leader_epoch(msg)])
            if partition is not None and offset is not None:
                result.last_offset[partition] = offset
        if records:
            self.journal.append({"kind": "poll", "t": poll_ns, "seq": self.seq, "phase": self.phase,
                                 "group": self.group, "records": records})
            self.seq += len(records)
            result.count = len(records)
        return result

    def _error(self, err: KafkaError, msg: Message, result: PollResult) -> None:
        partition = msg.partition()
        if err.code() == KafkaError._PARTITION_EOF and partition is not None:
            result.eof[partition] = msg.offset() or 0
            return
        self.journal.append({"kind": "consume_error", "t": time.time_ns(), "error": err.name(),
                             "detail": err.str(), "partition": partition})
        if err.fatal():
            result.fatal = f"{err.name()}: {err.str()}"


def discover_partitions(consumer: Consumer, topic: str, stop: StopFlag, deadline: float) -> int | None:
    """The topic's partition count from the cluster's metadata; None if stopped or past `deadline` (monotonic)."""
    while not stop.requested and time.monotonic() < deadline:
        try:
            metadata = consumer.list_topics(topic, timeout=5.0)
            found = metadata.topics.get(topic)
            if found is not None and found.error is None and found.partitions:
                return len(found.partitions)
        except KafkaException:
            pass
        stop.wait(0.5)
    return None
