"""stray-transactional-produce: its spec, and what it sends and journals, with the wire calls stubbed (the real
broker's answers are scenarios/hanging-transaction's)."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

import pytest

from nemesis import stray
from nemesis.registry import fault_for
from nemesis.spec import parse_fault
from nemesis.targets import ClusterFacts, PartitionFacts, Resolver
from testbed.addressing import make_plan
from testbed.errors import FaultError, SpecError

PLAN = make_plan("198.18.2.0/24", 3)


def _env(coordinator: int | None = 2) -> Any:
    cluster = SimpleNamespace(plan=PLAN, settings=SimpleNamespace(topic="faultline"),
                              runtime=SimpleNamespace(prefix="fl00"), txn_coordinator=lambda _id: coordinator)
    return SimpleNamespace(cluster=cluster)


def _resolver() -> Resolver:
    facts = ClusterFacts(0, {1: PartitionFacts(1, (0, 1, 2))})
    return Resolver(PLAN, random.Random(1), 1, lambda: facts)


def test_the_spec_takes_only_a_partition() -> None:
    spec = parse_fault("n[0]", {"fault": "stray-transactional-produce", "partition": 1})
    assert fault_for(spec) is stray.STRAY_FAULT and spec.partition == 1 and not spec.is_workload
    with pytest.raises(SpecError, match=r"n\[0\].target: unknown key for fault stray-transactional-produce"):
        parse_fault("n[0]", {"fault": "stray-transactional-produce", "target": "leader"})


def _stub(monkeypatch: pytest.MonkeyPatch, answer: tuple[int, int] | Exception,
          init: tuple[int, int, int] = (0, 4000, 0)) -> list[tuple[Any, ...]]:
    sent: list[tuple[Any, ...]] = []
    monkeypatch.setattr(stray.txn_wire, "init_producer_id",
                        lambda host, port, tid, timeout_ms: (sent.append(("init", host, tid)), init)[1])

    def produce(host: str, port: int, tid: str, topic: str, partition: int, batch: bytes) -> tuple[int, int]:
        sent.append(("produce", host, tid, topic, partition))
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(stray.txn_wire, "produce", produce)
    return sent


def test_a_taken_write_is_journaled_ok_with_its_offset(monkeypatch: pytest.MonkeyPatch) -> None:
    sent = _stub(monkeypatch, (0, 812))
    spec = parse_fault("f", {"fault": "stray-transactional-produce", "partition": 1})
    injected = stray.STRAY_FAULT.inject(spec, _resolver(), _env(), "stray-hang")
    leader, coordinator = PLAN.nodes[1], PLAN.nodes[2]
    assert sent == [("init", coordinator.address, "fl00-stray-hang"),
                    ("produce", leader.address, "fl00-stray-hang", "faultline", 1)]
    assert injected.targets == {"topic": "faultline", "partition": 1, "brokers": [1], "coordinator": 2,
                                "process": "stray-hang"}
    write = injected.detail["stray"]
    assert {k: write[k] for k in ("value", "txn", "producer_id", "offset", "status", "error")} == {
        "value": "stray-hang-0", "txn": "stray-hang-t0", "producer_id": 4000, "offset": 812, "status": "ok",
        "error": None}
    stray.STRAY_FAULT.undo(injected, _env())  # nothing to undo


@pytest.mark.parametrize("answer, status, error", [
    ((48, -1), "fail", "INVALID_TXN_STATE"),
    ((7, -1), "info", "REQUEST_TIMED_OUT"),
    (TimeoutError("timed out"), "info", "TimeoutError: timed out"),
])
def test_a_refused_or_unanswered_write_says_so(monkeypatch: pytest.MonkeyPatch, answer: Any, status: str,
                                               error: str) -> None:
    _stub(monkeypatch, answer)
    spec = parse_fault("f", {"fault": "stray-transactional-produce", "partition": 1})
    write = stray.STRAY_FAULT.inject(spec, _resolver(), _env(), "hang").detail["stray"]
    assert (write["process"], write["status"], write["error"], write["offset"]) == ("stray-hang", status, error, None)


def test_no_producer_id_is_a_fault_error_and_nothing_is_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    sent = _stub(monkeypatch, (0, 1), init=(53, -1, -1))
    spec = parse_fault("f", {"fault": "stray-transactional-produce", "partition": 1})
    with pytest.raises(FaultError, match="TRANSACTIONAL_ID_AUTHORIZATION_FAILED"):
        stray.STRAY_FAULT.inject(spec, _resolver(), _env(), "hang")
    assert [s[0] for s in sent] == ["init"]
