"""The live consumer: every record a poll returns, journaled as it came (phase `live`).

`assign` mode: a fixed assignment of every partition from the earliest
offset; it never seeks and never commits (its group id is a placeholder
librdkafka requires). `group` mode: subscribes with the configured group and
commits as `commit` says (contract v3), each commit of a poll naming the next
offset (last + 1) of every partition the poll returned records of:

- ``before`` (at-most-once): commit synchronously, then `processing_ms`, then journal the poll; a poll whose
  commit did not succeed on every partition journals none of its records.
- ``after`` (at-least-once): journal the poll, then `processing_ms`, then commit synchronously.
- ``auto``: librdkafka's enable.auto.commit with the offsets stored at poll; its commit callback journals
  each outcome. It spends `processing_ms`, then journals the poll: the automatic commit, every
  auto.commit.interval.ms on librdkafka's own thread, may take a poll's offsets while it is processed (a crash
  then skips it) or not yet take those of polls already journaled (a crash then repeats them).
- ``none``: never commits; journals the poll, then spends `processing_ms`.

A synchronous commit is journaled (``commit_begin``, flushed) before it is asked for, and its outcome
per partition after (``commit``): a commit the process did not see end is `info` in the history.
Rebalances are journaled too. Under the supervisor (workloads/supervisor.py, `kill_every_s`) each
instance writes its own journal and numbers its reads from instance * SPAN. Runs until SIGTERM, then
closes (leaving the group) and exits 0; a fatal client error exits 1. A close that
has not returned within CLOSE_TIMEOUT_S (librdkafka 2.1 and 2.2 sometimes never return
from it after leader moves) is journaled in the end line (`close: timeout`) and the
process exits without it: every read was journaled before, and the harness gives a
consumer STOP_GRACE_S (15 s) to stop.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message, TopicPartition

from workloads import exits
from workloads.config import ConsumerConfig
from workloads.journal import JournalSink
from workloads.lines import client_error_line, process_line
from workloads.reading import PollRecorder, discover_partitions
from workloads.settings import consumer_effective
from workloads.stopping import StopFlag

POLL_TIMEOUT_S = 0.2
CLOSE_TIMEOUT_S = 8.0
DISCOVERY_TIMEOUT_S = 60.0
SPAN = 10**9  # the read seqs of instance n start at n * SPAN
NO_OFFSET = "_NO_OFFSET"  # librdkafka's "nothing to commit": an automatic commit that was not made


def offsets_of(partitions: list[TopicPartition]) -> list[list[Any]]:
    """[[partition, offset, error], ...] of the partitions a commit reported, those with an offset only."""
    return [[tp.partition, tp.offset, tp.error.name() if tp.error else None] for tp in partitions if tp.offset >= 0]


def next_offsets(messages: list[Message]) -> dict[int, int]:
    """The offset to commit per partition after a poll: its last record's offset + 1 (Kafka's convention)."""
    offsets: dict[int, int] = {}
    for msg in messages:
        partition, offset = msg.partition(), msg.offset()
        if msg.error() is None and partition is not None and offset is not None:
            offsets[partition] = max(offsets.get(partition, 0), offset + 1)
    return offsets


class ConsumerWorkload:
    def __init__(self, config: ConsumerConfig, journal: JournalSink, stop: StopFlag, instance: int = 0,
                 killed_ns: int | None = None, processing: Any = None) -> None:
        self.config = config
        self.journal = journal
        self.stop = stop
        self.fatal: str | None = None
        self.recorder = PollRecorder(journal, "live", config.group)
        self.recorder.seq = instance * SPAN
        self.instance, self.killed_ns = instance, killed_ns
        self.commits = 0  # synchronous commits asked for (their ids)
        self.processing = processing  # the supervisor's flag (a shared byte): 1 while processing, where kills aim

    def conf(self) -> dict[str, Any]:
        c = self.config
        conf: dict[str, Any] = {"bootstrap.servers": c.bootstrap, "client.id": c.process,
                                "auto.offset.reset": "earliest"}
        if c.mode == "assign":
            conf.update({"group.id": f"faultline-assign-{c.process}", "enable.auto.commit": False,
                         "enable.auto.offset.store": False})
        else:
            conf.update({"group.id": c.group, "enable.auto.commit": c.commit == "auto"})
        conf.update(c.kafka)
        return conf

    # -- callbacks ---------------------------------------------------------
    def _client_error(self, err: KafkaError) -> None:
        self.journal.append(client_error_line(err))
        if err.fatal():
            self.fatal = f"{err.name()}: {err.str()}"

    def _auto_committed(self, err: KafkaError | None, partitions: list[TopicPartition]) -> None:
        if err is not None and err.name() == NO_OFFSET:
            return
        t = time.time_ns()  # the callback knows no request time: the outcome's is the best there is
        self.journal.append({"kind": "commit", "t": t, "done": t, "mode": "auto",
                             "error": err.name() if err else None, "offsets": offsets_of(partitions)})

    def _rebalanced(self, event: str) -> Any:
        def callback(consumer: Consumer, partitions: list[TopicPartition]) -> None:
            self.journal.append({"kind": "rebalance", "t": time.time_ns(), "event": event,
                                 "partitions": sorted(tp.partition for tp in partitions)})
            self.journal.flush()
        return callback

    def _commit_sync(self, consumer: Consumer, offsets: dict[int, int]) -> bool:
        """Commit `offsets` synchronously, journaled before and after; whether every partition's succeeded."""
        self.commits += 1
        asked = sorted(offsets.items())
        t = time.time_ns()
        self.journal.append({"kind": "commit_begin", "t": t, "id": self.commits, "mode": "sync",
                             "offsets": [[p, o] for p, o in asked]})
        self.journal.flush()  # a commit the process is killed in is one it asked for: `info`, not absent
        line: dict[str, Any] = {"kind": "commit", "t": t, "id": self.commits, "mode": "sync", "error": None}
        try:
            done = consumer.commit(offsets=[TopicPartition(self.config.topic, p, o) for p, o in asked],
                                   asynchronous=False) or []
            line["offsets"] = offsets_of(done)
        except KafkaException as exc:
            err: KafkaError = exc.args[0]
            line.update(error=err.name(), detail=err.str(), offsets=[[p, o, err.name()] for p, o in asked])
        line["done"] = time.time_ns()
        self.journal.append(line)
        self.journal.flush()
        return line["error"] is None and all(e[2] is None for e in line["offsets"])

    def _handle(self, consumer: Consumer, messages: list[Message], poll_ns: int) -> None:
        """One poll's records: committed and journaled in the order the commit mode says, `processing_ms` spent
        where a crash shows the mode's guarantee: between the commit and the record (before: the records are
        committed and never handed on; auto: their offsets stored at poll, which an automatic commit during the
        processing takes), else between the record and the commit (after: handed on and not yet committed, so
        the next owner is handed them again)."""
        mode, offsets = self.config.commit, next_offsets(messages)
        if mode == "before" and offsets and not self._commit_sync(consumer, offsets):
            messages = [m for m in messages if m.error() is not None]  # nothing from a poll whose commit failed
        processed_first = mode in ("before", "auto")
        if processed_first:
            self._process(messages)
        result = self.recorder.record(messages, poll_ns)
        self.fatal = self.fatal or result.fatal
        if not processed_first:
            self.journal.flush()  # handed on: in the journal before the processing a crash interrupts
            self._process(messages)
        if mode == "after" and offsets:
            self._commit_sync(consumer, offsets)

    def _process(self, messages: list[Message]) -> None:
        if self.config.processing_ms and any(m.error() is None for m in messages):
            if self.processing is not None:
                self.processing.value = 1
            time.sleep(self.config.processing_ms / 1000)  # the processing a crash interrupts
            if self.processing is not None:
                self.processing.value = 0

    # -- the loop ----------------------------------------------------------
    def _start(self, consumer: Consumer) -> bool:
        c = self.config
        if c.mode == "group":
            consumer.subscribe([c.topic], on_assign=self._rebalanced("assign"),
                               on_revoke=self._rebalanced("revoke"), on_lost=self._rebalanced("lost"))
            return True
        count = c.partitions or discover_partitions(consumer, c.topic, self.stop,
                                                    time.monotonic() + DISCOVERY_TIMEOUT_S)
        if count is None:
            return False
        consumer.assign([TopicPartition(c.topic, p, OFFSET_BEGINNING) for p in range(count)])
        self.journal.append({"kind": "rebalance", "t": time.time_ns(), "event": "assign",
                             "partitions": list(range(count))})
        return True

    def run(self) -> int:
        conf = self.conf()
        callbacks: dict[str, Any] = {"error_cb": self._client_error}
        if self.config.commit == "auto":
            callbacks["on_commit"] = self._auto_committed
        self.journal.append(process_line(self.config, consumer_effective(self.config, conf), commit=self.config.commit,
                                         instance=self.instance, after_kill_ns=self.killed_ns))
        self.journal.flush()
        consumer = Consumer({**conf, **callbacks})
        if not self._start(consumer) and not self.stop.requested:
            self.fatal = f"could not learn the partitions of {self.config.topic} within {DISCOVERY_TIMEOUT_S:.0f} s"
        while not self.stop.requested and self.fatal is None:
            messages = consumer.consume(self.config.poll_batch, POLL_TIMEOUT_S)
            if messages:
                self._handle(consumer, messages, time.time_ns())
            self.journal.flush()
        closed = close_within(consumer, CLOSE_TIMEOUT_S)
        self.journal.append({"kind": "end", "t": time.time_ns(), "records": self.recorder.seq, "fatal": self.fatal,
                             "close": "ok" if closed else "timeout"})
        self.journal.flush()
        print(json.dumps({"process": self.config.process, "role": "consumer", "records": self.recorder.seq}),
              flush=True)
        code = exits.DONE
        if not closed:
            print(f"{self.config.process}: close() did not return within {CLOSE_TIMEOUT_S:.0f} s; exiting without it",
                  file=sys.stderr)
        if self.fatal:
            print(f"{self.config.process}: {self.fatal}", file=sys.stderr)
            code = exits.FAILED
        if not closed:
            sys.stderr.flush()
            os._exit(code)  # the client's threads are stuck in close: no interpreter shutdown waits for them
        return code


def close_within(consumer: Consumer, timeout_s: float) -> bool:
    """consumer.close() in a thread of its own; False if it has not returned within `timeout_s`."""
    closer = threading.Thread(target=consumer.close, name="consumer-close", daemon=True)
    closer.start()
    closer.join(timeout_s)
    return not closer.is_alive()
