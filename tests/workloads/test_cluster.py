"""The workloads against a real cluster: a short clean run, then its history.

One producer (acks=all, idempotence) in az1's client host, an assign
consumer in az2's, a group consumer committing synchronously in az3's, an
observer in az1's node, then a final drain from az3. The cluster's network is
FAULTLINE_TEST_NETWORK (default 198.18.1.0/24), so this can run beside
another cluster on the machine.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from testbed.addressing import Host
from testbed.kafka.config import BROKER_PORT, ClusterSettings
from testbed.lifecycle import provision
from testbed.runtime.base import Process, Runtime, wait_ended
from workloads.history import build_history
from workloads.journal import JournalReader

pytestmark = pytest.mark.cluster
TEST_NETWORK = os.environ.get("FAULTLINE_TEST_NETWORK", "198.18.1.0/24")


class Workloads:
    def __init__(self, runtime: Runtime, bootstrap: str, work: Path) -> None:
        self.runtime, self.bootstrap, self.work = runtime, bootstrap, work

    def start(self, name: str, host: Host, role: str, **extra: Any) -> Process:
        config = {
            "process": name,
            "role": role,
            "az": None if host.role == "node" else host.az,
            "journal": str(self.work / "journal" / f"{name}.jsonl"),
            "bootstrap": self.bootstrap,
            "topic": "faultline",
            **extra,
        }
        path = self.work / f"{name}.json"
        path.write_text(json.dumps(config))
        return self.runtime.spawn(
            host, name, [sys.executable, "-m", "workloads", str(path)], self.work / "logs" / f"{name}.log"
        )

    def stop(self, child: Process, timeout: float = 60) -> int | None:
        child.signal(signal.SIGTERM)
        return self.wait(child, timeout)

    def wait(self, child: Process, timeout: float = 60) -> int | None:
        assert not wait_ended([child], timeout), f"{child.name} still running after {timeout} s"
        return child.exit_status()

    def log(self, name: str) -> str:
        return (self.work / "logs" / f"{name}.log").read_text()[-2000:]


def test_a_clean_run_keeps_every_acknowledged_write(tmp_path: Path) -> None:
    settings = ClusterSettings(network=TEST_NETWORK, partitions=3)
    with provision(settings, run_dir=tmp_path / "cluster") as (cluster, runtime):
        plan = runtime.plan
        w = Workloads(runtime, cluster.bootstrap, tmp_path)
        node = plan.node_of_az("az1")
        observer = w.start(
            "observer-broker-0",
            node,
            "observer",
            broker_id=node.broker_id,
            broker_address=f"{node.address}:{BROKER_PORT}",
            interval_s=0.5,
        )
        consumer = w.start(
            "consumer-az2-0", plan.client_of_az("az2"), "consumer", mode="assign", partitions=3
        )
        group = w.start(
            "consumer-az3-0", plan.client_of_az("az3"), "consumer", mode="group", group="g1", commit="after"
        )
        producer = w.start(
            "producer-az1-0",
            plan.client_of_az("az1"),
            "producer",
            partitions=3,
            rate=2000,
            kafka={"acks": "all", "enable.idempotence": True},
        )
        time.sleep(6)
        assert w.stop(producer) == 0, w.log("producer-az1-0")
        time.sleep(2)  # let the live consumers catch up
        for name, child in (
            ("consumer-az2-0", consumer),
            ("consumer-az3-0", group),
            ("observer-broker-0", observer),
        ):
            assert w.stop(child) == 0, w.log(name)
        drain = w.start("drain-az3", plan.client_of_az("az3"), "drain", timeout_s=30)
        assert w.wait(drain, timeout=60) == 0, w.log("drain-az3")

    summary = build_history(tmp_path / "journal", tmp_path / "history")
    assert summary["drains"] == {"drain-az3": "complete"} and summary["unfinished"] == []
    writes = pq.read_table(tmp_path / "history" / "writes.parquet").to_pylist()
    reads = pq.read_table(tmp_path / "history" / "reads.parquet").to_pylist()
    assert len(writes) > 5000 and {w["status"] for w in writes} == {"ok"}
    assert all(w["offset"] is not None and w["complete_ns"] >= w["invoke_ns"] for w in writes)
    final = {r["value"]: (r["partition"], r["offset"]) for r in reads if r["phase"] == "final"}
    assert all(final.get(w["value"]) == (w["partition"], w["offset"]) for w in writes)
    assert len(final) == len(writes)  # nothing else in the log, nothing twice
    live = defaultdict(list)
    for r in reads:
        if r["phase"] == "live":
            live[r["process"]].append(r)
    assert len(live["consumer-az2-0"]) == len(writes) and len(live["consumer-az3-0"]) >= 1
    assert all(r["leader_epoch"] is not None for r in reads)
    assert {r["group"] for r in live["consumer-az3-0"]} == {"g1"}

    commits = [
        rec
        for _, rec in JournalReader(tmp_path / "journal" / "consumer-az3-0.jsonl")
        if rec["kind"] == "commit"
    ]
    assert commits and all(c["mode"] == "sync" for c in commits)  # commit after: synchronous, after each poll
    rows = pq.read_table(tmp_path / "history" / "commits.parquet").to_pylist()
    assert rows and {(r["process"], r["group"], r["kind"], r["status"]) for r in rows} == {
        ("consumer-az3-0", "g1", "sync", "ok")}

    processes = {
        p["process"]: p for p in pq.read_table(tmp_path / "history" / "processes.parquet").to_pylist()
    }
    assert sorted(processes) == ["consumer-az2-0", "consumer-az3-0", "drain-az3", "producer-az1-0"]
    producer_config = json.loads(processes["producer-az1-0"]["config"])
    assert (
        producer_config["acks"],
        producer_config["enable.idempotence"],
        producer_config["max.in.flight.requests.per.connection"],
    ) == ("all", True, 5)

    observations = pq.read_table(tmp_path / "history" / "observations.parquet").to_pylist()
    by_time: dict[int, dict[int, int | None]] = defaultdict(dict)
    for o in observations:
        assert o["observer"] == "broker-0" and o["topic"] == "faultline"
        by_time[o["time_ns"]][o["partition"]] = o["leader"]
    assert len(by_time) >= 5
    assert all(sorted(leaders) == [0, 1, 2] and None not in leaders.values() for leaders in by_time.values())
    assert all(json.loads(o["isr"]) == [0, 1, 2] for o in observations)
