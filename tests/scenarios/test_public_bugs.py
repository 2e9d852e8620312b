"""Public bugs shown affected and fixed on the same faults (`make test-versions`, marker `versions`).

librdkafka #4261 (consumer duplicates while validating its offset after a leader change, fixed in 2.1.1):
scenarios/versions/consumer-validation-duplicates.yaml with the client under test 2.1.0, then 2.2.0 (2.1.1, the
release with the fix, hangs in a consumer's close after the leader moves: see the spec's notes). The
repeats are counted again here from the history: a fixed-assignment consumer's live reads, per partition
in poll order, whose offset does not increase.

KAFKA-15489 (an isolated KRaft controller leader that keeps leading, fixed in 3.7):
scenarios/versions/kraft-isolated-controller.yaml on Kafka 3.6.2, then 3.7.2. The longest stretch in which
two observers' own controllers each believed they led is measured again here from the observations: the
whole isolation (20 s) before the fix, at most about a second (the follower's fetch timeout against the
leader's 1.5 of it) plus an observer period after.

apache/kafka#11225 (a follower made while its broker cannot reach ZooKeeper is marked offline, 2.7.2 to 3.0.2;
3.1.0 marks a partition offline only on a storage error): scenarios/versions/zk-expiry-follower-offline.yaml on
2.7.2, then 3.1.2. Read again here from the journal and broker-2's own state-change.log: on 2.7.2 the move is
cancelled by its stop and never completes, and broker-2 ignored a LeaderAndIsr as "offline log directory"; on 3.1.2
the move completes onto [1, 2] after the heal and no such line is written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import REPO, run_passing

pytestmark = [pytest.mark.cluster, pytest.mark.versions]
SPEC = REPO / "scenarios" / "versions" / "consumer-validation-duplicates.yaml"
KRAFT_SPEC = REPO / "scenarios" / "versions" / "kraft-isolated-controller.yaml"
ZK_EXPIRY_SPEC = REPO / "scenarios" / "versions" / "zk-expiry-follower-offline.yaml"
HOLD_NS = 3_000_000_000  # an observer's view holds until its next observation, at most this long


def repeats_from_history(run_dir: Path) -> int:
    reads = pd.read_parquet(run_dir / "history" / "reads.parquet")
    live = reads[reads["phase"] == "live"].sort_values("seq")
    return int(sum((group["offset"].diff() <= 0).sum() for _, group in live.groupby(["process", "partition"])))


@pytest.mark.parametrize(("configuration", "affected"), [("client-2-1-0", True), ("client-2-2-0", False)])
def test_librdkafka_4261_consumer_repeats_only_before_the_fix(tmp_path: Path, configuration: str,
                                                            affected: bool) -> None:
    run_dir, verdict = run_passing(SPEC, tmp_path, configuration=configuration, timeout=1200)
    counts = verdict["counts"]
    assert (counts["nonmonotonic-poll"] > 0) == affected, counts
    assert repeats_from_history(run_dir) == counts["nonmonotonic-poll"]


def longest_controller_split_s(run_dir: Path) -> float:
    """The longest stretch in which the observers named two or more different leading controllers at once."""
    obs = pd.read_parquet(run_dir / "history" / "observations.parquet").sort_values("time_ns")
    views: dict[str, list[tuple[int, float | None]]] = {}
    for observer, rows in obs.groupby("observer"):
        firsts = rows.groupby("time_ns")["controller"].first()
        views[str(observer)] = [(int(t), None if pd.isna(c) else float(c)) for t, c in firsts.items()]
    spans = []  # (start, end, controller) per observer view
    for rows in views.values():
        for (t, c), following in zip(rows, [*(r[0] for r in rows[1:]), None], strict=True):
            end = t + HOLD_NS if following is None else min(following, t + HOLD_NS)
            if c is not None:
                spans.append((t, end, c))
    events = sorted({t for s in spans for t in s[:2]})
    longest = current = 0
    for lo, hi in zip(events, events[1:], strict=False):
        if len({c for start, end, c in spans if start <= lo and end >= hi}) >= 2:
            current += hi - lo
            longest = max(longest, current)
        else:
            current = 0
    return longest / 1e9


@pytest.mark.parametrize(("configuration", "affected"), [("kafka-3-6-2", True), ("kafka-3-7-2", False)])
def test_kafka_15489_isolated_kraft_leader_keeps_leading_only_before_the_fix(tmp_path: Path, configuration: str,
                                                                             affected: bool) -> None:
    run_dir, verdict = run_passing(KRAFT_SPEC, tmp_path, configuration=configuration)
    split = longest_controller_split_s(run_dir)
    if affected:
        assert verdict["expectation"]["facts"]["two-controllers"], verdict["expectation"]
        assert split >= 10, split
    else:
        assert split < 3, split


@pytest.mark.parametrize(("configuration", "affected"), [("kafka-2-7-2", True), ("kafka-3-1-2", False)])
def test_follower_made_without_zookeeper_is_marked_offline_only_before_11225(tmp_path: Path, configuration: str,
                                                                             affected: bool) -> None:
    run_dir, _ = run_passing(ZK_EXPIRY_SPEC, tmp_path, configuration=configuration)
    nemesis = pd.read_parquet(run_dir / "history" / "nemesis.parquet")
    heal = nemesis[(nemesis["fault"] == "isolate-az") & (nemesis["type"] == "stop")]
    heal_ns = int(heal.iloc[0]["time_ns"])
    moves = [json.loads(d) for d in nemesis[(nemesis["fault"] == "reassign") & (nemesis["type"] == "info")]["detail"]]
    done = [m for m in moves if "done_ns" in m]
    state_change = (run_dir / "nodes" / "az3-node" / "logs" / "broker" / "state-change.log").read_text()
    assert "makeFollower will be skipping the state change for the partition faultline-0" in state_change
    if affected:
        assert not done and any("cancelled_ns" in m for m in moves), moves
        assert "as the local replica for the partition is in an offline log directory" in state_change
    else:
        assert len(done) == 1 and done[0]["replicas_now"] == {"0": [1, 2]} and done[0]["done_ns"] > heal_ns, moves
        assert "offline log directory" not in state_change
