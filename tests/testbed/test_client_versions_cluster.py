"""The client under test on a real cluster: smoke with confluent-kafka 1.9.2 (no KIP-320 in the binding, librdkafka
1.x defaults) and 2.10.1, each in its own venv, the drain and observers on the harness's client.

`make test-versions` (marker `versions`), not `make test`: the first run builds each venv from PyPI.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.conftest import REPO, faultline

pytestmark = [pytest.mark.cluster, pytest.mark.versions]


@pytest.mark.parametrize(("client", "epochs"), [("1.9.2", False), ("2.10.1", True)])
def test_smoke_with_a_client_under_test_is_valid_and_says_which_client_did_what(
        tmp_path: Path, client: str, epochs: bool) -> None:
    spec = yaml.safe_load((REPO / "scenarios" / "smoke.yaml").read_text())
    spec["clients"] = {"confluent_kafka": client}
    (tmp_path / "smoke.yaml").write_text(yaml.safe_dump(spec))
    proc = faultline("run", str(tmp_path / "smoke.yaml"), "--results", str(tmp_path / "results"), timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (run_dir,) = [p for p in (tmp_path / "results" / "smoke").iterdir() if p.name != "latest"]
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["valid"] is True and verdict["errors"] == {} and verdict["stats"]["ok"] >= 3000
    versions = json.loads((run_dir / "run.json").read_text())["versions"]
    assert versions["client_under_test"]["confluent_kafka"] == client
    assert versions["client_under_test"]["python"].startswith("3.10.")
    processes = pd.read_parquet(run_dir / "history" / "processes.parquet")
    used = {row.process: json.loads(row.config)["client"] for row in processes.itertuples()}
    under_test = f"confluent-kafka {client} / librdkafka {client}"
    assert {p for p, c in used.items() if c == under_test} == {p for p in used if p.startswith(("producer", "consumer"))}
    assert all(c != under_test for p, c in used.items() if p.startswith("drain"))
    reads = pd.read_parquet(run_dir / "history" / "reads.parquet")
    live = reads[reads["phase"] == "live"]
    assert len(live) > 0 and live["leader_epoch"].notna().all() == epochs and live["leader_epoch"].isna().all() != epochs
    assert reads[reads["phase"] == "final"]["leader_epoch"].notna().all()  # the drain: the harness's client
