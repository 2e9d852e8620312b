"""The final drain: a fresh consumer reads every partition from the earliest offset to its high watermark.

At start it asks each partition's watermarks (retrying until `timeout_s`)
and journals them; the high watermarks are the finish line. Every record is
journaled with phase `final`. A partition is done once a record at offset
high-1 or beyond was read, or librdkafka reports its end at or past high.
Exit 0 when every partition is done; otherwise, at `timeout_s` or on SIGTERM,
it journals what it got and a ``drain_end`` line with complete=false and the
partitions still behind, and exits 2. It never commits and never joins a group.

Contract v3: then, for each of its `groups`, it reads the group's committed offset of every partition
(OffsetFetch through a consumer with that group.id that never subscribes, so it never joins, and never
commits) and journals it as a ``committed`` line (t asked, done answered, group, offsets [[partition,
offset or null]]), retried until `timeout_s`; a group it could not read gets a ``committed_error`` line.
The harness gives the groups to one drain only, after every member stopped.

Its view is its `isolation.level` (the harness gives one drain per AZ each view when a run has
transactional writers). librdkafka (since 1.7.1) asks the watermarks at that level too: a
read_committed drain's finish line is each partition's last stable offset, so a transaction left
open ends its read there (the committed values beyond are `unreadable`), and aborted records and
transaction markers, which it never returns, are passed by its end-of-partition position.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from workloads import exits
from workloads.config import DrainConfig
from workloads.journal import JournalSink
from workloads.lines import client_error_line, process_line
from workloads.reading import PollRecorder, discover_partitions
from workloads.settings import consumer_effective
from workloads.stopping import StopFlag

# librdkafka's consume(n, timeout) waits the whole timeout for a batch it cannot fill: with 0.5 s, every drain's
# last (partial) batch cost half a second of every run's wall clock. Short polls end it as soon as it has it.
POLL_TIMEOUT_S = 0.05


class DrainWorkload:
    def __init__(self, config: DrainConfig, journal: JournalSink, stop: StopFlag) -> None:
        self.config = config
        self.journal = journal
        self.stop = stop
        self.recorder = PollRecorder(journal, "final", None)
        self.deadline = time.monotonic() + config.timeout_s
        self.count: int | None = None  # the topic's partitions, once known

    def conf(self) -> dict[str, Any]:
        c = self.config
        return {"bootstrap.servers": c.bootstrap, "client.id": c.process,
                "group.id": f"faultline-drain-{c.process}", "enable.auto.commit": False,
                "enable.auto.offset.store": False, "auto.offset.reset": "earliest",
                "enable.partition.eof": True, **c.kafka}

    def _remaining(self) -> float:
        return self.deadline - time.monotonic()

    def _watermarks(self, consumer: Consumer, count: int) -> dict[int, tuple[int, int]]:
        """(low, high) per partition, asked until answered or the deadline passes."""
        marks: dict[int, tuple[int, int]] = {}
        while len(marks) < count and self._remaining() > 0 and not self.stop.requested:
            for p in range(count):
                if p in marks:
                    continue
                try:
                    low, high = consumer.get_watermark_offsets(
                        TopicPartition(self.config.topic, p), timeout=max(0.1, min(5.0, self._remaining())),
                        cached=False)
                    marks[p] = (int(low), int(high))
                except KafkaException as exc:
                    err: KafkaError = exc.args[0]
                    self.journal.append({"kind": "consume_error", "t": time.time_ns(), "error": err.name(),
                                         "detail": f"watermarks: {err.str()}", "partition": p})
            self.journal.flush()
            if len(marks) < count:
                self.stop.wait(min(0.5, max(0.0, self._remaining())))
        return marks

    def _finish(self, complete: bool, reason: str | None, behind: dict[int, list[int]]) -> int:
        self.journal.append({"kind": "drain_end", "t": time.time_ns(), "complete": complete,
                             "records": self.recorder.seq, "reason": reason,
                             "behind": {str(p): v for p, v in sorted(behind.items())}})
        self.journal.flush()
        print(json.dumps({"process": self.config.process, "role": "drain", "complete": complete,
                          "records": self.recorder.seq, "reason": reason}), flush=True)
        if not complete:
            print(f"{self.config.process}: drain incomplete: {reason}", file=sys.stderr)
            return exits.DRAIN_INCOMPLETE
        return exits.DONE

    def _read(self, consumer: Consumer, marks: dict[int, tuple[int, int]]) -> dict[int, list[int]]:
        """Read until every partition reached its high watermark; return those still behind [position, high]."""
        behind = {p: [low, high] for p, (low, high) in marks.items() if high > low}
        consumer.assign([TopicPartition(self.config.topic, p, OFFSET_BEGINNING) for p in sorted(behind)])
        while behind and self._remaining() > 0 and not self.stop.requested:
            messages = consumer.consume(500, max(0.01, min(POLL_TIMEOUT_S, self._remaining())))
            result = self.recorder.record(messages, time.time_ns())
            for p, offset in result.last_offset.items():
                if p in behind:
                    behind[p][0] = offset + 1
            for p, offset in result.eof.items():
                if p in behind:
                    behind[p][0] = max(behind[p][0], offset)
            for p in [p for p, (position, high) in behind.items() if position >= high]:
                del behind[p]
            self.journal.flush()
        return behind

    def _committed(self, count: int) -> None:
        """Each group's committed offsets, read without joining it (contract v3's `final` commits rows)."""
        for group in self.config.groups:
            reader = Consumer({**self.conf(), "group.id": group, "client.id": f"{self.config.process}-offsets"})
            error: str | None = "not asked"
            try:
                while error is not None and not self.stop.requested:
                    t = time.time_ns()
                    try:
                        got = reader.committed([TopicPartition(self.config.topic, p) for p in range(count)],
                                               timeout=max(1.0, min(10.0, self._remaining())))
                    except KafkaException as exc:
                        error = f"{exc.args[0].name()}: {exc.args[0].str()}"
                        if self._remaining() <= 0:
                            break
                        self.stop.wait(0.5)
                        continue
                    error = None
                    self.journal.append({"kind": "committed", "t": t, "done": time.time_ns(), "group": group,
                                         "offsets": [[tp.partition, tp.offset if tp.offset >= 0 else None]
                                                     for tp in sorted(got, key=lambda tp: tp.partition)]})
            finally:
                reader.close()
            if error is not None:
                self.journal.append({"kind": "committed_error", "t": time.time_ns(), "group": group, "error": error})
            self.journal.flush()

    def run(self) -> int:
        conf = self.conf()
        self.journal.append(process_line(self.config, consumer_effective(self.config, conf),
                                         timeout_s=self.config.timeout_s))
        self.journal.flush()
        consumer = Consumer({**conf, "error_cb": lambda err: self.journal.append(client_error_line(err))})
        try:
            complete, reason, behind = self._drain(consumer)
        finally:
            consumer.close()
        if self.config.groups and self.count is not None:
            self.deadline = max(self.deadline, time.monotonic() + 10.0)  # the offsets get their own time
            self._committed(self.count)
        return self._finish(complete, reason, behind)

    def _drain(self, consumer: Consumer) -> tuple[bool, str | None, dict[int, list[int]]]:
        """(complete, why not, partitions still behind)."""
        count = self.count = self.config.partitions or discover_partitions(consumer, self.config.topic, self.stop,
                                                                           self.deadline)
        if count is None:
            return False, "could not learn the topic's partitions", {}
        marks = self._watermarks(consumer, count)
        self.journal.append({"kind": "watermarks", "t": time.time_ns(),
                             "partitions": {str(p): list(m) for p, m in sorted(marks.items())}})
        if len(marks) < count:
            return False, f"no watermarks for partitions {sorted(set(range(count)) - set(marks))}", {}
        behind = self._read(consumer, marks)
        if behind:
            why = "stopped" if self.stop.requested else f"timed out after {self.config.timeout_s:.0f} s"
            return False, why, behind
        return True, None, {}
