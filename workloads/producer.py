"""The producer workload: unique values, round-robin over explicit partitions, every outcome journaled.

Loop: take the sends the rate limiter allows (a batch), journal them as one
``invoke`` line and flush it, only then hand them to librdkafka, poll(0) to
serve delivery reports, journal those as one ``ack`` line (plus an
``outcome`` line per failure). A killed producer therefore never sent a
value it did not journal; a send with no outcome becomes `info`.

On stop (SIGTERM): no more produce() calls; flush until librdkafka's queue is
empty (each in-flight send gets its delivery.timeout.ms), journal every
outcome, exit 0. A fatal librdkafka error stops producing the same way and
exits 1. Must never: retry a send itself (a retry would reuse a value), or
journal an outcome before its invoke.

The per-record path is kept free of Python-level work beyond the delivery
callback (see bench/bench_workload.py): acknowledged messages are collected
and their op ids and offsets extracted per batch with C-level iteration.
"""

from __future__ import annotations

import itertools
import json
import operator
import resource
import sys
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from workloads import exits
from workloads.classify import classify_delivery, classify_refused
from workloads.config import ProducerConfig
from workloads.journal import JournalSink
from workloads.lines import client_error_line, process_line
from workloads.ratelimit import RateLimiter
from workloads.settings import producer_conf, producer_effective
from workloads.stopping import StopFlag
from workloads.values import ValuePlan

FATAL_FLUSH_S = 30.0  # after a fatal error librdkafka fails what is queued; do not wait forever for it
DeliveryCallback = Callable[[KafkaError | None, Message], None]


class ProducerWorkload:
    def __init__(self, config: ProducerConfig, journal: JournalSink, stop: StopFlag) -> None:
        self.config = config
        self.journal = journal
        self.stop = stop
        self.effective = producer_effective(config)
        self.retries = int(self.effective["retries"])
        width = (config.value_size - len(config.value_prefix)) if config.value_size else 0
        self.plan = ValuePlan(config.value_prefix, width, config.partitions, config.key)
        self.counts = {"sent": 0, "ok": 0, "fail": 0, "info": 0}
        self.fatal: str | None = None
        self.next_op = 0
        self._acked: list[Message] = []
        self._unjournaled_ok = itertools.count()
        self._failures: list[dict[str, Any]] = []

    # -- delivery reports (served by poll/flush on this thread) -------------
    def delivery_callback(self) -> DeliveryCallback:
        """The hot path: one call per message, so a closure over locals and nothing else."""
        failed = self._delivery_failed
        if not self.journal.enabled:
            tick = self._unjournaled_ok.__next__

            def count_only(err: KafkaError | None, msg: Message) -> None:
                if err is None:
                    tick()
                else:
                    failed(err, msg)
            return count_only
        keep = self._acked.append

        def collect(err: KafkaError | None, msg: Message) -> None:
            if err is None:
                keep(msg)
            else:
                failed(err, msg)
        return collect

    def _delivery_failed(self, err: KafkaError, msg: Message) -> None:
        op = int((msg.value() or b"")[len(self.plan.prefix):])
        self._failed(op, time.time_ns(), *classify_delivery(err.name(), self.retries), msg.partition(), err.str())

    def _failed(self, op: int, t: int | None, status: str, error: str | None, partition: int | None,
                detail: str) -> None:
        self.counts[status] += 1
        if self.journal.enabled:
            self._failures.append({"kind": "outcome", "op": op, "t": t, "status": status, "error": error,
                                   "partition": partition, "detail": detail})

    def _client_error(self, err: KafkaError) -> None:
        self.journal.append(client_error_line(err))
        if err.fatal():
            self.fatal = f"{err.name()}: {err.str()}"

    def _journal_outcomes(self) -> None:
        acked = self._acked
        if acked:
            # Op ids as the digits of each value (comma-separated text), sliced in C: no per-record
            # Python work. acks=0 gives offset -1001; the history turns negative offsets into null.
            digits: Callable[[Any], bytes] = operator.itemgetter(slice(self.plan.op_start(self.next_op), None))
            ops = b",".join(map(digits, map(Message.value, acked))).decode()
            offsets = list(map(Message.offset, acked))
            self.counts["ok"] += len(offsets)
            acked.clear()
            self.journal.append({"kind": "ack", "t": time.time_ns(), "op": ops, "offset": offsets})
        for line in self._failures:
            self.journal.append(line)
        self._failures.clear()
        self.journal.flush()

    # -- sending -------------------------------------------------------------
    def _send_batch(self, producer: Producer, first: int, n: int) -> None:
        if self.journal.enabled:
            self.journal.append({"kind": "invoke", "t": time.time_ns(), "op": first, "n": n})
            self.journal.flush()
        self.next_op = first + n  # before any send: acks parsed mid-batch must know the widest op id
        plan, topic, produce = self.plan, self.config.topic, producer.produce
        prefix, width, partitions, keyless = plan.prefix, plan.width, plan.partitions, plan.key == "none"
        for op in range(first, first + n):
            value = prefix + str(op).zfill(width)  # = plan.value(op), inlined: this loop is the hot path
            key = None if keyless else plan.key_of(op, value)
            try:
                produce(topic, value, key, op % partitions)
            except BufferError:
                self._produce_when_room(producer, op, value, key, op % partitions)
            except KafkaException as exc:
                self._refused(op, op % partitions, exc.args[0])
        self.counts["sent"] += n

    def _produce_when_room(self, producer: Producer, op: int, value: str, key: str | None,
                           partition: int) -> None:
        """librdkafka's queue is full: serve delivery reports until there is room, unless stopping."""
        while True:
            if self.stop.requested or self.fatal:
                self._failed(op, time.time_ns(), *classify_refused("_QUEUE_FULL"), partition,
                             "not handed to librdkafka: its queue was full when the stop came")
                return
            producer.poll(0.01)
            self._journal_outcomes()
            try:
                producer.produce(self.config.topic, value, key, partition)
                return
            except BufferError:
                continue
            except KafkaException as exc:
                self._refused(op, partition, exc.args[0])
                return

    def _refused(self, op: int, partition: int, err: KafkaError) -> None:
        self._failed(op, time.time_ns(), *classify_refused(err.name()), partition, err.str())
        if err.fatal():
            self.fatal = f"{err.name()}: {err.str()}"

    # -- the process ---------------------------------------------------------
    def run(self) -> int:
        self.journal.append(process_line(self.config, self.effective, values=self.plan.to_json(),
                                         rate=self.config.rate))
        self.journal.flush()
        producer = Producer({**producer_conf(self.config), "on_delivery": self.delivery_callback(),
                             "error_cb": self._client_error})
        limiter = RateLimiter(self.config.rate, self.config.batch_size, time.monotonic())
        started = time.monotonic()
        while not self.stop.requested and self.fatal is None:
            due = limiter.take(time.monotonic())
            if due:
                self._send_batch(producer, self.next_op, due)
                producer.poll(0)
            else:
                producer.poll(min(limiter.wait_s(), 0.05))
            self._journal_outcomes()
        stopped = time.monotonic()
        self._flush(producer)
        drained = time.monotonic()
        if not self.journal.enabled:
            self.counts["ok"] = next(self._unjournaled_ok)
        self.journal.append({"kind": "end", "t": time.time_ns(), **self.counts, "fatal": self.fatal})
        self.journal.flush()
        usage = resource.getrusage(resource.RUSAGE_SELF)
        print(json.dumps({"process": self.config.process, "role": "producer", **self.counts,
                          "produce_s": round(stopped - started, 3), "total_s": round(drained - started, 3),
                          "cpu_s": round(usage.ru_utime + usage.ru_stime, 3),
                          "journal": self.journal.enabled}), flush=True)
        if self.fatal:
            print(f"{self.config.process}: librdkafka fatal error: {self.fatal}", file=sys.stderr)
            return exits.FAILED
        return exits.DONE

    def _flush(self, producer: Producer) -> None:
        """Serve delivery reports until nothing is outstanding (bounded only after a fatal error)."""
        deadline = time.monotonic() + FATAL_FLUSH_S
        while len(producer) > 0:
            producer.flush(1.0)
            self._journal_outcomes()
            if self.fatal and time.monotonic() > deadline:
                break
        self._journal_outcomes()
