"""KAFKA-8069 (`make test-versions`, marker `versions`): committed offsets expired right after a coordinator loads them.

scenarios/versions/offsets-expire-on-load.yaml on Kafka 2.1.1 (affected) and 2.2.0 (fixed), both with
inter.broker.protocol.version pinned to 2.0: the only member of group expiry is paused past its session (the group
Empty), its coordinator's broker stopped cleanly (another broker loads the group) and started again, then the member
resumed. The spec holds the coordinator's lines (the group Empty, loaded elsewhere, and "Removed N expired offsets"
only on 2.1.1); the test holds the member's side to the mechanism, from the history: on 2.1.1 its reads after the
resume go back to offset 0 of every partition it had committed past (no committed offset left: librdkafka's
auto.offset.reset, earliest), and every rewound record's commit had been acknowledged before the coordinator moved;
on 2.2.0 they begin at or after its last commit acknowledged before the pause.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import REPO, run_passing

pytestmark = [pytest.mark.cluster, pytest.mark.versions]
SPEC = REPO / "scenarios" / "versions" / "offsets-expire-on-load.yaml"
MEMBER = "consumer-az1-0"


def fault_moments(run_dir: Path) -> dict[str, int]:
    """`<fault name>.start` / `.stop` -> time_ns, from the history's nemesis table."""
    rows = pd.read_parquet(run_dir / "history" / "nemesis.parquet")
    return {f"{json.loads(r.detail)['name']}.{r.type}": int(r.time_ns) for r in rows.itertuples()
            if r.type in ("start", "stop")}


def resumed_at(run_dir: Path, moments: dict[str, int]) -> tuple[dict[int, int], dict[int, int]]:
    """Per partition: the member's last offset acknowledged before its pause, and its lowest read after the resume."""
    commits = pd.read_parquet(run_dir / "history" / "commits.parquet")
    ok = commits[(commits["process"] == MEMBER) & (commits["status"] == "ok") & (commits["kind"] != "final")
                 & (commits["complete_ns"] < moments["away.start"])]
    reads = pd.read_parquet(run_dir / "history" / "reads.parquet")
    after = reads[(reads["process"] == MEMBER) & (reads["phase"] == "live") & (reads["poll_ns"] > moments["away.stop"])]
    return ({int(p): int(g["offset"].max()) for p, g in ok.groupby("partition")},
            {int(p): int(g["offset"].min()) for p, g in after.groupby("partition")})


@pytest.mark.parametrize(("configuration", "affected"), [("kafka-2-1-1", True), ("kafka-2-2-0", False)])
def test_kafka_8069_loaded_offsets_expire_only_before_the_fix(tmp_path: Path, configuration: str,
                                                              affected: bool) -> None:
    run_dir, verdict = run_passing(SPEC, tmp_path, configuration=configuration)  # PASS: the spec's logs and counts
    moments = fault_moments(run_dir)
    committed, lowest_after = resumed_at(run_dir, moments)
    assert committed and set(committed) <= set(lowest_after), (committed, lowest_after)
    if not affected:
        assert verdict["counts"]["rewound"] == 0, verdict["counts"]
        assert all(lowest_after[p] >= offset for p, offset in committed.items()), (committed, lowest_after)
        return
    assert all(lowest_after[p] == 0 for p in committed), (committed, lowest_after)  # from the earliest again
    examples = verdict["examples"]["rewound"]
    assert examples and all(e["commit"]["complete_ns"] < moments["move.start"] for e in examples), examples[:3]
