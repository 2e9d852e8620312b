"""Public bugs shown affected and fixed on the same faults (`make test-versions`, marker `versions`).

librdkafka #4261 (consumer duplicates while validating its offset after a leader change, fixed in 2.1.1):
scenarios/versions/consumer-validation-duplicates.yaml with the client under test 2.1.0, then 2.2.0 (2.1.1, the
release with the fix, hangs in a consumer's close after the leader moves: see the spec's notes). The
repeats are counted again here from the history: a fixed-assignment consumer's live reads, per partition
in poll order, whose offset does not increase.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import REPO, faultline

pytestmark = [pytest.mark.cluster, pytest.mark.versions]
SPEC = REPO / "scenarios" / "versions" / "consumer-validation-duplicates.yaml"


def repeats_from_history(run_dir: Path) -> int:
    reads = pd.read_parquet(run_dir / "history" / "reads.parquet")
    live = reads[reads["phase"] == "live"].sort_values("seq")
    return int(sum((group["offset"].diff() <= 0).sum() for _, group in live.groupby(["process", "partition"])))


@pytest.mark.parametrize(("configuration", "affected"), [("client-2-1-0", True), ("client-2-2-0", False)])
def test_librdkafka_4261_consumer_repeats_only_before_the_fix(tmp_path: Path, configuration: str,
                                                            affected: bool) -> None:
    proc = faultline("run", str(SPEC), "--configuration", configuration, "--results", str(tmp_path), timeout=1200)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (verdict_file,) = list((tmp_path / "consumer-validation-duplicates").rglob("verdict.json"))
    counts = json.loads(verdict_file.read_text())["counts"]
    assert (counts["nonmonotonic-poll"] > 0) == affected, counts
    assert repeats_from_history(verdict_file.parent) == counts["nonmonotonic-poll"]
