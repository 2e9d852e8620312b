"""The live consumer: every record a poll returns, journaled as it came (phase `live`).

`assign` mode: a fixed assignment of every partition from the earliest
offset; it never seeks and never commits (its group id is a placeholder
librdkafka requires). `group` mode: subscribes with the configured group;
commits are automatic (`auto`, journaled from the commit callback) or
synchronous after each poll that returned records (`sync`, journaled from
the call's result). Rebalances are journaled too. Runs until SIGTERM, then
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

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

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


def offsets_of(partitions: list[TopicPartition]) -> list[list[Any]]:
    return [[tp.partition, tp.offset, tp.error.name() if tp.error else None] for tp in partitions]


class ConsumerWorkload:
    def __init__(self, config: ConsumerConfig, journal: JournalSink, stop: StopFlag) -> None:
        self.config = config
        self.journal = journal
        self.stop = stop
        self.fatal: str | None = None
        self.recorder = PollRecorder(journal, "live", config.group)

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
        self.journal.append({"kind": "commit", "t": time.time_ns(), "mode": "auto",
                             "error": err.name() if err else None, "offsets": offsets_of(partitions)})

    def _rebalanced(self, event: str) -> Any:
        def callback(consumer: Consumer, partitions: list[TopicPartition]) -> None:
            self.journal.append({"kind": "rebalance", "t": time.time_ns(), "event": event,
                                 "partitions": sorted(tp.partition for tp in partitions)})
            self.journal.flush()
        return callback

    def _commit_sync(self, consumer: Consumer) -> None:
        t = time.time_ns()
        try:
            committed = consumer.commit(asynchronous=False) or []
            line = {"kind": "commit", "t": t, "mode": "sync", "error": None, "offsets": offsets_of(committed)}
        except KafkaException as exc:
            err: KafkaError = exc.args[0]
            line = {"kind": "commit", "t": t, "mode": "sync", "error": err.name(), "offsets": [],
                    "detail": err.str()}
        self.journal.append(line)

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
        self.journal.append(process_line(self.config, consumer_effective(self.config, conf)))
        self.journal.flush()
        consumer = Consumer({**conf, **callbacks})
        if not self._start(consumer) and not self.stop.requested:
            self.fatal = f"could not learn the partitions of {self.config.topic} within {DISCOVERY_TIMEOUT_S:.0f} s"
        while not self.stop.requested and self.fatal is None:
            messages = consumer.consume(self.config.poll_batch, POLL_TIMEOUT_S)
            if messages:
                result = self.recorder.record(messages, time.time_ns())
                self.fatal = self.fatal or result.fatal
                if self.config.commit == "sync" and result.count:
                    self._commit_sync(consumer)
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
