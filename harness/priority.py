"""The judging's CPU priority: below the story's, so a story running beside a judgement keeps its CPU.

Linux keeps a nice value per thread, and a process started by a thread
starts with that thread's value: the judging worker lowers its own
(`lower_this_thread`), so the JVMs it starts (Spark's, DumpLogSegments') start
niced too. `renice_process` lowers every thread of a process the harness
started itself (the Spark JVM, which may predate the worker). Lowering a
priority needs no privilege; a failure is a log line, never fatal.
Must never: raise a priority, or touch a process the harness did not start.
"""

from __future__ import annotations

import logging
import os
import threading

from testbed.localprocs import thread_ids

log = logging.getLogger("faultline.priority")

JUDGE_NICE = 10  # the story (cluster JVMs, clients, the harness's main thread) stays at 0


def nice_of(tid: int = 0) -> int:
    """The nice value of a thread or process (0: the calling thread)."""
    return os.getpriority(os.PRIO_PROCESS, tid or threading.get_native_id())


def _lower(tid: int, nice: int) -> None:
    if os.getpriority(os.PRIO_PROCESS, tid) < nice:
        os.setpriority(os.PRIO_PROCESS, tid, nice)


def lower_this_thread(nice: int = JUDGE_NICE) -> None:
    """Run the calling thread (and what it starts from now on) at `nice`, if it runs above it."""
    try:
        _lower(threading.get_native_id(), nice)
    except OSError as exc:
        log.warning("could not lower the judging's priority: %s", exc)


def renice_process(pid: int, nice: int = JUDGE_NICE) -> int:
    """Every thread of process `pid` (one the harness started) at `nice` at least; how many were lowered."""
    lowered = 0
    tasks = thread_ids(pid)
    if tasks is None:
        return 0  # it has ended
    for tid in tasks:
        try:
            if os.getpriority(os.PRIO_PROCESS, tid) < nice:
                os.setpriority(os.PRIO_PROCESS, tid, nice)
                lowered += 1
        except OSError:
            continue  # that thread ended meanwhile
    return lowered
