"""On a real cluster (make test-operations): replace-broker moves every partition off the retired broker onto the new
one and retires it; client-upgrade rolls every producer and group member onto another confluent-kafka mid-run. Each
run is held to its spec's expectation (the harness's exit status), and to the mechanism here: the journal's steps,
the replicas at the end, the replacement processes' own records."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import run_passing

pytestmark = [pytest.mark.cluster, pytest.mark.operations]


def test_replace_broker_moves_every_partition_onto_the_new_broker_and_retires_the_old(tmp_path: Path) -> None:
    folder, verdict = run_passing("scenarios/replace-broker.yaml", tmp_path, timeout=1500)
    assert verdict["valid"] is True and verdict["counts"]["lost"] == 0, verdict["counts"]
    nemesis = pd.read_parquet(folder / "history" / "nemesis.parquet")
    move = nemesis[nemesis["fault"] == "reassign"]
    start = json.loads(move[move["type"] == "start"].iloc[0]["detail"])
    assert start["before"] == {"0": [0, 1, 2], "1": [1, 2, 0], "2": [2, 0, 1]}, start
    done = [json.loads(d) for d in move[move["type"] == "info"]["detail"] if "done_ns" in json.loads(d)]
    assert done and done[-1]["replicas_now"] == {"0": [0, 1, 3], "1": [0, 1, 3], "2": [0, 1, 3]}, done
    retire = nemesis[(nemesis["fault"] == "graceful-stop") & (nemesis["type"] == "start")]
    assert [json.loads(t)["brokers"] for t in retire["targets"]] == [[3], [2]]  # the new one held back, the old retired
    # After the move no observer names broker-2 the leader of anything: the partition it led moved to the ISR.
    observations = pd.read_parquet(folder / "history" / "observations.parquet")
    late = observations[observations["time_ns"] > done[-1]["done_ns"] + 2_000_000_000]
    assert not late.empty and set(late["leader"].dropna().astype(int)) <= {0, 1, 3}


def test_client_upgrade_rolls_each_process_onto_the_new_client_and_nothing_is_lost(tmp_path: Path) -> None:
    folder, verdict = run_passing("scenarios/client-upgrade.yaml", tmp_path, timeout=1500)
    assert verdict["valid"] is True, verdict["counts"]
    nemesis = pd.read_parquet(folder / "history" / "nemesis.parquet")
    starts = nemesis[(nemesis["fault"] == "upgrade-client") & (nemesis["type"] == "start")]
    assert len(starts) == 6
    for _, row in starts.iterrows():
        detail, targets = json.loads(row["detail"]), json.loads(row["targets"])
        assert detail["client"]["confluent_kafka"] == "2.16.1" and detail["exit_status"] == 0, detail
        assert targets["replacement"] == targets["process"] + "-u1"
    processes = pd.read_parquet(folder / "history" / "processes.parquet")
    assert {f"{r}-az{i}-0-u1" for r in ("producer", "consumer") for i in (1, 2, 3)} <= set(processes["process"])
    writes = pd.read_parquet(folder / "history" / "writes.parquet")
    new = writes[writes["process"].str.endswith("-u1")]
    assert (new["status"] == "ok").sum() > 1000, "the upgraded producers wrote and were acknowledged"
    reads = pd.read_parquet(folder / "history" / "reads.parquet")
    members = reads[(reads["phase"] == "live") & reads["process"].str.endswith("-u1")]
    assert set(members["group"].dropna()) == {"upgrade"}, "the upgraded members rejoined the same group"
    manifest = json.loads((folder / "run.json").read_text())
    assert manifest["versions"]["client_under_test"]["confluent_kafka"] == "1.9.2"  # what the first processes ran
