"""The transactions scenarios on a real cluster (docs/scenarios.md): each run must meet its spec's expectations
(PASS: exit 0), and what the expectation rests on is checked in the run's own files.

txn-coordinator-az's `isolate` configuration runs in `make test` (about 1.5 min on 2 cores); every other
configuration is marked `transactions`, left to `make test-transactions`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.conftest import run_passing

pytestmark = pytest.mark.cluster
TXN_ANOMALIES = ("aborted-read", "uncommitted-read", "torn-transaction")


def coordinator_fault(run: Path) -> dict[str, Any]:
    nemesis = pd.read_parquet(run / "history" / "nemesis.parquet")
    start = nemesis[nemesis["type"] == "start"].iloc[0]
    return {"targets": json.loads(start["targets"]), "info": json.loads(start["detail"])}


def check_coordinator_az(tmp_path: Path, configuration: str) -> None:
    run, verdict = run_passing("scenarios/txn-coordinator-az.yaml", tmp_path, configuration=configuration)
    counts, stats = verdict["counts"], verdict["stats"]
    for anomaly in (*TXN_ANOMALIES, "lost"):
        assert counts[anomaly] == 0, (anomaly, verdict["examples"].get(anomaly))
    assert stats["committed"] > 0, stats
    fault = coordinator_fault(run)
    broker = fault["info"]["coordinators"]["producer-az1-0"]  # found at fire time (FindCoordinator)
    assert fault["targets"]["brokers"] == [broker] and fault["targets"]["az"] == f"az{broker + 1}", fault


def test_txn_coordinator_az_isolate(tmp_path: Path) -> None:
    check_coordinator_az(tmp_path, "isolate")


@pytest.mark.transactions
def test_txn_coordinator_az_past_timeout(tmp_path: Path) -> None:
    check_coordinator_az(tmp_path, "past-timeout")


@pytest.mark.transactions
def test_zombie_fencing(tmp_path: Path) -> None:
    run, verdict = run_passing("scenarios/zombie-fencing.yaml", tmp_path, configuration="pause-replace-resume")
    for anomaly in (*TXN_ANOMALIES, "lost"):
        assert verdict["counts"][anomaly] == 0, (anomaly, verdict["examples"].get(anomaly))
    history = run / "history"
    nemesis = pd.read_parquet(history / "nemesis.parquet")
    starts = nemesis[nemesis["type"] == "start"].set_index("fault")
    paused_ns = int(starts.loc["pause-workload", "time_ns"])
    assert json.loads(starts.loc["replace-workload", "targets"])["replacement"] == "producer-az1-0-r1"
    txns = pd.read_parquet(history / "transactions.parquet")
    writes = pd.read_parquet(history / "writes.parquet")
    reads = pd.read_parquet(history / "reads.parquet")
    processes = pd.read_parquet(history / "processes.parquet").set_index("process")
    config = {p: json.loads(c) for p, c in processes["config"].items()}
    assert config["producer-az1-0-r1"]["transactional.id"] == config["producer-az1-0"]["transactional.id"]
    assert (txns["process"] == "producer-az1-0-r1").any()  # the replacement began transactions of its own
    zombie = txns[txns["process"] == "producer-az1-0"]
    # The zombie's transactions that did not commit and the one it had begun when it was paused: none of their
    # values in any read by a read_committed process. Except one it had asked to commit before the pause: the
    # coordinator may have committed it (seen: asked 0.26 s before, `info` after the resume, its values committed).
    asked_before = (zombie["intent"] != "abort") & zombie["end_ns"].notna() & (zombie["end_ns"] < paused_ns)
    open_at_pause = zombie[(zombie["begin_ns"] < paused_ns) & ~asked_before
                           & (zombie["complete_ns"].isna() | (zombie["complete_ns"] > paused_ns))]
    unfinished = set(zombie.loc[(zombie["status"] != "ok") & ~asked_before, "txn"]) | set(open_at_pause["txn"])
    committed_readers = [p for p, c in config.items() if c.get("isolation.level") == "read_committed"]
    values = set(writes.loc[writes["txn"].isin(unfinished), "value"])
    seen = set(reads.loc[reads["process"].isin(committed_readers), "value"])
    assert values and not (values & seen), sorted(values & seen)[:5]


@pytest.mark.transactions
@pytest.mark.fuse
@pytest.mark.parametrize("configuration", ["default-flush", "flush-each-message"])
def test_txn_power_cut_cluster(tmp_path: Path, configuration: str) -> None:
    _, verdict = run_passing("scenarios/txn-power-cut-cluster.yaml", tmp_path, configuration=configuration)
    counts = verdict["counts"]
    if configuration == "default-flush":
        assert counts["lost"] > 0, counts
    else:
        assert counts["lost"] == 0 and counts["torn-transaction"] == 0, counts


def stray_write(run: Path) -> dict[str, Any]:
    """The stray-transactional-produce fault's write as its nemesis `start` row journaled it."""
    nemesis = pd.read_parquet(run / "history" / "nemesis.parquet")
    start = nemesis[(nemesis["type"] == "start") & (nemesis["fault"] == "stray-transactional-produce")].iloc[0]
    stray: dict[str, Any] = json.loads(start["detail"])["stray"]
    return stray


@pytest.mark.transactions
@pytest.mark.parametrize("configuration, hangs", [("kafka-2-7", True), ("kafka-3-7-verified", False),
                                                  ("kafka-3-7-unverified", True)])
def test_hanging_transaction(tmp_path: Path, configuration: str, hangs: bool) -> None:
    run, verdict = run_passing("scenarios/hanging-transaction.yaml", tmp_path, configuration=configuration)
    stray = stray_write(run)
    counts = verdict["counts"]
    # The spec's expectation holds the stray batch's answer (expect.faults); the run passed, so it says so too.
    assert f"stray-hang: {'NONE' if hangs else 'INVALID_TXN_STATE'}" in verdict["expectation"]["observed"]
    if hangs:  # taken: partition 0's committed values behind the stray record are unreadable, and only there
        assert (stray["status"], stray["error"], stray["error_code"]) == ("ok", None, 0), stray
        assert counts["unreadable"] > 0, counts
        assert {e["partition"] for e in verdict["examples"]["unreadable"]} == {stray["partition"]}
        assert all(e["offset"] > stray["offset"] for e in verdict["examples"]["unreadable"])
    else:  # refused by partition verification itself: INVALID_TXN_STATE, not a timeout or NOT_LEADER_OR_FOLLOWER
        assert (stray["status"], stray["error_code"], stray["error"]) == ("fail", 48, "INVALID_TXN_STATE"), stray
        assert counts["unreadable"] == 0, verdict["examples"].get("unreadable")
    writes = pd.read_parquet(run / "history" / "writes.parquet").set_index("value")
    assert writes.loc[stray["value"], "status"] == stray["status"]
def proxy_events(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "proxy" / "producer-az1-0.events.jsonl").read_text().splitlines()]


@pytest.mark.transactions
def test_txn_delayed_endtxn_before_abort(tmp_path: Path) -> None:
    """Seven EndTxns held past socket.timeout.ms: librdkafka times each out, disconnects and retries it on a new
    connection; each stale commit, forwarded just before the next abort, lands in that transaction (error code 0)."""
    run, verdict = run_passing("scenarios/txn-delayed-endtxn.yaml", tmp_path, configuration="before-abort")
    events = proxy_events(run)
    held = [e for e in events if e["event"] == "held"]
    assert len(held) == 7 and {e["api_key"] for e in held} == {26}, events
    closed = {e["seq"] for e in events if e["event"] == "client-closed"}
    assert closed == {e["seq"] for e in held}, events  # librdkafka gave up on every held EndTxn's connection
    late = [e for e in events if e["event"] == "late-answer"]
    assert len(late) == 7 and any(e["error_code"] == 0 for e in late), late  # a stale EndTxn was applied
    log = (run / "logs" / "producer-az1-0.log").read_text()
    assert log.count("Timed out EndTxnRequest in flight") >= 7
    nemesis = pd.read_parquet(run / "history" / "nemesis.parquet")
    holds = nemesis[nemesis["fault"] == "hold-request"]
    assert sorted(holds["type"].value_counts().items()) == [("start", 7), ("stop", 7)]
    assert verdict["stats"]["committed"] > 0
