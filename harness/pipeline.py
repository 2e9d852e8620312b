"""Judging finished runs on one worker thread while the next run's story plays: the checker off the wall clock.

A configuration's story is over once its cluster is torn down and its
journals are complete (harness.run.run_story); its judgement (history tables,
replica dumps, the Spark check, verdict, reports) needs no cluster. One worker
thread, at a lower CPU priority than the story (harness.priority: it and the
JVMs it starts run niced), takes the judgements in order, each once the next
story is under way (`release`: never beside a bring-up), and the last one when
the block ends. The checker's engine is warmed up (`warm_up`, e.g. Spark's JVM
and one small shuffle) on the worker as soon as the first story runs.

Leaving the block waits for every submitted judgement; after an exception
(an interrupt, a signal) the wait is bounded by `grace_s`, and a judgement
that never started by then is cancelled (its future says so).
Must never: judge two runs at once, lose a judgement's exception, or return
(without an exception in flight) before every submitted run was judged.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from types import TracebackType
from typing import TypeVar

from harness.priority import lower_this_thread, renice_process

log = logging.getLogger("faultline.pipeline")
T = TypeVar("T")
GRACE_S = 300.0  # after an interrupt: how long the runs already made may still take to be judged


class JudgingPipeline:
    """`submit` a judgement; it runs after the next `release`, or when the block ends, which waits for them."""

    def __init__(self, warm_up: Callable[[], None] | None = None, jvm_pid: Callable[[], int | None] | None = None,
                 grace_s: float = GRACE_S) -> None:
        """`warm_up`: run on the worker at the first `release`; `jvm_pid`: the engine's JVM to renice, if any."""
        self._queue: queue.Queue[tuple[threading.Event, Callable[[], None]] | None] = queue.Queue()
        self._gates: list[threading.Event] = []
        self._warm_up = warm_up
        self._jvm_pid = jvm_pid
        self._futures: list[Future[object]] = []
        self.grace_s = grace_s
        self._worker = threading.Thread(target=self._work, name="judge", daemon=True)
        self._worker.start()

    def _work(self) -> None:
        lower_this_thread()
        while (item := self._queue.get()) is not None:
            gate, task = item
            gate.wait()
            self._renice_engine()
            task()

    def _renice_engine(self) -> None:
        pid = self._jvm_pid() if self._jvm_pid is not None else None
        if pid is not None:
            renice_process(pid)

    def submit(self, judge: Callable[[], T], done: Callable[[Future[T]], None]) -> Future[T]:
        """Queue `judge`; `done(future)` is called on the worker once it has returned (or raised)."""
        gate = threading.Event()
        future: Future[T] = Future()
        self._gates.append(gate)
        self._futures.append(future)  # type: ignore[arg-type]

        def task() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(judge())
            except BaseException as exc:  # noqa: BLE001 - kept in the future, raised by whoever asks
                future.set_exception(exc)
            _quietly(lambda: done(future), "reporting a judgement")
        self._queue.put((gate, task))
        return future

    def release(self, warm_up_log: Callable[[], contextlib.AbstractContextManager[object]] | None = None) -> None:
        """Let every queued judgement start (a story is under way: the CPU has room); the first time, warm up,
        inside `warm_up_log()` (where what the warm-up says, e.g. the JVM's start-up lines, is kept: the story's
        run, even once that story is over and the warm-up still goes on)."""
        if self._warm_up is not None:
            warm_up, self._warm_up = self._warm_up, None
            logged = warm_up_log or contextlib.nullcontext

            def warm() -> None:
                with logged():
                    _quietly(warm_up, "warming the checker up")
            self._queue.put((_open(), warm))
        for gate in self._gates:
            gate.set()

    def wait(self, timeout: float | None) -> list[Future[object]]:
        """Wait (at most `timeout` s) for every judgement; cancel those not started; return those unfinished."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for future in self._futures:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                future.exception(timeout=left)
            except TimeoutError:
                break
            except BaseException:  # noqa: BLE001 - cancelled; asked about by its owner
                continue
        for future in self._futures:
            future.cancel()  # only those never started
        return [f for f in self._futures if not f.done() or f.cancelled()]

    def __enter__(self) -> JudgingPipeline:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._warm_up = None  # nothing left to warm up for
        self.release()
        self._queue.put(None)
        try:
            left = self.wait(None if exc is None else self.grace_s)
        except BaseException:  # interrupted while waiting for the last judgements: still give them their grace
            self.wait(self.grace_s)
            raise
        if left:
            log.error("%d run(s) left unjudged after %.0f s", len(left), self.grace_s)


def _open() -> threading.Event:
    gate = threading.Event()
    gate.set()
    return gate


def _quietly(task: Callable[[], None], what: str) -> None:
    """A failure here costs only its time (a warm-up: the first judgement starts the engine itself)."""
    try:
        task()
    except Exception as exc:  # noqa: BLE001 - said in the log, never fatal
        log.warning("%s failed: %s", what, exc)
