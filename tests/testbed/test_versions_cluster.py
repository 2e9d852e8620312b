"""A Kafka other than the default on a real cluster: 0.11.0.3 (Scala 2.12, ZooKeeper 3.4, JAXB on the classpath).

`make test-versions` (marker `versions`), not `make test`: the first run fetches the version's jars. The smoke
spec runs end to end: the observers negotiate a Metadata version 0.11 answers (v4: no leader epoch), the
replica dumps parse its log, and the verdict is valid.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import REPO, faultline

pytestmark = [pytest.mark.cluster, pytest.mark.versions]


def test_smoke_on_kafka_0_11_is_valid_with_observations_and_replica_dumps(tmp_path: Path) -> None:
    proc = faultline("run", str(REPO / "scenarios" / "smoke.yaml"), "--kafka-version", "0.11.0.3",
                     "--results", str(tmp_path), timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (run_dir,) = [p for p in (tmp_path / "smoke").iterdir() if p.name != "latest"]
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["valid"] is True and verdict["errors"] == {} and verdict["stats"]["ok"] >= 3000
    assert json.loads((run_dir / "run.json").read_text())["versions"]["kafka"] == "0.11.0.3"
    obs = pd.read_parquet(run_dir / "history" / "observations.parquet")
    answered = obs.dropna(subset=["leader"])
    assert set(answered["observer"]) == {"broker-0", "broker-1", "broker-2"}, "every observer got answers"
    report = json.loads((run_dir / "replicas.json").read_text())
    assert report["agree"] is True and report["final_matches"] is True, report
    assert all(rep["records"] > 0 for part in report["partitions"] for rep in part["replicas"].values())
    server_log = (run_dir / "nodes" / "az1-node" / "logs" / "broker" / "server.log").read_text()
    assert "DatatypeConverter" not in server_log and "kafka_2.12-0.11.0.3" not in proc.stderr
