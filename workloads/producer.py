"""The producer workload: unique values, round-robin over explicit partitions, every outcome journaled.

Loop: take the sends the rate limiter allows (a batch), journal them as one
``invoke`` line and flush it, only then hand them to librdkafka, poll(0) to
serve delivery reports, journal those as one ``ack`` line (plus an
``outcome`` line per failure). A killed producer therefore never sent a
value it did not journal; a send with no outcome becomes `info`.

A fatal librdkafka error (the idempotent producer's
OUT_OF_ORDER_SEQUENCE_NUMBER after an unclean leader election, say) ends the
librdkafka instance, not the process, as in a real application: the error
is journaled as a fatal ``client_error``; the instance's in-flight requests
may still bring their real answers for `FATAL_GRACE_S`; then purge() fails
whatever it still holds and those reports are served, so every send of the
instance has exactly one outcome (a failed one is `info` whatever its error:
a fatal instance may have written it). Only then is the instance dropped,
never to be polled again, and a fresh one with the same settings takes the
next op ids. More than `MAX_RESTARTS` fatal errors, or an instance that
cannot account for its sends, means something is broken: the producer stops
producing and exits 1 (its ``end`` line says why).

confluent-kafka 2.16.1 has no fatal_error() and never passes a fatal error
to error_cb: poll() (and flush()) raise it as a KafkaException whose error is
fatal (the original code, e.g. OUT_OF_ORDER_SEQUENCE_NUMBER), and produce()
on a fatal instance raises a plain `_FATAL`. Only poll() serves reports
here: flush() mishandles a fatal error (see `_flush`).

On stop (SIGTERM): no more produce() calls; serve reports until
librdkafka's queue is empty (each in-flight send gets its
delivery.timeout.ms), journal every outcome, exit 0 (a fatal error now
abandons the instance as above, with no replacement). Must never: retry a send itself (a retry would reuse a value),
or journal an outcome before its invoke. A send a fatal instance refused in
produce() was never taken by librdkafka: the fresh instance sending it is
its first send, not a retry.

The per-record path is kept free of Python-level work beyond the delivery
callback (see bench/bench_workload.py): acknowledged messages are collected
and their op ids and offsets extracted per batch with C-level iteration.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import operator
import resource
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from workloads import exits
from workloads.classify import Status, classify_delivery, classify_refused
from workloads.config import ProducerConfig
from workloads.journal import JournalSink
from workloads.lines import client_error_line, process_line
from workloads.ratelimit import RateLimiter
from workloads.settings import producer_conf, producer_effective
from workloads.stopping import StopFlag
from workloads.values import ValuePlan

FATAL_GRACE_S = 1.0  # after a fatal error, how long in-flight requests may still bring their real answers
PURGE_DRAIN_S = 10.0  # after a blocking purge() every report is queued already; serving them takes far less
MAX_RESTARTS = 20  # fatal errors beyond this are not elections at work: something is broken
DeliveryCallback = Callable[[KafkaError | None, Message], None]
ProducerFactory = Callable[[dict[str, Any]], Producer]


def is_fatal(err: Any) -> bool:
    """Whether a KafkaException's error says its instance is fatal: flagged so, or produce()'s `_FATAL`."""
    return isinstance(err, KafkaError) and (bool(err.fatal()) or err.code() == KafkaError._FATAL)


class ProducerWorkload:
    """`make_producer` builds each librdkafka instance from its settings (a seam for tests)."""

    def __init__(self, config: ProducerConfig, journal: JournalSink, stop: StopFlag,
                 make_producer: ProducerFactory = Producer) -> None:
        self.config = config
        self.journal = journal
        self.stop = stop
        self.make_producer = make_producer
        self.effective = producer_effective(config)
        self.retries = int(self.effective["retries"])
        width = (config.value_size - len(config.value_prefix)) if config.value_size else 0
        self.plan = ValuePlan(config.value_prefix, width, config.partitions, config.key)
        self.counts = {"sent": 0, "ok": 0, "fail": 0, "info": 0}
        self.producer: Producer  # the current librdkafka instance, from run() on
        self.fatal: KafkaError | None = None  # the current instance's fatal error, once seen
        self.restarts = 0
        self.gave_up: str | None = None
        self.next_op = 0
        self._acked: list[Message] = []
        self._unjournaled_ok = itertools.count()
        self._failures: list[dict[str, Any]] = []

    # -- delivery reports (served by poll() on this thread) ------------------
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
        status: Status
        if self.fatal is None:
            status, error = classify_delivery(err.name(), self.retries)
        else:  # the report of a fatal instance: even _PURGE_QUEUE may be a retry of a written batch
            status, error = "info", err.name()
        self._failed(op, time.time_ns(), status, error, msg.partition(), err.str())

    def _failed(self, op: int, t: int | None, status: str, error: str | None, partition: int | None,
                detail: str) -> None:
        self.counts[status] += 1
        if self.journal.enabled:
            self._failures.append({"kind": "outcome", "op": op, "t": t, "status": status, "error": error,
                                   "partition": partition, "detail": detail})

    def _client_error(self, err: KafkaError) -> None:
        if is_fatal(err):  # the binding raises fatal errors from poll() instead; in case it ever calls back
            self._fatal_seen(err)
        else:
            self.journal.append(client_error_line(err))

    def _fatal_seen(self, err: KafkaError) -> None:
        """Note that the current instance is fatal; journal its error once, the real one if it shows."""
        if err.fatal():
            if self.fatal is None or not self.fatal.fatal():
                self.fatal = err
                self.journal.append(client_error_line(err))
        elif self.fatal is None:
            self.fatal = err  # produce()'s bare _FATAL: the error behind it comes with the next poll

    @contextlib.contextmanager
    def _noting_fatal(self) -> Iterator[None]:
        """Around poll(): a fatal error it raises is noted for the loop; anything else propagates."""
        try:
            yield
        except KafkaException as exc:
            err = exc.args[0] if exc.args else None
            if not (isinstance(err, KafkaError) and err.fatal()):
                raise
            self._fatal_seen(err)

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
    def _send_batch(self, first: int, n: int) -> None:
        if self.journal.enabled:
            self.journal.append({"kind": "invoke", "t": time.time_ns(), "op": first, "n": n})
            self.journal.flush()
        self.next_op = first + n  # before any send: acks parsed mid-batch must know the widest op id
        op, end = first, first + n
        while op < end:
            op = self._hand_over(op, end)
            if op < end and not self._replace_producer():
                break
        for unsent in range(op, end):  # only when the producer gave up mid-batch
            self._failed(unsent, time.time_ns(), *classify_refused("_FATAL"), self.plan.partition(unsent),
                         "not handed to librdkafka: the producer gave up after fatal errors")
        self.counts["sent"] += n

    def _hand_over(self, first: int, end: int) -> int:
        """Hand ops first..end-1 to the current instance: `end`, or the first op it did not take, being fatal."""
        producer = self.producer
        plan, topic, produce = self.plan, self.config.topic, producer.produce
        prefix, width, partitions, keyless = plan.prefix, plan.width, plan.partitions, plan.key == "none"
        for op in range(first, end):
            value = prefix + str(op).zfill(width)  # = plan.value(op), inlined: this loop is the hot path
            key = None if keyless else plan.key_of(op, value)
            try:
                produce(topic, value, key, op % partitions)
            except BufferError:
                if not self._produce_when_room(producer, op, value, key, op % partitions):
                    return op
            except KafkaException as exc:
                if not self._refused(op, op % partitions, exc.args[0]):
                    return op
        return end

    def _produce_when_room(self, producer: Producer, op: int, value: str, key: str | None,
                           partition: int) -> bool:
        """librdkafka's queue is full: serve delivery reports until there is room, unless stopping.

        False: the instance turned fatal before it took the send.
        """
        while self.fatal is None:
            if self.stop.requested:
                self._failed(op, time.time_ns(), *classify_refused("_QUEUE_FULL"), partition,
                             "not handed to librdkafka: its queue was full when the stop came")
                return True
            with self._noting_fatal():
                producer.poll(0.01)
            self._journal_outcomes()
            try:
                producer.produce(self.config.topic, value, key, partition)
                return True
            except BufferError:
                continue
            except KafkaException as exc:
                return self._refused(op, partition, exc.args[0])
        return False

    def _refused(self, op: int, partition: int, err: KafkaError) -> bool:
        """produce() raised: journal the send as failed; False (nothing journaled) if the instance is fatal."""
        if is_fatal(err):
            self._fatal_seen(err)
            return False
        self._failed(op, time.time_ns(), *classify_refused(err.name()), partition, err.str())
        return True

    # -- instances -------------------------------------------------------------
    def _new_producer(self) -> Producer:
        return self.make_producer({**producer_conf(self.config), "on_delivery": self.delivery_callback(),
                                   "error_cb": self._client_error})

    def _replace_producer(self) -> bool:
        """Abandon the fatal instance and start a fresh one, unless it is time to give up (False)."""
        error = self._abandon()
        if self.gave_up is None and self.restarts >= MAX_RESTARTS:
            self.gave_up = f"{MAX_RESTARTS} producer restarts, then another fatal error: {error}"
        if self.gave_up is not None:
            return False
        self.restarts += 1
        self.producer = self._new_producer()
        return True

    def _abandon(self) -> str:
        """Give every send of the fatal instance its outcome and stop serving it; its error as text.

        librdkafka already purged its queue (reports of _PURGE_QUEUE); in-flight
        requests may still be answered for FATAL_GRACE_S, then purge() fails
        them (_PURGE_INFLIGHT). Outcomes come only from delivery reports, one a
        message, and the instance is never polled again: no op can get two.
        """
        producer = self.producer
        self._serve_until_empty(producer, FATAL_GRACE_S)
        producer.purge(in_queue=True, in_flight=True, blocking=True)
        self._serve_until_empty(producer, PURGE_DRAIN_S)
        fatal = self.fatal  # now the real error, if serving raised it
        assert fatal is not None
        if not fatal.fatal():  # only produce()'s bare _FATAL showed, never the error behind it
            self.journal.append(client_error_line(fatal, fatal=True))
        if len(producer) > 0:
            self.gave_up = (f"{len(producer)} sends of the producer instance that failed with {fatal.name()} "
                            f"got no outcome within {FATAL_GRACE_S + PURGE_DRAIN_S:.0f}s of purging it")
        self._journal_outcomes()
        self.fatal = None
        return f"{fatal.name()}: {fatal.str()}"

    def _serve_until_empty(self, producer: Producer, limit_s: float) -> None:
        deadline = time.monotonic() + limit_s
        while len(producer) > 0 and (left := deadline - time.monotonic()) > 0:
            with self._noting_fatal():
                producer.poll(min(left, 0.05))
            self._journal_outcomes()

    # -- the process ---------------------------------------------------------
    def run(self) -> int:
        self.journal.append(process_line(self.config, self.effective, values=self.plan.to_json(),
                                         rate=self.config.rate))
        self.journal.flush()
        self.producer = self._new_producer()
        limiter = RateLimiter(self.config.rate, self.config.batch_size, time.monotonic())
        started = time.monotonic()
        while not self.stop.requested and self.gave_up is None:
            due = limiter.take(time.monotonic())
            if due:
                self._send_batch(self.next_op, due)
            if self.gave_up is None:  # else self.producer is an abandoned instance: never polled again
                with self._noting_fatal():
                    self.producer.poll(0 if due else min(limiter.wait_s(), 0.05))
            self._journal_outcomes()
            if self.fatal is not None and not self.stop.requested:
                self._replace_producer()
        stopped = time.monotonic()
        if self.gave_up is None:
            self._flush()
        drained = time.monotonic()
        if not self.journal.enabled:
            self.counts["ok"] = next(self._unjournaled_ok)
        self.journal.append({"kind": "end", "t": time.time_ns(), **self.counts, "restarts": self.restarts,
                             "fatal": self.gave_up})
        self.journal.flush()
        usage = resource.getrusage(resource.RUSAGE_SELF)
        print(json.dumps({"process": self.config.process, "role": "producer", **self.counts,
                          "restarts": self.restarts, "produce_s": round(stopped - started, 3),
                          "total_s": round(drained - started, 3),
                          "cpu_s": round(usage.ru_utime + usage.ru_stime, 3),
                          "journal": self.journal.enabled}), flush=True)
        if self.gave_up:
            print(f"{self.config.process}: gave up after librdkafka fatal errors: {self.gave_up}", file=sys.stderr)
            return exits.FAILED
        return exits.DONE

    def _flush(self) -> None:
        """Serve delivery reports until nothing is outstanding; a fatal error abandons the instance."""
        producer = self.producer
        while len(producer) > 0 and self.fatal is None:
            with self._noting_fatal():
                # Not flush(): on a fatal error it goes on calling delivery callbacks with the exception
                # still set, and raises SystemError (confluent-kafka 2.16.1); poll() stops at the error.
                producer.poll(1.0)
            self._journal_outcomes()
        if self.fatal is not None:
            self._abandon()  # stopping: no fresh instance
        self._journal_outcomes()
