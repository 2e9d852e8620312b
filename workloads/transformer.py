"""The consume-transform-produce workload (`role: transformer`): one output per input, exactly once or at least once.

An instance joins the consumer group `group` on `input_topic` (read_committed,
no auto commit), and for each poll's records (at most `batch`) writes one
output each to `topic`, value ``<process>-<op>``, to the input's partition
(modulo the output's partitions), with the input's value as its `source`
(contract v2). Then, in mode

- ``exactly-once``: all of it inside one transaction of its transactional
  producer (`transactional_id`, the same for every instance of the process, so
  a new instance fences a killed one): begin, produce,
  send_offsets_to_transaction(the next offsets, the consumer's group
  metadata), commit. The input offsets are committed with the outputs or not
  at all, and a zombie (an instance that lost its partitions in a rebalance it
  did not see) is refused by the group's generation.
- ``at-least-once``: an idempotent producer, no transaction; once every output
  is acknowledged, the input offsets are committed synchronously. A failure
  or kill between the two reprocesses the batch (`reprocessed`, information).

librdkafka's error classes, as its documentation says: a retriable error
retries the same call (until the transaction timeout); txn_requires_abort
aborts and rewinds the input; a fatal error (fenced, say) abandons the
producer for a new instance with the same transactional.id (init_transactions
fences the old). Whenever a batch does not end committed, the input is
rewound to the group's committed offsets (read with require_stable, as
librdkafka does for read_committed), so it is processed again.

Journal (workloads/lines.py vocabulary): ``poll`` lines with a ``reader``
(``<process>/<instance>.<assignment>``: a group member that gets a partition
back after a rebalance resumes where another member left it, so each
assignment reads as its own reader, see docs/history.md), ``send`` lines (t,
txn, ops [[op, partition, source], ...]) before any produce, ``ack`` and
``outcome`` lines as the producer writes them, ``txn_begin``/``txn_end``
(with ``group`` and ``consumed``)/``txn_done``, ``commit`` (at-least-once).

The process runs its instances one at a time (workloads/supervisor.py, which
kills them on schedule); instance n numbers its ops and reads from n * 10**9,
so values and seqs stay unique and increasing per process. On SIGTERM an
instance ends its batch, leaves the group and exits 0.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)

from workloads import exits
from workloads.classify import classify_delivery
from workloads.config import TransformerConfig
from workloads.consumer import CLOSE_TIMEOUT_S, close_within
from workloads.journal import Journal
from workloads.lines import client_error_line, process_line
from workloads.reading import text
from workloads.settings import INT32_MAX, client_version
from workloads.stopping import StopFlag
from workloads.txn_producer import error_of

SPAN = 10**9  # op ids and read seqs of instance n start at n * SPAN
POLL_S = 0.2
CALL_S = 5.0  # per transactional call, retried while retriable up to the transaction timeout
SERVE_S = 30.0  # at-least-once: most time to wait for a batch's delivery reports


class Fatal(Exception):
    def __init__(self, err: KafkaError) -> None:
        super().__init__(err.str())
        self.err = err


def effective(config: TransformerConfig) -> dict[str, Any]:
    """The settings that matter to the verdict (a `processes` row per reader, all alike)."""
    out: dict[str, Any] = {"acks": "all", "enable.idempotence": True, "max.in.flight.requests.per.connection": 5,
                           "retries": INT32_MAX, "isolation.level": "read_committed", "enable.auto.commit": False,
                           "group.id": config.group, "mode": config.mode, "input_topic": config.input_topic,
                           "batch": config.batch, **config.kafka, "client": client_version()}
    if config.transactional_id is not None:
        out["transactional.id"] = config.transactional_id
        out["transaction.timeout.ms"] = int(str(config.kafka.get("transaction.timeout.ms", 60000)))
    return out


class Instance:
    """One librdkafka consumer + producer pair, until killed or stopped."""

    def __init__(self, config: TransformerConfig, journal: Journal, stop: StopFlag, instance: int,
                 killed_ns: int | None = None) -> None:
        self.c, self.journal, self.stop, self.instance = config, journal, stop, instance
        self.eos = config.mode == "exactly-once"
        self.timeout_s = int(effective(config).get("transaction.timeout.ms", 10000)) / 1000
        self.next_op = self.seq = instance * SPAN
        self.assignment = 0
        self.txns = 0
        self.pending: dict[int, tuple[str, str | None, int | None]] = {}  # op -> (status, error, offset)
        self.fatal: KafkaError | None = None
        journal.append(process_line(config, effective(config), instance=instance, input_topic=config.input_topic,
                                    after_kill_ns=killed_ns))
        journal.flush()  # before any client: an instance killed while it starts still says who it was
        self.consumer = self._consumer()
        self.producer = self._producer()

    # -- clients ---------------------------------------------------------------------
    def _consumer(self) -> Consumer:
        c = self.c
        consumer = Consumer({"bootstrap.servers": c.bootstrap, "client.id": c.process, "group.id": c.group,
                             "enable.auto.commit": False, "enable.auto.offset.store": False,
                             "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                             "session.timeout.ms": 6000, "heartbeat.interval.ms": 1000,
                             "max.poll.interval.ms": 60000,
                             "error_cb": lambda err: self.journal.append(client_error_line(err))})
        consumer.subscribe([c.input_topic], on_assign=self._rebalanced("assign"),
                           on_revoke=self._rebalanced("revoke"), on_lost=self._rebalanced("lost"))
        return consumer

    def _rebalanced(self, event: str) -> Any:
        def callback(consumer: Consumer, partitions: list[TopicPartition]) -> None:
            if event == "assign":
                self.assignment += 1
            self.journal.append({"kind": "rebalance", "t": time.time_ns(), "event": event,
                                 "partitions": sorted(tp.partition for tp in partitions)})
        return callback

    def _producer(self) -> Producer:
        c = self.c
        conf = {"bootstrap.servers": c.bootstrap, "client.id": c.process, "enable.idempotence": True,
                "acks": "all", "linger.ms": 5, **c.kafka, "error_cb": self._client_error}
        if c.transactional_id is not None:
            conf["transactional.id"] = c.transactional_id
        self.fatal = None
        while True:
            producer = self.producer = Producer(conf)  # served while init_transactions retries
            if not self.eos or self.stop.requested:
                return producer
            try:
                self._retry(lambda: producer.init_transactions(CALL_S))  # noqa: B023 (called right here)
                return producer
            except (Fatal, KafkaException) as exc:
                err = exc.err if isinstance(exc, Fatal) else error_of(exc)
                self.journal.append({**client_error_line(err), "detail": f"init_transactions: {err.str()}"})
                self.journal.flush()

    def _client_error(self, err: KafkaError) -> None:
        self.journal.append(client_error_line(err))
        if err.fatal():
            self.fatal = err

    def _retry(self, call: Any) -> None:
        """call() until it succeeds; retriable errors retried up to the transaction timeout.
        Raises KafkaException for txn_requires_abort, Fatal for anything else."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                call()
                return
            except KafkaException as exc:
                err = error_of(exc)
                if err.txn_requires_abort() and not err.fatal():
                    raise
                if err.fatal() or not err.retriable() or time.monotonic() >= deadline:
                    raise Fatal(err) from None
            self._serve(0)

    # -- delivery reports --------------------------------------------------------------
    def _delivered(self, op: int) -> Any:
        def callback(err: KafkaError | None, msg: Message) -> None:
            if err is None:
                self.pending[op] = ("ok", None, msg.offset())
            else:
                status, error = classify_delivery(err.name(), INT32_MAX) if self.fatal is None else ("info", err.name())
                self.pending[op] = (status, error, None)
        return callback

    def _serve(self, timeout: float) -> None:
        try:
            self.producer.poll(timeout)
        except KafkaException as exc:
            self.fatal = error_of(exc)

    def _journal_outcomes(self) -> None:
        acked = sorted(op for op, o in self.pending.items() if o[0] == "ok")
        if acked:
            self.journal.append({"kind": "ack", "t": time.time_ns(), "op": ",".join(map(str, acked)),
                                 "offset": [self.pending[op][2] for op in acked]})
        for op, (status, error, _) in sorted(self.pending.items()):
            if status != "ok":
                self.journal.append({"kind": "outcome", "op": op, "t": time.time_ns(), "status": status,
                                     "error": error, "partition": None, "detail": None})
        self.pending.clear()
        self.journal.flush()

    # -- one batch -----------------------------------------------------------------------
    def _record(self, messages: list[Message]) -> list[Message]:
        good = [m for m in messages if m.error() is None]
        for m in messages:
            err = m.error()
            if err is not None and err.code() != KafkaError._PARTITION_EOF:
                self.journal.append({"kind": "consume_error", "t": time.time_ns(), "error": err.name(),
                                     "detail": err.str(), "partition": m.partition()})
        if good:
            self.journal.append({"kind": "poll", "t": time.time_ns(), "seq": self.seq, "phase": "live",
                                 "group": self.c.group, "reader": f"{self.c.process}/{self.instance}.{self.assignment}",
                                 "records": [[m.partition(), m.offset(), text(m.key()), text(m.value()) or "",
                                              m.leader_epoch()] for m in good]})
            self.seq += len(good)
        return good

    def _produce(self, good: list[Message], txn: str | None) -> bool:
        """Hand one output per input to librdkafka; False if produce() refused any (the batch must not commit)."""
        first = self.next_op
        self.next_op += len(good)
        ops: list[tuple[int, int, str]] = [(first + i, (m.partition() or 0) % self.c.partitions, text(m.value()) or "")
                                           for i, m in enumerate(good)]
        self.journal.append({"kind": "send", "t": time.time_ns(), "txn": txn, "ops": [list(o) for o in ops]})
        self.journal.flush()
        refused = False
        for op, partition, _ in ops:
            while True:
                try:
                    self.producer.produce(self.c.topic, f"{self.c.process}-{op}", None, partition,
                                          on_delivery=self._delivered(op))
                    break
                except BufferError:
                    self._serve(0.05)
                except KafkaException as exc:
                    err = error_of(exc)
                    self.pending[op] = ("info" if self.fatal or err.fatal() else "fail", err.name(), None)
                    if err.fatal() or err.code() == KafkaError._FATAL:
                        self.fatal = self.fatal or err
                    refused = True
                    break
        return not refused

    @staticmethod
    def _next_offsets(good: list[Message]) -> list[TopicPartition]:
        ends: dict[tuple[str, int], int] = {}
        for m in good:
            key = (str(m.topic()), int(m.partition() or 0))
            ends[key] = max(ends.get(key, -1), int(m.offset() or 0) + 1)
        return [TopicPartition(t, p, o) for (t, p), o in sorted(ends.items())]

    def _exactly_once(self, good: list[Message]) -> bool:
        txn = f"{self.c.process}-{self.instance}-t{self.txns}"
        try:
            self.producer.begin_transaction()
        except KafkaException as exc:
            self.fatal = self.fatal or error_of(exc)
            self.journal.append({**client_error_line(error_of(exc)), "detail": "begin_transaction"})
            return False
        self.txns += 1
        self.journal.append({"kind": "txn_begin", "t": time.time_ns(), "txn": txn})
        whole = self._produce(good, txn)
        offsets = self._next_offsets(good)
        consumed = [{"topic": tp.topic, "partition": tp.partition, "offset": tp.offset} for tp in offsets]
        status, error = self._end(txn, offsets, consumed, whole)
        self._serve(0)
        self._journal_outcomes()
        self.journal.append({"kind": "txn_done", "t": time.time_ns(), "txn": txn, "status": status, "error": error})
        self.journal.flush()
        if status == "info" and self.fatal is None:  # unknown: a new instance resolves it before anything else
            self.fatal = KafkaError(KafkaError._FAIL, f"{txn}: outcome unknown ({error})")
        return status == "ok"

    def _end(self, txn: str, offsets: list[TopicPartition], consumed: list[dict[str, Any]],
             whole: bool) -> tuple[str, str | None]:
        """Commit the transaction with the input offsets (abort it if an output was refused): (status, error)."""
        ended = False

        def end_line() -> None:
            self.journal.append({"kind": "txn_end", "t": time.time_ns(), "txn": txn, "intent": "commit",
                                 "group": self.c.group, "consumed": consumed})
            self.journal.flush()
        try:
            if self.fatal is not None:
                raise Fatal(self.fatal)
            if not whole:  # an input without its output must not be marked consumed: abort, as if asked to
                raise KafkaException(KafkaError(KafkaError._INVALID_ARG, "produce() refused an output"))
            metadata = self.consumer.consumer_group_metadata()
            self._retry(lambda: self.producer.send_offsets_to_transaction(offsets, metadata, CALL_S))
            end_line()
            ended = True
            self._retry(lambda: self.producer.commit_transaction(CALL_S))
            return "ok", None
        except Fatal as exc:
            self.fatal = self.fatal or exc.err
            if not ended:
                end_line()
            return ("info" if ended else "fail"), exc.err.name()
        except KafkaException as exc:  # txn_requires_abort
            cause = error_of(exc).name()
            if not ended:
                end_line()
            try:
                self._retry(lambda: self.producer.abort_transaction(CALL_S))
                return "fail", cause
            except (Fatal, KafkaException) as again:
                self.fatal = self.fatal or (again.err if isinstance(again, Fatal) else error_of(again))
                return ("info" if ended else "fail"), cause

    def _at_least_once(self, good: list[Message]) -> bool:
        self._produce(good, None)  # a refused output fails the batch below: its offsets are not committed
        ops = set(range(self.next_op - len(good), self.next_op))
        deadline = time.monotonic() + SERVE_S
        while len(self.producer) > 0 and time.monotonic() < deadline and self.fatal is None:
            self._serve(0.05)
        ok = all(self.pending.get(op, ("info",))[0] == "ok" for op in ops) and len(self.producer) == 0
        self._journal_outcomes()
        if not ok:
            return False
        offsets = self._next_offsets(good)
        line: dict[str, Any] = {"kind": "commit", "t": time.time_ns(), "mode": "sync", "error": None,
                                "offsets": [[tp.partition, tp.offset, None] for tp in offsets]}
        try:
            self.consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as exc:
            line["error"] = error_of(exc).name()
        self.journal.append(line)
        return line["error"] is None

    # -- recovering -----------------------------------------------------------------------
    def _renew(self) -> None:
        """Abandon a fatal producer (every send gets its outcome) for a new instance with the same id."""
        old = self.producer
        old.purge(in_queue=True, in_flight=True, blocking=True)
        deadline = time.monotonic() + 10.0
        while len(old) > 0 and time.monotonic() < deadline:
            self._serve(0.05)
        self._serve(0)
        self._journal_outcomes()
        self.journal.append({"kind": "renew", "t": time.time_ns(), "error": self.fatal.name() if self.fatal else None})
        self.producer = self._producer()

    def _rewind(self) -> None:
        """Back to the group's committed offsets (what the next owner would read from); rejoin if they cannot be had."""
        try:
            assigned = self.consumer.assignment()
            committed = self.consumer.committed(assigned, timeout=10.0) if assigned else []
            for tp in committed:
                offset = tp.offset if tp.offset >= 0 else OFFSET_BEGINNING
                self.consumer.seek(TopicPartition(tp.topic, tp.partition, offset))
            self.journal.append({"kind": "rewind", "t": time.time_ns(),
                                 "offsets": [[tp.partition, tp.offset] for tp in committed]})
        except KafkaException as exc:
            self.journal.append({"kind": "rewind", "t": time.time_ns(), "error": error_of(exc).name(),
                                 "detail": "rejoining the group"})
            self.consumer.close()
            self.consumer = self._consumer()

    # -- the loop -------------------------------------------------------------------------
    def run(self) -> int:
        c = self.c
        while not self.stop.requested:
            good = self._record(self.consumer.consume(c.batch, POLL_S))
            if good:  # a record of a partition revoked meanwhile is the new owner's to process (KIP-447)
                owned = {(tp.topic, tp.partition) for tp in self.consumer.assignment()}
                good = [m for m in good if (m.topic(), m.partition()) in owned]
            if good:
                done = self._exactly_once(good) if self.eos else self._at_least_once(good)
                if self.fatal is not None:
                    self._renew()
                if not done:
                    self._rewind()
            self._serve(0)
            self._journal_outcomes()
        # Bounded as the consumer's is (workloads.consumer.close_within): librdkafka may never return from close().
        closed = close_within(self.consumer, CLOSE_TIMEOUT_S)
        self.journal.append({"kind": "end", "t": time.time_ns(), "transactions": self.txns,
                             "ops": self.next_op - self.instance * SPAN, "close": "ok" if closed else "timeout"})
        self.journal.flush()
        if not closed:
            print(f"{self.c.process}: close() did not return within {CLOSE_TIMEOUT_S:.0f} s; exiting without it",
                  file=sys.stderr, flush=True)
            self.journal.close()
            os._exit(exits.DONE)  # the client's threads are stuck in close: no interpreter shutdown waits for them
        return exits.DONE
