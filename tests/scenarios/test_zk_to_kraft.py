"""On a real cluster (make test-operations): zk-to-kraft migrates a 3.9.1 ZooKeeper cluster to KRaft under acks=all
load. Held to its spec's expectation (the harness's exit status: nothing lost, the migration line in a controller's
server.log and each broker's start as a KRaft broker inside the operation), and to the mechanism here: every phase
journaled in order without an abort, run.json's `node_modes` ending with KRaft brokers and finalized controllers,
and each finalized controller's configuration without the migration keys."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import faultline

pytestmark = [pytest.mark.cluster, pytest.mark.operations]


def test_zk_to_kraft_migrates_every_node_and_loses_nothing(tmp_path: Path) -> None:
    proc = faultline("run", "scenarios/versions/zk-to-kraft.yaml", "--results", str(tmp_path), timeout=1500)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    folder = (tmp_path / "zk-to-kraft" / "latest").resolve()  # a spec without configurations: the run's own folder
    verdict = json.loads((folder / "verdict.json").read_text())
    assert verdict["valid"] is True and verdict["counts"]["lost"] == 0, verdict["counts"]
    nemesis = pd.read_parquet(folder / "history" / "nemesis.parquet")
    rows = nemesis[(nemesis["fault"] == "zk-to-kraft") & (nemesis["type"] == "info")]
    phases = [json.loads(t)["phase"] for t in rows["targets"]]
    assert phases == ["controllers", *["migrating"] * 3, "migrated", *["kraft"] * 3, *["finalized"] * 3], phases
    assert not [d for d in rows["detail"] if "aborted" in json.loads(d)]
    modes = json.loads((folder / "run.json").read_text())["node_modes"]
    assert {node: (steps[-1]["broker"], steps[-1]["controller"]) for node, steps in modes.items()} == {
        node: ("kraft", "kraft") for node in ("az1-node", "az2-node", "az3-node")}
    for node in modes:
        config = (folder / "nodes" / node / "config" / "controller.properties").read_text()
        assert "process.roles=controller" in config and "zookeeper.metadata.migration.enable" not in config
