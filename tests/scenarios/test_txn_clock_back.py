"""KAFKA-8803 shown affected (2.4.1) and fixed (2.5.0) on the same clock steps (`make test-disks-clocks`, marker `clocks`).

scenarios/versions/txn-clock-back.yaml: the coordinator of producer-az1-0's transactions has its wall clock stepped
30 s back, then forward to true time. The run's own expectation holds the coordinator's log line (2.4.1: the refused
Ongoing transition; 2.5.0: none) and, on 2.4.1, the precondition that the other leaders dropped the stepped-back
follower from their ISRs. This test checks the same story again from the clients' history: on 2.4.1 producer-az1-0
commits no transaction begun after its coordinator's clock went back, to the end of the run (the first one's
AddPartitionsToTxn is never answered, and the pending transition never expires, even once the clock is true
again: a new producer instance's InitProducerId gets CONCURRENT_TRANSACTIONS for good); on 2.5.0 it commits some.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from testbed.runtime.clocks import CLOCK_REREAD_S
from tests.conftest import REPO, run_passing

pytestmark = [pytest.mark.cluster, pytest.mark.clocks]
SPEC = REPO / "scenarios" / "versions" / "txn-clock-back.yaml"


def committed_after_the_step_back(run_dir: Path) -> int:
    """producer-az1-0's transactions begun after its coordinator's clock went back (and libfaketime re-read it), to the
    end of the run, that committed."""
    nemesis = pd.read_parquet(run_dir / "history" / "nemesis.parquet")
    starts = nemesis[nemesis["type"] == "start"]
    at = {json.loads(detail)["name"]: int(t) for t, detail in zip(starts["time_ns"], starts["detail"], strict=True)}
    back = at["coordinator-back"]
    txns = pd.read_parquet(run_dir / "history" / "transactions.parquet")
    mine = txns[(txns["process"] == "producer-az1-0") & (txns["intent"] == "commit") & (txns["status"] == "ok")]
    return int((mine["begin_ns"] > back + CLOCK_REREAD_S * 1e9).sum())


@pytest.mark.parametrize(("configuration", "affected"), [("kafka-2-4-1", True), ("kafka-2-5-0", False)])
def test_kafka_8803_leaves_a_transaction_pending_only_before_the_fix(tmp_path: Path, configuration: str,
                                                                     affected: bool) -> None:
    run_dir, _ = run_passing(SPEC, tmp_path, configuration=configuration)
    committed = committed_after_the_step_back(run_dir)
    assert (committed == 0) == affected, committed
