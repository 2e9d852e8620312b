"""What the clock-fault cluster tests read from a run folder: which node the coordinator's jumps hit, when, and the
times that node wrote a producer's transactions with (its JVM's wall clock) in its __transaction_state."""

from __future__ import annotations

import json
import re
import subprocess

from nemesis.journal import read_journal
from testbed.dist.kafka import classpath, java_for
from testbed.kafka.replicas import DUMP_CLASS
from testbed.runfolder import RunFolder


def coordinator_jumps(run: RunFolder) -> str:
    """The node both clock-jump faults hit (the transaction coordinator's, resolved at each), checked: one broker,
    30 s back at the first, back to true time at the second."""
    starts = [row for row in read_journal(run.nemesis_journal) if row["fault"] == "clock-jump" and row["type"] == "start"]
    assert [row["detail"]["name"] for row in starts] == ["coordinator-back", "coordinator-forward"], starts
    nodes = {tuple(row["targets"]["nodes"]) for row in starts}
    assert len(nodes) == 1 and len(next(iter(nodes))) == 1, nodes  # the coordinator did not move in between
    (node,) = next(iter(nodes))
    process = f"{node}/broker"
    assert [row["detail"]["offsets"] for row in starts] == [{process: -30000.0}, {process: 0.0}], starts
    return str(node)


def jump_times_ms(run: RunFolder) -> dict[str, int]:
    """When each clock-jump started, on the harness's clock (ms), by its name."""
    return {row["detail"]["name"]: row["time_ns"] // 1_000_000 for row in read_journal(run.nemesis_journal)
            if row["type"] == "start" and row["fault"] == "clock-jump"}


def transactional_id(run: RunFolder, process: str) -> str:
    """The transactional.id of a transactional producer of the run (KafkaCluster.transactional_id)."""
    return f"{json.loads((run.root / 'state.json').read_text())['prefix']}-{process}"


def java_hash(text: str) -> int:
    """Java's String.hashCode, which picks a transactional.id's __transaction_state partition."""
    h = 0
    for ch in text.encode("utf-16-be").hex(" ", 2).split():
        h = (31 * h + int(ch, 16)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def transaction_partition(transactional_id: str, partitions: int) -> int:
    """The __transaction_state partition of `transactional_id`: Kafka's `Utils.abs(hashCode) % partitions`, where
    Utils.abs is Math.abs (0 for Integer.MIN_VALUE), not a mask of the sign bit: the two differ for a negative hash
    (CI-like run 2026-11-28: fl0dfcb8-producer-az1-0 lived in partition 2, the mask said 0)."""
    h = java_hash(transactional_id)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


TXN_ROW = re.compile(r"CreateTime: (\d+).*transactionalId=(\S+?)\s.*state=(\w+)")


def transaction_log(run: RunFolder, node: str, transactional_id: str, kafka_version: str,
                    partitions: int = 3) -> list[tuple[int, str]]:
    """(the coordinator's time it wrote it, ms; the state) of every entry for `transactional_id` in `node`'s copy
    of its __transaction_state partition (cluster config: 3 partitions), in log order."""
    partition = transaction_partition(transactional_id, partitions)
    folder = run.node(node).data("broker") / f"__transaction_state-{partition}"
    files = sorted(folder.glob("*.log"))
    argv = [java_for(kafka_version), "-Xmx256m", "-cp", classpath(kafka_version), DUMP_CLASS,
            "--transaction-log-decoder", "--files", ",".join(str(f) for f in files)]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True).stdout
    return [(int(m.group(1)), m.group(3)) for m in map(TXN_ROW.search, out.splitlines())
            if m is not None and m.group(2) == transactional_id]
