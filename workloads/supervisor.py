"""A supervised process: a supervisor running its instances one at a time, killing them on schedule.

A transformer (workloads/transformer.py) always runs so; a consumer (workloads/consumer.py) does when it
is to be killed (`kill_every_s` > 0), so a group member is SIGKILLed mid-poll and restarted (contract v3).

It forks instance 0, SIGKILLs it `kill_first_s` after its start and every
`kill_every_s` after that (0: never), and starts the next one `restart_delay_s` later: a
killed client, restarted as a service manager would. A consumer with processing time (`processing_ms`) is
killed inside it: a kill that falls due while the member is not processing a poll's records (it is still
joining, rebalancing or polling) waits until it next is, at most AIM_LIMIT_S, so each kill lands where the
commit mode's guarantee shows (between commit and record, or record and commit) whatever the machine's load. Instance n writes its
own journal (``<journal>``, then ``<stem>.<n>.jsonl``: a journal belongs to one
incarnation), whose process line says when the one before was killed (``after_kill_ns``: the history
makes it a `kill-client` fault from then until this instance started). On SIGTERM it passes the stop on and waits for the instance;
an instance that exits by itself (not killed) fails the process.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import multiprocessing
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from workloads import exits
from workloads.config import AIM_LIMIT_S, ConsumerConfig, TransformerConfig
from workloads.journal import Journal
from workloads.stopping import StopFlag

STOP_S = 60.0  # the wait for an instance after SIGTERM (it may be ending a transaction)


SupervisedConfig = TransformerConfig | ConsumerConfig


def instance_journal(config: SupervisedConfig, instance: int) -> Path:
    return config.journal if instance == 0 else config.journal.with_name(f"{config.journal.stem}.{instance}.jsonl")



def _die_with_parent() -> None:
    """PR_SET_PDEATHSIG: an instance never outlives its supervisor (Linux; best effort elsewhere)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)


def _instance_main(config: SupervisedConfig, instance: int, killed_ns: int | None, processing: Any) -> None:
    _die_with_parent()
    stop = StopFlag().install()
    journal = Journal(instance_journal(config, instance), config.fsync_interval_s)
    try:  # librdkafka in the instance only
        if isinstance(config, ConsumerConfig):
            from workloads.consumer import ConsumerWorkload
            code = ConsumerWorkload(config, journal, stop, instance, killed_ns, processing).run()
        else:
            from workloads.transformer import Instance
            code = Instance(config, journal, stop, instance, killed_ns).run()
    finally:
        journal.close()
    sys.exit(code)


def run_supervised(config: SupervisedConfig, stop: StopFlag) -> int:
    """The supervisor: instance after instance, each killed on schedule; the last one's exit status."""
    context = multiprocessing.get_context("fork")
    started = time.monotonic()
    next_kill = started + config.kill_first_s if config.kill_every_s > 0 else None
    instance, kills = 0, 0
    killed_ns: int | None = None
    aimed = isinstance(config, ConsumerConfig) and config.processing_ms > 0
    processing = context.Value("b", 0, lock=False) if aimed else None  # set by the instance while it processes
    while True:
        if processing is not None:
            processing.value = 0  # a killed instance may have died inside its processing time
        child = context.Process(target=_instance_main, args=(config, instance, killed_ns, processing),
                                name=f"{config.process}.{instance}")
        child.start()
        assert child.pid is not None
        while child.is_alive() and not stop.requested:
            now = time.monotonic()
            if next_kill is not None and now >= next_kill and (
                    processing is None or processing.value or now >= next_kill + AIM_LIMIT_S):
                os.kill(child.pid, signal.SIGKILL)
                killed_ns = time.time_ns()
                next_kill += config.kill_every_s
                kills += 1
            child.join(0.05)
        if stop.requested:
            if child.is_alive():
                os.kill(child.pid, signal.SIGTERM)
                child.join(STOP_S)
            code = child.exitcode
            print(json.dumps({"process": config.process, "role": config.role, "instances": instance + 1,
                              "kills": kills}), flush=True)
            return exits.DONE if code == 0 else exits.FAILED
        if child.exitcode != -signal.SIGKILL:
            print(f"{config.process}: instance {instance} exited with status {child.exitcode}", file=sys.stderr)
            return exits.FAILED
        instance += 1
        if stop.wait(config.restart_delay_s):
            print(json.dumps({"process": config.process, "role": config.role, "instances": instance,
                              "kills": kills}), flush=True)
            return exits.DONE
