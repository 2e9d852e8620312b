"""librdkafka #4208 (`make test-versions`, marker `versions`): batch consume skipping offsets at a rebalance's pause.

scenarios/versions/batch-consume-skip.yaml with the client under test 2.0.2 (affected), then 2.1.1 (fixed; the fix
is 2.1.0's). Before 2.1.0, consume(n) advanced a partition's position as it gathered each message into the batch;
the pause librdkafka puts on every assigned partition at a cooperative rebalance records that position to resume
from, and the pause's barrier then purges the batch's messages of the partition, so a member that keeps the
partition resumes after records it was never handed, and its next commit (commit after) passes them: group-skip,
an error with `after`. The test holds each skip to that: the record lies in a gap of one member instance's reads
of its partition, and that instance journaled a rebalance between the two polls either side of the gap.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.conftest import REPO, run_passing
from workloads.consumer import SPAN
from workloads.journal import JournalReader

pytestmark = [pytest.mark.cluster, pytest.mark.versions]
SPEC = REPO / "scenarios" / "versions" / "batch-consume-skip.yaml"


def rebalances(run_dir: Path) -> pd.DataFrame:
    """Every member instance's journaled rebalance callbacks: process, instance, time."""
    rows = []
    for path in sorted((run_dir / "journal").glob("consumer-*.jsonl")):
        process, _, instance = path.stem.partition(".")
        rows += [{"process": process, "instance": int(instance or 0), "t": rec["t"]}
                 for _, rec in JournalReader(path) if rec["kind"] == "rebalance"]
    return pd.DataFrame(rows, columns=["process", "instance", "t"])


def gap_around(reads: pd.DataFrame, partition: int, offset: int) -> list[dict[str, Any]]:
    """Each member instance's two consecutive reads of `partition` that straddle `offset` (read neither)."""
    found = []
    mine = reads[reads["partition"] == partition].assign(instance=lambda r: r["seq"] // SPAN)
    for (process, instance), rows in mine.sort_values("seq").groupby(["process", "instance"]):
        below, above = rows[rows["offset"] < offset], rows[rows["offset"] > offset]
        if len(below) and len(above) and below["seq"].max() < above["seq"].min():
            found.append({"process": process, "instance": instance, "before_ns": int(below["poll_ns"].iloc[-1]),
                          "after_ns": int(above["poll_ns"].iloc[0])})
    return found


@pytest.mark.parametrize(("configuration", "affected"), [("client-2-0-2", True), ("client-2-1-1", False)])
def test_librdkafka_4208_batch_consume_skips_at_a_rebalance_only_before_the_fix(
        tmp_path: Path, configuration: str, affected: bool) -> None:
    run_dir, verdict = run_passing(SPEC, tmp_path, configuration=configuration, timeout=1200)
    counts = verdict["counts"]
    assert counts["rewound"] == counts["lost-commit"] == 0, counts
    if not affected:
        assert counts["group-skip"] == 0, counts
        return
    assert counts["group-skip"] > 0 and "group-skip" in verdict["errors"], counts  # an error with commit after
    reads = pd.read_parquet(run_dir / "history" / "reads.parquet").query("phase == 'live'")
    callbacks = rebalances(run_dir)
    for example in verdict["examples"]["group-skip"]:
        assert example["value"] not in set(reads["value"]), example  # handed to no member
        gaps = gap_around(reads, example["partition"], example["offset"])
        # A member instance read the partition below and above the record, with a rebalance of its own in between.
        assert any(((callbacks["process"] == g["process"]) & (callbacks["instance"] == g["instance"])
                    & (callbacks["t"] > g["before_ns"]) & (callbacks["t"] <= g["after_ns"])).any()
                   for g in gaps), (example, gaps)
