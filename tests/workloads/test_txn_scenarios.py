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

from tests.conftest import faultline

pytestmark = pytest.mark.cluster
TXN_ANOMALIES = ("aborted-read", "uncommitted-read", "torn-transaction")


def run_scenario(tmp_path: Path, scenario: str, configuration: str) -> tuple[Path, dict[str, Any]]:
    proc = faultline("run", f"scenarios/{scenario}.yaml", "--configuration", configuration, "--results",
                     str(tmp_path), timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    run = (tmp_path / scenario / "latest" / configuration).resolve()
    return run, json.loads((run / "verdict.json").read_text())


def coordinator_fault(run: Path) -> dict[str, Any]:
    nemesis = pd.read_parquet(run / "history" / "nemesis.parquet")
    start = nemesis[nemesis["type"] == "start"].iloc[0]
    return {"targets": json.loads(start["targets"]), "info": json.loads(start["detail"])}


def check_coordinator_az(tmp_path: Path, configuration: str) -> None:
    run, verdict = run_scenario(tmp_path, "txn-coordinator-az", configuration)
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
