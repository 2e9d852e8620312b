"""scenarios/txn-smoke.yaml on a real cluster: transactions commit and abort, and both views agree with them.

Its no-fault configuration runs in `make test` (about a minute on 2 cores: bring-up, 20 s of transactional
traffic, the 10 s transaction timeout before the drain, the drain in both views, the Spark checker); its
kill-leader configuration is marked `transactions`, left to `make test-transactions`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import run_passing

pytestmark = pytest.mark.cluster


@pytest.mark.transactions
def test_txn_smoke_under_a_leader_kill(tmp_path: Path) -> None:
    # the scenario's expectations held (PASS: exit 0)
    _, verdict = run_passing("scenarios/txn-smoke.yaml", tmp_path, configuration="kill-leader")
    stats = verdict["stats"]
    assert stats["committed"] > 0 and stats["aborted"] > 0, stats


def test_txn_smoke_commits_aborts_and_shows_both_views(tmp_path: Path) -> None:
    run, verdict = run_passing("scenarios/txn-smoke.yaml", tmp_path, configuration="no-fault")
    assert verdict["valid"] is True, verdict["errors"]
    stats, counts = verdict["stats"], verdict["counts"]
    assert stats["transactions"] > 0 and stats["committed"] > 0 and stats["aborted"] > 0, stats
    for anomaly in ("aborted-read", "uncommitted-read", "torn-transaction", "unreadable", "lost"):
        assert counts[anomaly] == 0, (anomaly, verdict["examples"].get(anomaly))
    history = run / "history"
    txns = pd.read_parquet(history / "transactions.parquet")
    writes = pd.read_parquet(history / "writes.parquet")
    reads = pd.read_parquet(history / "reads.parquet")
    processes = pd.read_parquet(history / "processes.parquet").set_index("process")
    config = {p: json.loads(c) for p, c in processes["config"].items()}
    assert all(config[p]["transactional.id"].endswith(p) for p in processes.index if p.startswith("producer"))
    final = reads[reads["phase"] == "final"]
    views = {p: config[p]["isolation.level"] for p in final["process"].unique()}
    assert sorted(views.values()).count("read_uncommitted") == 3 and len(views) == 6, views
    aborted = set(writes[writes["txn"].isin(txns.loc[txns["status"] == "fail", "txn"])]["value"])
    committed = set(writes[writes["txn"].isin(txns.loc[txns["status"] == "ok", "txn"])]["value"])
    for drain, level in views.items():
        seen = set(final.loc[final["process"] == drain, "value"])
        assert committed <= seen, drain
        # read_uncommitted sees the aborted values that were written; read_committed none of them
        assert (seen & aborted) if level == "read_uncommitted" else not (seen & aborted), drain
    # Each leader's observer reports its high watermark and last stable offset (ListOffsets, both levels).
    observations = pd.read_parquet(history / "observations.parquet")
    led = observations.dropna(subset=["last_stable_offset"])
    assert not led.empty and (led["high_watermark"] >= led["last_stable_offset"]).all()
    assert (led["leader"] == led["observer"].str.removeprefix("broker-").astype(int)).all()
