"""A small but complete run folder, built by hand: the isolate-az-leader story with acks=1.

20 s, three AZs (broker i in az(i+1)), topic ``t`` with partitions 0 and 1.
At +5 s az1 is isolated while broker-0 leads t/0; broker-0 keeps believing
it leads, brokers 1 and 2 elect broker 1 at +6 s: two leaders until the heal
at +12 s. az1's producer gets three writes acknowledged by broker-0 at
offsets that broker-1 then fills with other values (divergence); broker-0
truncates them on healing (lost). Its writes to t/1 time out meanwhile; two
of those made it into the log (recovered). At +14 s broker-2 (controller,
leader of t/1) is killed for 2 s. Written as a mix of Parquet and JSONL.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from checkers.example_builders import WRITE_FIELDS

NS = 1_000_000_000
MS = 1_000_000
T0 = 1_780_000_000 * NS  # 2026-05-28 20:26:40 UTC
AZS = ("az1", "az2", "az3")
FAULT_START, ELECTION, FAULT_STOP = T0 + 5 * NS, T0 + 6 * NS, T0 + 12 * NS
KILL_START, KILL_STOP = T0 + 14 * NS, T0 + 16 * NS
END = T0 + 20 * NS
DRAIN = T0 + 21 * NS
ACKS1 = {
    "acks": "1",
    "enable.idempotence": False,
    "max.in.flight.requests.per.connection": 5,
    "retries": 2147483647,
}


@dataclass
class Story:
    writes: list[dict[str, Any]] = field(default_factory=list)
    logs: dict[int, list[tuple[str, int]]] = field(
        default_factory=lambda: {0: [], 1: []}
    )  # value, append time
    branch: list[tuple[str, int, int]] = field(default_factory=list)  # value, offset, time
    lost: list[dict[str, Any]] = field(default_factory=list)
    recovered: list[dict[str, Any]] = field(default_factory=list)


def _write(story: Story, az: str, op_id: int, t: int) -> None:
    process = f"producer-{az}-0"
    partition = op_id % 2
    value = f"p-{az}-0-{op_id}"
    row: dict[str, Any] = {
        "process": process,
        "op_id": op_id,
        "topic": "t",
        "key": None,
        "value": value,
        "partition": partition,
        "offset": None,
        "status": "ok",
        "error": None,
        "invoke_ns": t,
        "complete_ns": t + 4 * MS,
        "az": az,
    }
    log = story.logs[partition]
    isolated = az == "az1" and FAULT_START <= t < FAULT_STOP
    if partition == 0 and isolated:
        if len(story.branch) < 3:  # broker-0 still accepts acks=1 writes: a branch of the log
            row["offset"] = len(log) + len(story.branch)
            story.branch.append((value, row["offset"], t))
            story.lost.append(row)
        else:
            row.update(status="info", error="REQUEST_TIMED_OUT", complete_ns=t + 30 * MS)
    elif partition == 0 and FAULT_START <= t < ELECTION:
        row.update(status="info", error="REQUEST_TIMED_OUT", complete_ns=t + 30 * MS)
    elif partition == 1 and isolated:
        row.update(status="info", error="REQUEST_TIMED_OUT", complete_ns=t + 30 * MS)
        if len(story.recovered) < 2:  # the broker wrote it; the answer never came back
            row["complete_ns"] = None
            story.recovered.append(row)
            log.append((value, t + 2 * MS))
    elif partition == 1 and KILL_START <= t < KILL_START + NS // 2:
        row.update(status="fail", error="NOT_LEADER_OR_FOLLOWER")
    else:
        row["offset"] = len(log)
        log.append((value, t + 2 * MS))
    story.writes.append(row)


def _story() -> Story:
    story = Story()
    op_ids = dict.fromkeys(AZS, 0)
    for tick in range(400):  # every 50 ms for 20 s
        for i, az in enumerate(AZS):
            _write(story, az, op_ids[az], T0 + tick * 50 * MS + i * 7 * MS)
            op_ids[az] += 1
    return story


def _reads(story: Story) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    seqs = dict.fromkeys(AZS, 0)
    for partition, log in story.logs.items():
        for offset, (value, appended) in enumerate(log):
            for az in AZS:
                poll = appended + 100 * MS
                if az == "az1" and FAULT_START <= poll < FAULT_STOP:
                    poll = FAULT_STOP + 200 * MS
                rows.append(
                    {
                        "process": f"consumer-{az}-0",
                        "seq": 0,
                        "phase": "live",
                        "topic": "t",
                        "partition": partition,
                        "offset": offset,
                        "key": None,
                        "value": value,
                        "leader_epoch": 0,
                        "poll_ns": poll,
                        "az": az,
                        "group": "g",
                    }
                )
    rows.sort(key=lambda r: (r["process"], r["poll_ns"], r["partition"], r["offset"]))
    for row in rows:
        row["seq"] = seqs[row["az"]]
        seqs[row["az"]] += 1
    seq = 0
    for partition, log in story.logs.items():
        for offset, (value, _) in enumerate(log):
            rows.append(
                {
                    "process": "drain-az2",
                    "seq": seq,
                    "phase": "final",
                    "topic": "t",
                    "partition": partition,
                    "offset": offset,
                    "key": None,
                    "value": value,
                    "leader_epoch": None,
                    "poll_ns": DRAIN + seq * MS,
                    "az": "az2",
                    "group": None,
                }
            )
            seq += 1
    return rows


def _leader(observer: int, partition: int, t: int) -> tuple[int | None, int, list[int]]:
    """(leader, epoch, isr) of a partition in one broker's view at time t."""
    if partition == 0:
        if t < FAULT_START:
            return 0, 0, [0, 1, 2]
        if observer == 0 and t < FAULT_STOP:
            return 0, 0, [0, 1, 2]  # isolated, it never learns it was replaced
        if t < ELECTION:
            return 0, 0, [0, 1, 2]
        return 1, 1, [1, 2] if t < FAULT_STOP + NS else [0, 1, 2]
    if KILL_START + NS // 2 <= t < KILL_STOP + NS:
        return 1, 1, [0, 1]
    if KILL_START <= t < KILL_START + NS // 2:
        return None, 0, [0, 1]
    return 2, (0 if t < KILL_START else 2), [0, 1, 2]


def _observations() -> list[dict[str, Any]]:
    rows = []
    for step in range(41):
        t = T0 + step * NS // 2
        for observer in (0, 1, 2):
            if observer == 2 and KILL_START <= t < KILL_STOP:
                continue  # killed: no view at all
            controller = 1 if t >= KILL_START + NS // 2 and observer != 2 else 2
            if observer == 2 and t >= KILL_STOP:
                controller = 1
            for partition in (0, 1):
                leader, epoch, isr = _leader(observer, partition, t)
                rows.append(
                    {
                        "time_ns": t + observer * MS,
                        "observer": f"broker-{observer}",
                        "topic": "t",
                        "partition": partition,
                        "leader": leader,
                        "isr": json.dumps(isr),
                        "leader_epoch": epoch,
                        "controller": controller,
                    }
                )
    return rows


def _nemesis() -> list[dict[str, Any]]:
    isolate = json.dumps({"az": "az1", "nodes": ["n1", "client-az1"]})
    return [
        {"time_ns": FAULT_START, "type": "start", "fault": "isolate-az", "targets": isolate, "detail": None},
        {"time_ns": FAULT_STOP, "type": "stop", "fault": "isolate-az", "targets": isolate, "detail": None},
        {
            "time_ns": T0 + 13 * NS,
            "type": "info",
            "fault": "leader-of",
            "targets": json.dumps(["t/1"]),
            "detail": "broker-2",
        },
        {
            "time_ns": KILL_START,
            "type": "start",
            "fault": "kill",
            "targets": json.dumps(["broker-2"]),
            "detail": "SIGKILL",
        },
        {
            "time_ns": KILL_STOP,
            "type": "stop",
            "fault": "kill",
            "targets": json.dumps(["broker-2"]),
            "detail": None,
        },
    ]


def _processes() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for az in AZS:
        rows.append({"process": f"producer-{az}-0", "role": "producer", "az": az, "config": ACKS1})
        rows.append(
            {
                "process": f"consumer-{az}-0",
                "role": "consumer",
                "az": az,
                "config": {
                    "group.id": "g",
                    "enable.auto.commit": True,
                    "isolation.level": "read_uncommitted",
                },
            }
        )
    rows.append(
        {
            "process": "drain-az2",
            "role": "drain",
            "az": "az2",
            "config": {"isolation.level": "read_uncommitted"},
        }
    )
    return rows


def _verdict(story: Story) -> dict[str, Any]:
    isolate = {
        "fault": "isolate-az",
        "targets": {"az": "az1", "nodes": ["n1", "client-az1"]},
        "start_ns": FAULT_START,
        "stop_ns": FAULT_STOP,
    }
    lost = [
        dict(
            {k: w[k] for k in WRITE_FIELDS},
            classified="error",
            faults=[isolate],
            leaders=[0, 1],
        )
        for w in story.lost
    ]
    log0 = story.logs[0]
    divergence = []
    for value, offset, t in story.branch:
        other = log0[offset][0]
        divergence.append(
            {
                "value": min(value, other),
                "topic": "t",
                "partition": 0,
                "offset": offset,
                "process": "producer-az1-0",
                "values": sorted([value, other]),
                "classified": "error",
                "evidence": [
                    {"source": "write", "value": value, "process": "producer-az1-0", "time_ns": t},
                    {
                        "source": "write",
                        "value": other,
                        "process": other.rsplit("-", 1)[0].replace("p-", "producer-"),
                        "time_ns": log0[offset][1],
                    },
                ],
                "faults": [isolate],
                "leaders": [0, 1],
            }
        )
    # The minimal form: no times, no faults; the report must find them in the history.
    recovered = [
        {"value": w["value"], "topic": "t", "partition": 1, "process": w["process"]} for w in story.recovered
    ]
    ok = sum(w["status"] == "ok" for w in story.writes)
    fail = sum(w["status"] == "fail" for w in story.writes)
    counts = {
        "lost": 3,
        "duplicate": 0,
        "divergence": 3,
        "phantom": 0,
        "vanished-read": 0,
        "failed-present": 0,
        "recovered": 2,
        "reordered": 0,
        "nonmonotonic-poll": 0,
        "poll-skip": 0,
    }
    final = sum(len(log) for log in story.logs.values())
    expectation = {
        "expected": "lost > 0, divergence > 0, two-leaders",
        "observed": "lost = 3, divergence = 3, two-leaders: yes, valid = False",
        "passed": True,
        "mismatches": [],
        "facts": {"two-leaders": True},
    }
    return {
        "valid": False,
        "engine": "pandas",
        "counts": counts,
        "errors": {"lost": 3, "divergence": 3},
        "expectation": expectation,
        "examples": {"lost": lost, "divergence": divergence, "recovered": recovered},
        "stats": {
            "writes": len(story.writes),
            "ok": ok,
            "fail": fail,
            "info": len(story.writes) - ok - fail,
            "reads": final * 4,
            "final_reads": final,
        },
    }


# As the harness writes it: the resolved spec of one configuration, keys sorted.
SPEC = """\
cluster:
  controller: 2
  min_insync_replicas: 1
  partitions: 2
  zookeeper_session_timeout_ms: 6000
configuration: acks1
description: Isolate az1 while broker-0 leads (controller elsewhere); two leaders; acks=1 loses writes.
duration_s: 20
name: isolate-az-leader
nemesis:
- {at: 5, fault: isolate-az, name: isolate-leader, target: leader}
- {at: 12, stop: isolate-leader}
- {at: 14, fault: kill, name: kill-controller, target: controller}
- {at: 16, stop: kill-controller}
notes: |
  broker-0 loses ZooKeeper and keeps believing it leads;
  the majority side elects broker-1 after the session timeout.
seed: 11
workloads:
  consumers:
  - azs: [az1, az2, az3]
    mode: group
  producers:
  - azs: [az1, az2, az3]
    rate: 20
    settings: {acks: 1, enable.idempotence: false, max.in.flight.requests.per.connection: 5}
"""


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows), encoding="utf-8")


def build_run(root: Path) -> Path:
    """Write the run folder at ``root`` (created) and return it."""
    story = _story()
    history = root / "history"
    history.mkdir(parents=True)
    pq.write_table(
        pa.Table.from_pylist(
            story.writes,
            schema=pa.schema(
                [
                    ("process", pa.string()),
                    ("op_id", pa.int64()),
                    ("topic", pa.string()),
                    ("key", pa.string()),
                    ("value", pa.string()),
                    ("partition", pa.int32()),
                    ("offset", pa.int64()),
                    ("status", pa.string()),
                    ("error", pa.string()),
                    ("invoke_ns", pa.int64()),
                    ("complete_ns", pa.int64()),
                    ("az", pa.string()),
                ]
            ),
        ),
        history / "writes.parquet",
    )
    _jsonl(history / "reads.jsonl", _reads(story))
    _jsonl(history / "processes.jsonl", _processes())
    pq.write_table(pa.Table.from_pylist(_nemesis()), history / "nemesis.parquet")
    _jsonl(history / "observations.jsonl", _observations())
    (root / "spec.yaml").write_text(SPEC, encoding="utf-8")
    (root / "verdict.json").write_text(json.dumps(_verdict(story), indent=2) + "\n", encoding="utf-8")
    (root / "harness.log").write_text("run finished\n", encoding="utf-8")
    _node_logs(root / "nodes")
    return root


def log_line(t: int, text: str) -> str:
    """A broker server.log line at time t (log4j's "[%d] %p %m (%c)", UTC)."""
    stamp = datetime.fromtimestamp(t // NS, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
    return f"[{stamp},{(t % NS) // MS:03d}] {text}\n"


# What each broker logged: broker-0 loses ZooKeeper while isolated, broker-1 takes over t/0.
NODE_LOGS = {
    0: [(T0 + NS, "INFO [KafkaServer id=0] started (kafka.server.KafkaServer)"),
        (FAULT_START + 4 * NS, "WARN Client session timed out, have not heard from server in 4000ms "
                               "(org.apache.zookeeper.ClientCnxn)"),
        (FAULT_STOP + NS // 2, "INFO [Partition t-0 broker=0] truncating to offset 40 (kafka.cluster.Partition)")],
    1: [(T0 + NS, "INFO [KafkaServer id=1] started (kafka.server.KafkaServer)"),
        (ELECTION, "INFO [Partition t-0 broker=1] t-0 starts at leader epoch 1 (kafka.cluster.Partition)"),
        (ELECTION + MS, "ERROR [ReplicaFetcher replicaId=1, leaderId=0] Error in fetch (kafka.server.ReplicaFetcherThread)\n"
                        "java.io.IOException: Connection to 0 was disconnected before the response was read")],
    2: [(T0 + NS, "INFO [KafkaServer id=2] started (kafka.server.KafkaServer)")],
}


def _node_logs(nodes: Path) -> None:
    """Each node's broker.id and broker server.log (nodes/azN-node/...), as the harness leaves them."""
    for broker, lines in NODE_LOGS.items():
        node = nodes / f"{AZS[broker]}-node"
        (node / "config").mkdir(parents=True)
        (node / "config" / "server.properties").write_text(f"broker.id={broker}\n", encoding="utf-8")
        (node / "logs" / "broker").mkdir(parents=True)
        (node / "logs" / "broker" / "server.log").write_text(
            "".join(log_line(t, text) for t, text in lines), encoding="utf-8")


def verdict_of(root: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((root / "verdict.json").read_text(encoding="utf-8"))
    return loaded
