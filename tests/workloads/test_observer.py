"""The observer's loop without a broker: `broker_view` replaced, the journal a list."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from testbed.kafka.wire import BrokerView, PartitionView
from workloads import observer
from workloads.config import ObserverConfig
from workloads.stopping import StopFlag


class Lines:
    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []

    def append(self, line: dict[str, Any]) -> None:
        self.lines.append(line)

    def flush(self) -> None:
        pass


def test_the_observer_looks_once_more_at_the_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    """The harness stops the observers after the cluster settled: their last rows must be the settled views. A
    follower that rejoined the ISR within the interval before the stop was otherwise never seen back."""
    isrs = iter([[0, 2], [0, 1, 2]])  # the loop's one look (a shrunk ISR), then the ISR full again at the stop
    stop = StopFlag()

    def view(host: str, port: int, topics: list[str], timeout: float) -> BrokerView:
        stop.set()  # the stop comes during the first interval
        return BrokerView(0, None, {}, {"t": [PartitionView(0, 0, 3, [0, 1, 2], next(isrs), 0)]})

    monkeypatch.setattr(observer, "broker_view", view)
    monkeypatch.setattr(observer, "end_offsets", lambda *a, **k: {})
    config = ObserverConfig(process="observer-broker-0", role="observer", az="az1", journal=Path("/j.jsonl"),
                            topic="t", bootstrap="", broker_id=0, broker_host="198.18.0.11", broker_port=9092,
                            interval_s=60.0)
    journal = Lines()
    assert observer.ObserverWorkload(config, journal, stop).run() == 0  # type: ignore[arg-type]
    seen = [line["partitions"][0][3] for line in journal.lines if line["kind"] == "observation"]
    assert seen == [[0, 2], [0, 1, 2]]
    assert journal.lines[-1] == {**journal.lines[-1], "kind": "end", "observations": 2}
