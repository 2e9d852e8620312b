"""KRaft on a real cluster: Kafka 4.1.1 with a controller beside each broker, and 3.9.1 with combined nodes.

`make test-versions` (marker `versions`), not `make test`: the first run fetches the version's jars. The smoke
spec runs end to end on KRaft: storage formatted, the steered controller active (DescribeQuorum), every
observer naming only a controller that believes it leads, the 4.x replica dumps parsed, the verdict valid.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import REPO, faultline

pytestmark = [pytest.mark.cluster, pytest.mark.versions]


def _smoke(tmp_path: Path, *flags: str) -> Path:
    proc = faultline("run", str(REPO / "scenarios" / "smoke.yaml"), *flags, "--results", str(tmp_path), timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (run_dir,) = [p for p in (tmp_path / "smoke").iterdir() if p.name != "latest"]
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["valid"] is True and verdict["errors"] == {} and verdict["stats"]["ok"] >= 3000
    report = json.loads((run_dir / "replicas.json").read_text())
    assert report["agree"] is True and report["final_matches"] is True, report
    assert all(rep["records"] > 0 for part in report["partitions"] for rep in part["replicas"].values())
    return run_dir


def test_smoke_on_kafka_4_kraft_is_valid_with_the_steered_active_controller(tmp_path: Path) -> None:
    run_dir = _smoke(tmp_path, "--kafka-version", "4.1.1")
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["settings"]["broker"]["metadata"] == "kraft"
    props = (run_dir / "nodes" / "az1-node" / "config" / "server.properties").read_text()
    assert "zookeeper." not in props and "process.roles=broker\n" in props
    obs = pd.read_parquet(run_dir / "history" / "observations.parquet")
    assert set(obs.dropna(subset=["leader"])["observer"]) == {"broker-0", "broker-1", "broker-2"}
    claims = obs.dropna(subset=["controller"])
    # smoke steers no controller: exactly one node's controller claims to lead, and only its own observer says so
    assert claims["controller"].nunique() == 1 and claims["observer"].nunique() == 1
    assert claims["observer"].iloc[0] == f"broker-{int(claims['controller'].iloc[0])}"
    assert (run_dir / "nodes" / "az1-node" / "logs" / "controller" / "server.log").exists()


def test_smoke_on_kafka_3_9_combined_kraft_is_valid(tmp_path: Path) -> None:
    spec = tmp_path / "smoke-combined.yaml"
    raw = (REPO / "scenarios" / "smoke.yaml").read_text()
    spec.write_text(raw.replace("cluster:\n", "cluster:\n  kraft_controllers: combined\n", 1)
                    if "cluster:\n" in raw else raw + "\ncluster:\n  kraft_controllers: combined\n")
    proc = faultline("run", str(spec), "--kafka-version", "3.9.1", "--metadata", "kraft",
                     "--results", str(tmp_path / "results"), timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (run_dir,) = [p for p in (tmp_path / "results" / "smoke").iterdir() if p.name != "latest"]
    assert json.loads((run_dir / "verdict.json").read_text())["valid"] is True
    props = (run_dir / "nodes" / "az2-node" / "config" / "server.properties").read_text()
    assert "process.roles=broker,controller" in props and not (run_dir / "nodes" / "az2-node" / "logs" /
                                                                "controller").exists()
