"""The client under test on the docker runtime: smoke with confluent-kafka 1.9.2, its venv (built on this machine with
pyenv's Python 3.10) put into each client container (testbed.runtime.docker_venvs), the drain and observers on the
client image's own venv."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.conftest import REPO, faultline
from tests.docker.test_docker_runtime import ours

pytestmark = [pytest.mark.docker, pytest.mark.versions]

CLIENT = "1.9.2"  # librdkafka 1.9.2 in its wheel: no KIP-320 in the binding (live reads without leader epochs)


def test_smoke_on_docker_runs_producers_and_consumers_on_the_client_under_test(tmp_path: Path) -> None:
    spec = yaml.safe_load((REPO / "scenarios" / "smoke.yaml").read_text())
    spec["clients"] = {"confluent_kafka": CLIENT}
    (tmp_path / "smoke.yaml").write_text(yaml.safe_dump(spec))
    proc = faultline("run", str(tmp_path / "smoke.yaml"), "--runtime", "docker", "--results",
                     str(tmp_path / "results"), timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (run_dir,) = [p for p in (tmp_path / "results" / "smoke").iterdir() if p.name != "latest"]
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["valid"] is True and verdict["errors"] == {} and verdict["stats"]["ok"] >= 3000
    run = json.loads((run_dir / "run.json").read_text())
    assert run["versions"]["client_under_test"]["confluent_kafka"] == CLIENT
    processes = pd.read_parquet(run_dir / "history" / "processes.parquet")
    used = {row.process: json.loads(row.config)["client"] for row in processes.itertuples()}
    under_test = f"confluent-kafka {CLIENT} / librdkafka {CLIENT}"  # what the process itself loaded, in its container
    assert {p for p, c in used.items() if c == under_test} == {p for p in used if p.startswith(("producer", "consumer"))}
    assert all(c != under_test for p, c in used.items() if p.startswith("drain"))
    reads = pd.read_parquet(run_dir / "history" / "reads.parquet")
    live = reads[reads["phase"] == "live"]
    assert len(live) > 0 and live["leader_epoch"].isna().all()  # 1.9.2's binding has no Message.leader_epoch
    assert reads[reads["phase"] == "final"]["leader_epoch"].notna().all()  # the drain: the image's client
    assert ours(json.loads((run_dir / "state.json").read_text())["prefix"]) == []
