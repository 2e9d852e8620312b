"""Replica dumps: DumpLogSegments output parsed, replicas compared with each other and with the final log."""

from __future__ import annotations

import gzip
from pathlib import Path

from testbed.kafka.replicas import (
    Replica,
    against_final,
    compare_replicas,
    kept_raw,
    merge_segments,
    parse_dump,
)
from testbed.runfolder import RunFolder

# As kafka.tools.DumpLogSegments 2.7 prints it with --print-data-log --deep-iteration (fields trimmed
# where the parser does not look; the record lines keep Kafka's order).
DUMP = """\
Dumping /r/nodes/az1-node/kafka-data/t-0/00000000000000000000.log
Starting offset: 0
baseOffset: 0 lastOffset: 1 count: 2 baseSequence: 0 lastSequence: 1 producerId: 1000 producerEpoch: 0 \
partitionLeaderEpoch: 0 isTransactional: false isControl: false position: 0 CreateTime: 1 size: 90 magic: 2 \
compresscodec: NONE crc: 1 isvalid: true
| offset: 0 CreateTime: 1 keysize: -1 valuesize: 3 sequence: 0 headerKeys: [] payload: v-0
| offset: 1 CreateTime: 1 keysize: 1 valuesize: 3 sequence: 1 headerKeys: [] key: k payload: v-1
baseOffset: 2 lastOffset: 2 count: 1 baseSequence: -1 lastSequence: -1 producerId: 1000 producerEpoch: 0 \
partitionLeaderEpoch: 3 isTransactional: true isControl: true position: 90 CreateTime: 2 size: 78 magic: 2 \
compresscodec: NONE crc: 2 isvalid: true
| offset: 2 CreateTime: 2 keysize: 4 valuesize: 6 sequence: -1 headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 0
Dumping /r/nodes/az1-node/kafka-data/t-0/00000000000000000003.log
Starting offset: 3
baseOffset: 3 lastOffset: 3 count: 1 baseSequence: 2 lastSequence: 2 producerId: 1000 producerEpoch: 0 \
partitionLeaderEpoch: 4 isTransactional: false isControl: false position: 0 CreateTime: 3 size: 70 magic: 2 \
compresscodec: NONE crc: 3 isvalid: false
| offset: 3 CreateTime: 3 keysize: -1 valuesize: 3 sequence: 2 headerKeys: [] payload: v-3
"""
SEG0 = Path("/r/nodes/az1-node/kafka-data/t-0/00000000000000000000.log")
SEG3 = Path("/r/nodes/az1-node/kafka-data/t-0/00000000000000000003.log")


def replica(node: str, values: dict[int, str]) -> Replica:
    return Replica(node, dict(values), {0})


def test_a_dump_gives_each_segments_records_epochs_and_bad_batches() -> None:
    dumped = parse_dump(DUMP.splitlines(keepends=True))
    assert set(dumped) == {SEG0, SEG3}
    first = dumped[SEG0]
    assert first.values == {0: "v-0", 1: "v-1"}, "control records are not data; a key does not end up in the value"
    assert first.control_records == 1 and first.epochs == {0, 3} and first.invalid_batches == 0
    assert dumped[SEG3].values == {3: "v-3"} and dumped[SEG3].invalid_batches == 1


def test_segments_of_one_replica_join_into_one() -> None:
    merged = merge_segments([("az1-node", SEG0), ("az1-node", SEG3)], parse_dump(DUMP.splitlines(keepends=True)))
    whole = merged["az1-node"]
    assert whole.values == {0: "v-0", 1: "v-1", 3: "v-3"}
    assert whole.summary() == {"records": 3, "first_offset": 0, "last_offset": 3, "leader_epochs": [0, 3, 4],
                               "invalid_batches": 1, "control_records": 1}


def test_identical_replicas_agree() -> None:
    same = {n: replica(n, {0: "a", 1: "b"}) for n in ("az1-node", "az2-node", "az3-node")}
    out = compare_replicas("t", 0, same)
    assert out["agree"] and out["same_end"] and out["differing_offsets"] == 0 and out["examples"] == []


def test_replicas_that_hold_different_values_or_lengths_do_not_agree() -> None:
    reps = {"az1-node": replica("az1-node", {0: "a", 1: "b", 2: "c"}),
            "az2-node": replica("az2-node", {0: "a", 1: "x"}),
            "az3-node": replica("az3-node", {0: "a", 1: "b", 2: "c"})}
    out = compare_replicas("t", 0, reps)
    assert not out["agree"] and not out["same_end"] and out["differing_offsets"] == 1
    assert out["examples"] == [{"offset": 1, "values": {"az1-node": "b", "az2-node": "x", "az3-node": "b"}}]


def test_the_final_log_is_held_against_every_disk() -> None:
    reps = {n: replica(n, {0: "a", 1: "b", 2: "c"}) for n in ("az1-node", "az2-node")}
    reps["az2-node"].values[3] = "d"  # on one replica only: not required of the drain
    final = {0: {"a"}, 2: {"c", "z"}, 5: {"e"}}
    out = against_final(reps, final)
    assert out["not_in_final"] == 1 and out["not_in_final_examples"] == [1]
    assert out["final_not_on_disk"] == 2 and out["final_not_on_disk_examples"] == [2, 5]
    assert against_final(reps, {0: {"a"}, 1: {"b"}, 2: {"c"}}) == {
        "not_in_final": 0, "not_in_final_examples": [], "final_not_on_disk": 0, "final_not_on_disk_examples": []}


def test_the_raw_dump_is_kept_per_node_as_kafka_printed_it(tmp_path: Path) -> None:
    text = DUMP.replace("/r/nodes", str(tmp_path / "nodes"))
    text += f"Dumping {tmp_path}/nodes/az2-node/kafka-data/t-0/00000000000000000000.log\nStarting offset: 0\n"
    lines = text.splitlines(keepends=True)
    assert list(kept_raw(lines, RunFolder(tmp_path), "t-0")) == lines, "every line passes through unchanged"
    kept = {node: gzip.decompress((tmp_path / "nodes" / node / "replica-dump" / "t-0.txt.gz").read_bytes()).decode()
            for node in ("az1-node", "az2-node")}
    assert kept["az1-node"] + kept["az2-node"] == text
    assert kept["az2-node"].startswith(f"Dumping {tmp_path}/nodes/az2-node/")


def test_examples_spread_over_every_difference_first_and_last_included() -> None:
    reps = {"az1-node": replica("az1-node", {o: f"a-{o}" for o in range(50)}),
            "az2-node": replica("az2-node", {o: f"b-{o}" for o in range(50)})}
    offsets = [e["offset"] for e in compare_replicas("t", 0, reps)["examples"]]
    assert len(offsets) == 20 and offsets[0] == 0 and offsets[-1] == 49 and offsets == sorted(set(offsets))


def test_a_runs_before_heal_copies_stay_within_its_budget() -> None:
    """A soak's hundreds of faults: each copy gets at most each node's share of what is left; then none."""
    from types import SimpleNamespace
    from typing import Any

    from testbed.kafka.replicas import SNAPSHOT_LIMIT_BYTES, SnapshotBudget

    asked: list[tuple[str, int]] = []

    def copy(cluster: Any, label: str, limit: int) -> dict[str, Any]:
        asked.append((label, limit))
        held = 3 * min(limit, 100)  # three nodes of 100 bytes of segments each, if the limit lets them
        return {"label": label, "files": 3, "bytes": held if limit >= 100 else 0}

    budget = SnapshotBudget(SimpleNamespace(nodes=["a", "b", "c"]), budget_bytes=600, copy=copy)  # type: ignore[arg-type]
    outs = [budget(f"{i:02d}-kill") for i in range(1, 4)]
    assert asked == [("01-kill", 200), ("02-kill", 100)], "each node's share of what is left"
    assert [o["bytes"] for o in outs[:2]] == [300, 300] and budget.left == 0
    assert outs[2] == {"label": "03-kill", "files": 0, "bytes": 0,
                       "skipped": "the run's 600 bytes of before-heal copies are spent"}, "nothing copied"
    small = SnapshotBudget(SimpleNamespace(nodes=["a", "b", "c"]), budget_bytes=280, copy=copy)  # type: ignore[arg-type]
    assert small("04-kill")["bytes"] == 0 and small.left == 280, "a node holding more than its share is skipped"
    assert SnapshotBudget(SimpleNamespace(nodes=["a"]), copy=copy)("x")["bytes"] == 300  # type: ignore[arg-type]
    assert asked[-1] == ("x", SNAPSHOT_LIMIT_BYTES), "a run with budget to spare: the per-node limit as before"
