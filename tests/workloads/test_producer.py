"""The producer outlives fatal librdkafka errors: journal, abandon, replace, without a cluster.

Each librdkafka instance runs against its own in-process mock cluster
(`test.mock.num.brokers`; so offsets restart with every instance), and is
made fatal by librdkafka's own test hook, rd_kafka_test_fatal_error(), which
sets the same state a real OUT_OF_ORDER_SEQUENCE_NUMBER does (the binding
does not expose it; it is reached with ctypes). The seam is only *when*:
`make_producer` builds real instances that pull the trigger on cue. The
producer loop, librdkafka's purge and reports, the journal and the history
built from it are all real.
"""

from __future__ import annotations

import ctypes
import json
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from confluent_kafka import KafkaError, Producer

from workloads import exits, producer
from workloads.config import ProducerConfig
from workloads.history import build_history
from workloads.journal import Journal, JournalReader
from workloads.producer import ProducerWorkload
from workloads.stopping import StopFlag

MOCK = {"enable.idempotence": True, "test.mock.num.brokers": 1, "linger.ms": 5}
PURGED = {"_PURGE_QUEUE", "_PURGE_INFLIGHT", "OUT_OF_ORDER_SEQUENCE_NUMBER"}
RTT_MS = 500  # the mock broker's round trip in the in-flight purge test


def librdkafka() -> ctypes.CDLL:
    """The librdkafka the binding loaded (not another copy): found in this process's mappings."""
    path = next(
        line.split()[-1] for line in Path("/proc/self/maps").read_text().splitlines() if "/librdkafka" in line
    )
    lib = ctypes.CDLL(path)
    lib.rd_kafka_opaque.argtypes, lib.rd_kafka_opaque.restype = [ctypes.c_void_p], ctypes.c_void_p
    lib.rd_kafka_test_fatal_error.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p]
    return lib


def make_fatal(instance: Producer) -> None:
    """rd_kafka_test_fatal_error() on `instance`: its rd_kafka_t is the first field after the object header."""
    lib = librdkafka()
    rk = ctypes.c_void_p.from_address(id(instance) + object.__basicsize__).value
    assert lib.rd_kafka_opaque(rk) == id(instance), "the binding's object layout changed: rk not found"
    assert lib.rd_kafka_test_fatal_error(rk, KafkaError.OUT_OF_ORDER_SEQUENCE_NUMBER, b"injected") == 0


class Instances:
    """The `make_producer` seam: instance i turns fatal on its cue `fatal_at[i]`, if it has one.

    A cue is ("poll", n) or ("produce", n): at its n-th call of that method,
    before librdkafka sees the call; ("acked", n): at the first poll() after n
    acknowledgements; ("stopping", 1): at the first poll() after the stop
    came. An instance without a cue, or cued to stopping, asks the workload
    to stop after `stop_after_acks` acknowledgements.
    """

    def __init__(self, stop: StopFlag, fatal_at: list[tuple[str, int]], stop_after_acks: int = 20,
                 later: dict[str, Any] | None = None) -> None:
        self.stop, self.fatal_at, self.stop_after_acks = stop, fatal_at, stop_after_acks
        self.later = later or {}  # settings of every instance after the first
        self.made: list[Producer] = []

    def __call__(self, conf: dict[str, Any]) -> Producer:
        cue = self.fatal_at[len(self.made)] if len(self.made) < len(self.fatal_at) else None
        stop, stop_after_acks, deliver = self.stop, self.stop_after_acks, conf["on_delivery"]
        calls = Counter[str]()

        def counted(err: KafkaError | None, msg: Any) -> None:
            calls["acked"] += err is None
            if (cue is None or cue[0] == "stopping") and calls["acked"] == stop_after_acks:
                stop.set()
            deliver(err, msg)

        def due(method: str) -> bool:
            """Count a call of `method`; whether the instance is to turn fatal before librdkafka sees it."""
            calls[method] += 1
            if cue is None or calls["made fatal"]:
                return False
            kind, n = cue
            now = (
                kind == method
                and calls[method] == n
                or method == "poll"
                and (kind == "acked" and calls["acked"] >= n or kind == "stopping" and stop.requested)
            )
            calls["made fatal"] += now
            return now

        class Cued(Producer):
            def poll(self, timeout: float = -1) -> int:
                if due("poll"):
                    make_fatal(self)
                return super().poll(timeout)

            def produce(self, *args: Any, **kwargs: Any) -> None:
                if due("produce"):
                    make_fatal(self)
                super().produce(*args, **kwargs)

        self.made.append(Cued({**conf, **(self.later if self.made else {}), "on_delivery": counted}))
        return self.made[-1]


def run(
    tmp_path: Path, instances: Instances, stop: StopFlag, **kafka: Any
) -> tuple[int, list[dict[str, Any]]]:
    path = tmp_path / "journal" / "p.jsonl"
    config = ProducerConfig(
        process="p",
        role="producer",
        az="az1",
        journal=path,
        topic="t",
        bootstrap="127.0.0.1:1",
        partitions=2,
        value_prefix="p-",
        rate=2000,
        batch_size=50,
        kafka={**MOCK, **kafka},
    )
    journal = Journal(path)
    deadline = threading.Timer(60, stop.set)  # a cue never reached fails the test instead of hanging it
    deadline.start()
    try:
        status = ProducerWorkload(config, journal, stop, make_producer=instances).run()
    finally:
        deadline.cancel()
        journal.close()
    return status, [line for _, line in JournalReader(path)]


def writes(tmp_path: Path) -> list[dict[str, Any]]:
    build_history(tmp_path / "journal", tmp_path / "history")
    return list(pq.read_table(tmp_path / "history" / "writes.parquet").to_pylist())


def test_a_fatal_error_in_poll_replaces_the_instance_and_every_send_keeps_one_outcome(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The mock broker answers each request RTT_MS after it came, far longer than the grace before the purge; the
    # workload produces all the while (2,000 sends/s, linger 5 ms, up to 5 requests in flight), so when the first
    # answer comes the requests sent after it are still unanswered for most of RTT_MS, and the cue (the poll
    # right after that first acknowledgement) always finds some in flight: the purge takes them (_PURGE_INFLIGHT)
    # on every run, whatever the machine's load.
    monkeypatch.setattr(producer, "FATAL_GRACE_S", 0.01)
    stop = StopFlag()
    instances = Instances(stop, [("acked", 1)], later={"test.mock.broker.rtt": 0})  # the fresh one: no delay
    status, lines = run(tmp_path, instances, stop, **{"test.mock.broker.rtt": RTT_MS})
    assert status == exits.DONE and len(instances.made) == 2
    errors = [line for line in lines if line["kind"] == "client_error"]
    assert [(e["error"], e["fatal"]) for e in errors] == [("OUT_OF_ORDER_SEQUENCE_NUMBER", True)]
    fatal_at = lines.index(errors[0])
    end = lines[-1]
    assert end["kind"] == "end" and end["restarts"] == 1 and end["fatal"] is None
    # Everything the fatal instance still held: info, from librdkafka's purge, journaled before any new invoke.
    abandoned = [line for line in lines if line["kind"] == "outcome"]
    assert abandoned and {line["status"] for line in abandoned} == {"info"}
    assert {line["error"] for line in abandoned} <= PURGED
    first_invoke_after = next(i for i, line in enumerate(lines) if i > fatal_at and line["kind"] == "invoke")
    assert all(fatal_at < lines.index(line) < first_invoke_after for line in abandoned)
    # The fresh instance carries on with the next op ids, and they are acknowledged.
    rows = writes(tmp_path)
    assert [r["op_id"] for r in rows] == list(range(end["sent"])) and len({r["value"] for r in rows}) == len(
        rows
    )
    assert all(r["complete_ns"] is not None for r in rows)  # every send got its outcome
    newer = [r for r in rows if r["op_id"] >= lines[first_invoke_after]["op"]]
    assert newer and {r["status"] for r in newer} == {"ok"}
    assert (
        Counter(r["status"] for r in rows) == {s: end[s] for s in ("ok", "info") if end[s]}
        and end["fail"] == 0
    )
    assert "_PURGE_INFLIGHT" in {line["error"] for line in abandoned}


def test_a_send_a_fatal_instance_refuses_goes_to_the_next_instance(tmp_path: Path) -> None:
    stop = StopFlag()
    instances = Instances(stop, [("produce", 70)])  # in the middle of the second batch of 50
    status, lines = run(tmp_path, instances, stop)
    assert status == exits.DONE and len(instances.made) == 2
    # One line for the fatal error: the real one poll() raised, not produce()'s bare _FATAL.
    assert [(line["error"], line["fatal"]) for line in lines if line["kind"] == "client_error"] == [
        ("OUT_OF_ORDER_SEQUENCE_NUMBER", True)
    ]
    rows = {r["op_id"]: r for r in writes(tmp_path)}
    assert len(rows) == lines[-1]["sent"] and lines[-1]["restarts"] == 1
    assert rows[69]["status"] == "ok"  # refused by the fatal instance, then sent (once) by the fresh one
    assert {r["status"] for r in rows.values()} <= {"ok", "info"}
    assert all(r["error"] in PURGED for r in rows.values() if r["status"] == "info")


def test_too_many_fatal_errors_give_up_with_every_send_accounted_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(producer, "MAX_RESTARTS", 2)
    stop = StopFlag()
    instances = Instances(stop, [("poll", 3), ("produce", 10), ("poll", 3)])
    status, lines = run(tmp_path, instances, stop)
    assert status == exits.FAILED and len(instances.made) == 3
    assert sum(line["kind"] == "client_error" and line["fatal"] for line in lines) == 3
    end = lines[-1]
    assert end["kind"] == "end" and end["restarts"] == 2
    assert end["fatal"].startswith(
        "2 producer restarts, then another fatal error: OUT_OF_ORDER_SEQUENCE_NUMBER"
    )
    rows = writes(tmp_path)
    assert len(rows) == end["sent"] and all(r["complete_ns"] is not None for r in rows)
    assert not [r for r in rows if r["status"] == "fail" and r["error"] != "_FATAL"]


def test_a_fatal_error_while_stopping_abandons_the_instance_without_a_new_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(producer, "FATAL_GRACE_S", 0.01)
    stop = StopFlag()
    instances = Instances(stop, [("stopping", 1)])
    status, lines = run(tmp_path, instances, stop, **{"test.mock.broker.rtt": 100})  # sends still in flight
    assert status == exits.DONE and len(instances.made) == 1
    assert [(line["error"], line["fatal"]) for line in lines if line["kind"] == "client_error"] == [
        ("OUT_OF_ORDER_SEQUENCE_NUMBER", True)
    ]
    end = lines[-1]
    assert end["kind"] == "end" and end["restarts"] == 0 and end["fatal"] is None and end["info"] > 0
    rows = writes(tmp_path)
    assert len(rows) == end["sent"] and all(r["complete_ns"] is not None for r in rows)
    assert all(r["error"] in PURGED for r in rows if r["status"] != "ok")


def test_the_summary_line_counts_restarts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stop = StopFlag()
    run(tmp_path, Instances(stop, [("poll", 5)]), stop)
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["restarts"] == 1
