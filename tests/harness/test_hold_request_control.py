"""The harness's side of hold-request: a proxied producer's config, and orders to its proxy through the run folder."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.workloadset import Workload, WorkloadSet, _proxied
from testbed.addressing import make_plan
from testbed.errors import FaultError
from testbed.runfolder import RunFolder
from workloads.config import ProducerConfig
from workloads.holdproxy import HoldProxy


def test_a_proxied_producer_bootstraps_from_the_loopback_ports_the_brokers_advertise(tmp_path: Path) -> None:
    plan = make_plan("198.18.0.0/24", 3)
    cluster = SimpleNamespace(nodes=plan.nodes, folder=RunFolder(tmp_path))
    keys = _proxied(cluster, "producer-az1-0")  # type: ignore[arg-type]
    assert keys["bootstrap"] == "127.0.0.1:19090,127.0.0.1:19091,127.0.0.1:19092"
    assert keys["proxy"]["listen"] == {str(19090 + n.broker_id): f"{n.address}:9094" for n in plan.nodes}
    assert keys["proxy"]["control"] == str(tmp_path / "proxy" / "producer-az1-0.control")
    assert keys["proxy"]["events"] == str(tmp_path / "proxy" / "producer-az1-0.events.jsonl")


def test_release_is_an_order_the_proxy_answers_in_its_events(tmp_path: Path) -> None:
    control, events = tmp_path / "proxy" / "p.control", tmp_path / "proxy" / "p.events.jsonl"
    control.parent.mkdir()
    proxy = HoldProxy({}, control, events)
    proxy.start()  # no ports: only its watch on the control file
    config = ProducerConfig(process="p", role="producer", az="az1", journal=tmp_path / "j", topic="t", bootstrap="b",
                            partitions=1, value_prefix="p-",
                            proxy={"listen": {}, "control": str(control), "events": str(events)})
    workloads = WorkloadSet.__new__(WorkloadSet)
    workloads.running, workloads._orders = {"p": Workload("p", make_plan("198.18.0.0/24", 3).clients[0],
                                                          "producer", config)}, 0
    assert workloads.release("p")["released_ns"] > 0  # nothing held: said so, at once
    with pytest.raises(FaultError, match="q is not a running producer with a proxy"):
        workloads.release("q")
