"""The transactional producer (contract v2): the producer workload's sends, grouped into transactions.

One loop step is one transaction: begin it, journal its sends (an ``invoke``
line carrying ``txn``) before handing them to librdkafka, round-robin over
the partitions as every producer does (so a transaction of several sends
spans several partitions), then end it with the intent it was given (a
deliberate abort for a seeded share `txn_abort_share` of them, after its
sends were written, else commit), journaled *before* commit_transaction() or abort_transaction() is called.
Its outcome follows librdkafka's error classes as its documentation says:

- retriable (a timeout, the coordinator moving): call the same method again,
  until `transaction.timeout.ms` has passed since the end was asked for;
- txn_requires_abort: abort_transaction(), and the transaction is `fail`
  once the abort succeeded (the error that forced it is kept);
- fatal (fenced, an idempotence error) or anything else: the instance is
  abandoned as `workloads.producer` abandons one (every send gets its
  outcome), and a new one with the same `transactional.id` is made, whose
  init_transactions() fences the old one.

Status, per the contract: `ok` when commit_transaction() returned; `fail`
when abort_transaction() returned, or when commit was never asked for (no
EndTxn(commit) was ever sent, so no broker can commit it); `info` whenever
commit was asked for and neither success nor a completed abort came back.
A transaction begun but never ended (the process died) has no ``txn_end``
line: the history makes it `info`, intent and end_ns null.
"""

from __future__ import annotations

import json
import random
import resource
import sys
import time
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from workloads import exits
from workloads.classify import classify_refused
from workloads.lines import process_line
from workloads.producer import ProducerWorkload
from workloads.ratelimit import RateLimiter

# What librdkafka reports once a newer instance with the same transactional.id took over (a fatal error).
FENCED_CODES = (KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH)
INIT_TIMEOUT_S = 10.0  # per init_transactions() call; retried while retriable
END_CALL_S = 5.0  # per commit/abort call; retried while retriable, up to the transaction timeout


class TxnFailed(Exception):
    """A transactional call failed in a way that ends the instance (fatal, or not retriable in time)."""

    def __init__(self, err: KafkaError) -> None:
        super().__init__(err.str())
        self.err = err


def error_of(exc: KafkaException) -> KafkaError:
    err = exc.args[0] if exc.args else None
    return err if isinstance(err, KafkaError) else KafkaError(KafkaError._FAIL, str(exc))


class TxnProducerWorkload(ProducerWorkload):
    """A producer whose every send belongs to a transaction of `config.txn_size` sends."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.timeout_s = int(self.effective["transaction.timeout.ms"]) / 1000
        self.rng = random.Random(self.config.transactional_id)
        self.txns = {"transactions": 0, "committed": 0, "aborted": 0, "unknown": 0}
        self.next_txn = 0
        self.fenced: str | None = None  # the error that fenced the instance, once the process ends for it

    # -- librdkafka's transactional calls ---------------------------------------
    def _call(self, method: str, limit_s: float, per_call_s: float) -> None:
        """Call producer.<method>(timeout) until it succeeds; retriable errors retried until `limit_s`.

        Raises KafkaException for txn_requires_abort (the caller aborts), TxnFailed for anything else.
        """
        deadline = time.monotonic() + limit_s
        while True:
            try:
                getattr(self.producer, method)(per_call_s)
                return
            except KafkaException as exc:
                err = error_of(exc)
                if err.fatal():
                    self._fatal_seen(err)
                    raise TxnFailed(err) from None
                if err.txn_requires_abort():
                    raise
                if not err.retriable() or time.monotonic() >= deadline:
                    raise TxnFailed(err) from None
            self._journal_outcomes()

    def _init(self) -> bool:
        """init_transactions() on the current instance (fencing any older one); False if it cannot."""
        while not self.stop.requested and self.gave_up is None:
            try:
                self._call("init_transactions", self.timeout_s, INIT_TIMEOUT_S)
                return True
            except (TxnFailed, KafkaException) as exc:
                err = exc.err if isinstance(exc, TxnFailed) else error_of(exc)
                self.journal.append({"kind": "client_error", "t": time.time_ns(), "error": err.name(),
                                     "detail": f"init_transactions: {err.str()}", "fatal": bool(err.fatal())})
                if self.fatal is None:
                    self.fatal = err  # not fatal itself, but the instance cannot start: replaced all the same
                self._replace_producer()
        return False

    def _end(self, intent: str) -> tuple[str, str | None]:
        """Commit or abort the open transaction: its (status, error)."""
        try:
            if intent == "commit":
                self._call("commit_transaction", self.timeout_s, END_CALL_S)
                return "ok", None
            # A deliberate abort comes after its sends were written (served until librdkafka holds none), so
            # the log holds aborted records for read_committed readers to skip: aborting from the queue would
            # only purge them unsent.
            self._serve_until_empty(self.producer, self.timeout_s)
            self._call("abort_transaction", self.timeout_s, END_CALL_S)
            return "fail", None
        except TxnFailed as exc:
            # Only an asked-for commit can have committed: an abort, or a commit refused before it, cannot.
            return ("info" if intent == "commit" else "fail"), exc.err.name()
        except KafkaException as exc:  # txn_requires_abort
            cause = error_of(exc).name()
            try:
                self._call("abort_transaction", self.timeout_s, END_CALL_S)
                return "fail", cause
            except (TxnFailed, KafkaException) as again:
                if self.fatal is None and isinstance(again, KafkaException):
                    self.fatal = error_of(again)
                return ("info" if intent == "commit" else "fail"), cause

    # -- one transaction -----------------------------------------------------------
    def _transaction(self, size: int) -> None:
        txn = f"{self.config.process}-t{self.next_txn}"
        self.next_txn += 1
        begin_ns = time.time_ns()
        try:
            self.producer.begin_transaction()
        except KafkaException as exc:
            err = error_of(exc)
            self.journal.append({"kind": "client_error", "t": time.time_ns(), "error": err.name(),
                                 "detail": f"begin_transaction: {err.str()}", "fatal": bool(err.fatal())})
            self.fatal = self.fatal or err
            return  # nothing was begun: no row, no sends
        self.txns["transactions"] += 1
        self.journal.append({"kind": "txn_begin", "t": begin_ns, "txn": txn})
        first = self.next_op
        self.journal.append({"kind": "invoke", "t": time.time_ns(), "op": first, "n": size, "txn": txn})
        self.journal.flush()
        self.next_op = first + size
        handed = self._hand_over(first, first + size) if self.fatal is None else first
        for unsent in range(handed, first + size):  # the instance turned fatal: never taken by librdkafka
            self._failed(unsent, time.time_ns(), *classify_refused("_FATAL"), self.plan.partition(unsent),
                         "not handed to librdkafka: the transaction's producer instance turned fatal")
        self.counts["sent"] += size
        intent = "abort" if self.rng.random() < self.config.txn_abort_share else "commit"
        self.journal.append({"kind": "txn_end", "t": time.time_ns(), "txn": txn, "intent": intent})
        self.journal.flush()
        status: str
        error: str | None
        if self.fatal is not None:
            status, error = "fail", self.fatal.name()  # commit never asked for: nothing can commit it
        else:
            status, error = self._end(intent)
        with self._noting_fatal():
            self.producer.poll(0)
        self._journal_outcomes()
        self.txns[{"ok": "committed", "fail": "aborted", "info": "unknown"}[status]] += 1
        self.journal.append({"kind": "txn_done", "t": time.time_ns(), "txn": txn, "status": status,
                             "error": error})
        self.journal.flush()
        if status == "info" and self.fatal is None:  # unknown, yet the instance lives: start afresh all the same
            self.fatal = KafkaError(KafkaError._FAIL, f"{txn}: outcome unknown ({error})")

    def _renew(self) -> None:
        """Abandon the current instance for a new one with the same transactional.id, and init it."""
        if self._replace_producer():
            self._init()

    def _fenced_out(self) -> bool:
        """Whether this process ends now: `fenced: exit`, and its instance was fenced."""
        assert self.fatal is not None
        fenced = self.fatal.code() in FENCED_CODES or "fenced" in (self.fatal.str() or "").lower()
        if fenced and self.config.fenced == "exit" and self.fenced is None:
            self.fenced = self.fatal.name()
            print(f"{self.config.process}: fenced ({self.fenced}): a newer instance owns its transactional.id; "
                  f"ending as configured (fenced: exit)", file=sys.stderr, flush=True)
        return self.fenced is not None

    # -- the process ------------------------------------------------------------------
    def run(self) -> int:
        self.journal.append(process_line(self.config, self.effective, values=self.plan.to_json(),
                                         rate=self.config.rate))
        self.journal.flush()
        self.producer = self._new_producer()
        self._init()
        size = self.config.txn_size
        limiter = RateLimiter(self.config.rate, size, time.monotonic())
        credit, started = 0, time.monotonic()
        while not self.stop.requested and self.gave_up is None:
            credit += limiter.take(time.monotonic())
            if credit >= size:
                credit -= size
                self._transaction(size)
            else:
                with self._noting_fatal():
                    self.producer.poll(min(limiter.wait_s() or 0.01, 0.05))
                self._journal_outcomes()
            if self.fatal is not None and self._fenced_out():
                break  # `fenced: exit`: the newer instance owns the transactional.id now
            if self.fatal is not None and not self.stop.requested:
                self._renew()
        if self.fatal is not None and self.gave_up is None:
            self._abandon()
        elif self.gave_up is None:
            self._flush()
        if not self.journal.enabled:
            self.counts["ok"] = next(self._unjournaled_ok)
        self.journal.append({"kind": "end", "t": time.time_ns(), **self.counts, **self.txns,
                             "restarts": self.restarts, "fatal": self.gave_up, "fenced": self.fenced})
        self.journal.flush()
        usage = resource.getrusage(resource.RUSAGE_SELF)
        print(json.dumps({"process": self.config.process, "role": "producer", **self.counts, **self.txns,
                          "restarts": self.restarts, "total_s": round(time.monotonic() - started, 3),
                          "cpu_s": round(usage.ru_utime + usage.ru_stime, 3)}), flush=True)
        if self.gave_up:
            print(f"{self.config.process}: gave up after librdkafka fatal errors: {self.gave_up}", file=sys.stderr)
            return exits.FAILED
        return exits.FENCED if self.fenced else exits.DONE
