"""hw-truncation (KIP-101) on a real cluster: acknowledged acks=all writes lost on 0.10.2.2, none on 0.11.0.3 and 2.7.2.

`make test-versions` (marker `versions`), not `make test`. Each configuration's expectation is in the spec; the
run's exit status is 0 only when every configuration passes. The lost writes are checked again here from the
history: acknowledged, absent from every drain's final read.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import REPO, faultline

pytestmark = [pytest.mark.cluster, pytest.mark.versions]
SPEC = REPO / "scenarios" / "versions" / "hw-truncation.yaml"


def lost_from_history(run_dir: Path) -> int:
    """Acknowledged values no final read saw, from the history tables alone (not the verdict)."""
    writes = pd.read_parquet(run_dir / "history" / "writes.parquet")
    reads = pd.read_parquet(run_dir / "history" / "reads.parquet")
    acked = set(writes.loc[writes["status"] == "ok", "value"])
    return len(acked - set(reads.loc[reads["phase"] == "final", "value"]))


@pytest.mark.parametrize(("configuration", "loses"), [("kafka-0-10-2", True), ("kafka-0-11-0", False),
                                                      ("kafka-2-7-2", False)])
def test_hw_truncation_loses_acknowledged_writes_only_before_leader_epochs(
        tmp_path: Path, configuration: str, loses: bool) -> None:
    proc = faultline("run", str(SPEC), "--configuration", configuration, "--results", str(tmp_path), timeout=1200)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (run_dir,) = [p for p in (tmp_path / "hw-truncation").rglob("verdict.json")]
    verdict = json.loads(run_dir.read_text())
    assert (verdict["counts"]["lost"] > 0) == loses, verdict["counts"]
    assert [line for line in proc.stdout.splitlines() if line.startswith(("PASS", "FAIL"))][0].startswith("PASS")
    assert (lost_from_history(run_dir.parent) > 0) == loses
