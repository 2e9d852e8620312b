"""Synthetic histories for the benchmark and the differential tests.

`generate` builds the five tables of spec/history.md for a run of roughly
``operations`` rows (writes plus reads): several producers writing to the
partitions of one topic, group consumers reading live, drains reading the
final log, a fault schedule and observers' leader views. Anomalies of every
kind are planted on request; planted anomalies may overlap (a lost value
that was read live is also a vanished read), so the counts are for the
engines to find, not promised here. Everything is vectorised with numpy so
10M operations take seconds, and the same seed gives the same history.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from checkers import anomalies as a

BASE_NS = 1_700_000_000_000_000_000
WRITE_GAP_NS = 100_000  # 10k writes/s across all producers
AZS = ("az1", "az2", "az3")


@dataclass(frozen=True)
class SynthSpec:
    """Shape of a synthetic history; ``plant`` maps an anomaly to how many to plant."""

    operations: int
    producers: int = 4
    partitions: int = 6
    consumers: int = 3
    drains: int = 2
    topic: str = "faultline"
    seed: int = 0
    fail_rate: float = 0.002
    info_rate: float = 0.01
    random_configs: bool = False
    plant: dict[str, int] = field(default_factory=lambda: dict.fromkeys(a.ANOMALIES, 3))


def _process_names(prefix: str, n: int) -> list[str]:
    return [f"{prefix}-{AZS[i % len(AZS)]}-{i}" for i in range(n)]


def _producer_configs(spec: SynthSpec, rng: np.random.Generator) -> list[dict[str, Any]]:
    if not spec.random_configs:
        return [{"acks": "all", "enable.idempotence": True} for _ in range(spec.producers)]
    choices: list[dict[str, Any]] = [
        {"acks": "all", "enable.idempotence": True},
        {"acks": -1, "enable.idempotence": "false", "max.in.flight.requests.per.connection": 1},
        {"acks": "1", "enable.idempotence": False, "max.in.flight.requests.per.connection": 5},
        {"acks": 0},
        {"acks": "0", "max.in.flight.requests.per.connection": "1"},
        {},
    ]
    return [choices[int(i)] for i in rng.integers(0, len(choices), spec.producers)]


class _Builder:
    """Index-space state of one history while anomalies are planted into it."""

    def __init__(self, spec: SynthSpec) -> None:
        self.spec = spec
        self.rng = np.random.default_rng(spec.seed)
        nw = max(spec.operations // (2 + spec.drains), 4)
        rng = self.rng
        self.producers = _process_names("producer", spec.producers)
        self.configs = _producer_configs(spec, rng)
        self.proc = rng.integers(0, spec.producers, nw)
        self.op_id = np.zeros(nw, dtype=np.int64)
        for p in range(spec.producers):
            idx = np.flatnonzero(self.proc == p)
            self.op_id[idx] = np.arange(len(idx))
        self.partition = rng.integers(0, spec.partitions, nw)
        self.invoke = (
            BASE_NS + np.arange(nw, dtype=np.int64) * WRITE_GAP_NS + rng.integers(0, WRITE_GAP_NS, nw)
        )
        self.complete = self.invoke + rng.integers(1_000_000, 20_000_000, nw)
        roll = rng.random(nw)
        self.status = np.where(
            roll < spec.fail_rate, 2, np.where(roll < spec.fail_rate + spec.info_rate, 1, 0)
        )
        in_log = (self.status == 0) | ((self.status == 1) & (rng.random(nw) < 0.5))
        self.complete_known = ~((self.status == 1) & (rng.random(nw) < 0.3))
        # The log: per partition, written values in invoke order. Entries index `values`.
        self.values = [
            f"{self.producers[p]}-{o}" for p, o in zip(self.proc.tolist(), self.op_id.tolist(), strict=True)
        ]
        self.nw = nw
        order = np.lexsort((self.invoke, self.partition))
        order = order[in_log[order]]
        self.log: list[list[int]] = [[] for _ in range(spec.partitions)]
        for p in range(spec.partitions):
            self.log[p] = order[self.partition[order] == p].tolist()
        self.offset = np.full(nw, -1, dtype=np.int64)
        for entries in self.log:
            self.offset[entries] = np.arange(len(entries))
        self.holes: set[tuple[int, int]] = set()  # (partition, offset) removed from the final log
        self.ghosts: dict[tuple[int, int], str] = {}  # live read value replaced at a position

    def pick(self, mask: np.ndarray, k: int) -> list[int]:
        idx = np.flatnonzero(mask)
        if k <= 0 or len(idx) == 0:
            return []
        return sorted(self.rng.choice(idx, size=min(k, len(idx)), replace=False).tolist())

    def in_log_ok(self) -> np.ndarray:
        return (self.status == 0) & (self.offset >= 0)

    def plant_writes(self, plant: dict[str, int]) -> None:
        for i in self.pick(self.in_log_ok(), plant.get(a.LOST, 0)):
            self.holes.add((int(self.partition[i]), int(self.offset[i])))
        for i in self.pick(self.in_log_ok(), plant.get(a.DUPLICATE, 0)):
            p = int(self.partition[i])
            self.log[p].append(i)
        for k in range(plant.get(a.PHANTOM, 0)):
            p = int(self.rng.integers(0, self.spec.partitions))
            self.values.append(f"phantom-{self.spec.seed}-{k}")
            self.log[p].append(len(self.values) - 1)
        for i in self.pick(self.in_log_ok(), plant.get(a.FAILED_PRESENT, 0)):
            self.status[i] = 2
        self._plant_reorders(plant.get(a.REORDERED, 0))

    def _plant_reorders(self, k: int) -> None:
        ok = np.flatnonzero(self.in_log_ok())
        order = ok[np.lexsort((self.op_id[ok], self.partition[ok], self.proc[ok]))]
        same = (self.proc[order][1:] == self.proc[order][:-1]) & (
            self.partition[order][1:] == self.partition[order][:-1]
        )
        for j in self.pick(same, k):
            x, y = int(order[j]), int(order[j + 1])
            p = int(self.partition[x])
            ox, oy = int(self.offset[x]), int(self.offset[y])
            if self.log[p][ox] != x or self.log[p][oy] != y:
                continue
            self.log[p][ox], self.log[p][oy] = y, x
            self.offset[x], self.offset[y] = oy, ox


def _live_reads(b: _Builder, plant: dict[str, int]) -> dict[str, Any]:
    """Group consumers read each partition in offset order, with planted rewinds and skips."""
    spec = b.spec
    cols: dict[str, list[np.ndarray]] = {
        k: [] for k in ("consumer", "partition", "offset", "entry", "poll", "sub")
    }
    for p, entries in enumerate(b.log):
        n = len(entries)
        if n == 0:
            continue
        ent = np.asarray(entries, dtype=np.int64)
        written = np.where(ent < b.nw, b.complete[np.minimum(ent, b.nw - 1)], BASE_NS)
        poll = np.maximum.accumulate(written + 5_000_000) + np.arange(n)
        cols["consumer"].append(np.full(n, p % spec.consumers))
        cols["partition"].append(np.full(n, p))
        cols["offset"].append(np.arange(n))
        cols["entry"].append(ent)
        cols["poll"].append(poll)
        cols["sub"].append(np.zeros(n, dtype=np.int64))
    live = {k: np.concatenate(v) if v else np.zeros(0, dtype=np.int64) for k, v in cols.items()}
    n = len(live["offset"])
    interior = (np.arange(n) > 3) & (live["offset"] > 3)
    keep = np.ones(n, dtype=bool)
    for j in b.pick(interior & (live["offset"] % 7 == 3), plant.get(a.POLL_SKIP, 0)):
        keep[j] = False
    extra = []
    for j in b.pick(interior & (live["offset"] % 7 == 5), plant.get(a.NONMONOTONIC_POLL, 0)):
        for back, sub in ((2, 1), (1, 2), (0, 3)):
            extra.append((j - back, int(live["poll"][j]), sub))
    out = {k: v[keep] for k, v in live.items()}
    if extra:
        rows = np.asarray([e[0] for e in extra])
        for k in out:
            out[k] = np.concatenate([out[k], live[k][rows]])
        out["poll"][-len(extra) :] = [e[1] for e in extra]
        out["sub"][-len(extra) :] = [e[2] for e in extra]
    order = np.lexsort((out["sub"], out["poll"], out["consumer"]))
    out = {k: v[order] for k, v in out.items()}
    for j in b.pick(np.ones(len(out["offset"]), dtype=bool), plant.get(a.DIVERGENCE, 0)):
        b.ghosts[(int(out["partition"][j]), int(out["offset"][j]))] = f"ghost-{spec.seed}-{j}"
    return out


def _writes_table(b: _Builder) -> pa.Table:
    spec = b.spec
    acks0 = np.asarray([str(b.configs[p].get("acks")) == "0" for p in range(spec.producers)])[b.proc]
    status_names = np.asarray(["ok", "info", "fail"])[b.status]
    offset = np.where((b.status == 0) & ~acks0 & (b.offset >= 0), b.offset, -1)
    errors = np.asarray([None, "REQUEST_TIMED_OUT", "NOT_ENOUGH_REPLICAS"], dtype=object)[b.status]
    return pa.table(
        {
            "process": pa.array(np.asarray(b.producers, dtype=object)[b.proc]),
            "op_id": pa.array(b.op_id),
            "topic": pa.array([spec.topic] * b.nw),
            "key": pa.nulls(b.nw, pa.string()),
            "value": pa.array(b.values[: b.nw]),
            "partition": pa.array(b.partition.astype(np.int32)),
            "offset": pa.array(offset, mask=offset < 0),
            "status": pa.array(status_names),
            "error": pa.array(errors, type=pa.string()),
            "invoke_ns": pa.array(b.invoke),
            "complete_ns": pa.array(b.complete, mask=~b.complete_known),
            "az": pa.array([AZS[p % len(AZS)] for p in b.proc.tolist()]),
        }
    )


def _final_log(b: _Builder) -> np.ndarray:
    """(partition, offset, entry) of every record the drains find."""
    parts = []
    for p, entries in enumerate(b.log):
        ent = np.asarray(entries, dtype=np.int64)
        offsets = np.arange(len(ent))
        keep = np.asarray([(p, o) not in b.holes for o in range(len(ent))], dtype=bool) if b.holes else None
        block = np.stack([np.full(len(ent), p), offsets, ent], axis=1)
        parts.append(block if keep is None else block[keep])
    return np.concatenate(parts) if parts else np.zeros((0, 3), dtype=np.int64)


def _reads_table(b: _Builder, live: dict[str, Any]) -> pa.Table:
    spec = b.spec
    values = np.asarray(b.values, dtype=object)
    consumers = np.asarray(_process_names("consumer", spec.consumers), dtype=object)
    live_values = values[live["entry"]]
    for (p, o), ghost in b.ghosts.items():
        live_values[(live["partition"] == p) & (live["offset"] == o)] = ghost
    proc = consumers[live["consumer"]]
    seq = np.zeros(len(proc), dtype=np.int64)
    for c in range(spec.consumers):
        idx = np.flatnonzero(live["consumer"] == c)
        seq[idx] = np.arange(len(idx))
    parts = [(proc, seq, "live", live["partition"], live["offset"], live_values, live["poll"])]
    end = int(live["poll"].max()) + 10**9 if len(live["poll"]) else BASE_NS + 10**9
    final = _final_log(b)
    for d in range(spec.drains):
        n = len(final)
        name = f"drain-{AZS[d % len(AZS)]}-{d}"
        parts.append(
            (
                np.full(n, name, dtype=object),
                np.arange(n),
                "final",
                final[:, 0],
                final[:, 1],
                values[final[:, 2]],
                end + d * 10**8 + np.arange(n),
            )
        )

    def cat(i: int) -> np.ndarray:
        return np.concatenate([np.asarray(part[i]) for part in parts])

    phase = np.concatenate([np.full(len(part[1]), part[2], dtype=object) for part in parts])
    n = len(phase)
    group = ["faultline-consumers" if ph == "live" else None for ph in phase.tolist()]
    return pa.table(
        {
            "process": pa.array(cat(0)),
            "seq": pa.array(cat(1).astype(np.int64)),
            "phase": pa.array(phase),
            "topic": pa.array([spec.topic] * n),
            "partition": pa.array(cat(3).astype(np.int32)),
            "offset": pa.array(cat(4).astype(np.int64)),
            "key": pa.nulls(n, pa.string()),
            "value": pa.array(cat(5), type=pa.string()),
            "leader_epoch": pa.nulls(n, pa.int32()),
            "poll_ns": pa.array(cat(6).astype(np.int64)),
            "az": pa.nulls(n, pa.string()),
            "group": pa.array(group, type=pa.string()),
        }
    )


def _small_tables(b: _Builder, end_ns: int) -> dict[str, pa.Table]:
    spec = b.spec
    consumers = _process_names("consumer", spec.consumers)
    procs = [(p, "producer", json.dumps(c)) for p, c in zip(b.producers, b.configs, strict=True)]
    procs += [(c, "consumer", json.dumps({"group.id": "faultline-consumers"})) for c in consumers]
    processes = pa.table(
        {
            "process": [p for p, _, _ in procs],
            "role": [r for _, r, _ in procs],
            "az": [p.split("-")[1] for p, _, _ in procs],
            "config": [c for _, _, c in procs],
        }
    )
    span = max(end_ns - BASE_NS, 1)
    starts = [BASE_NS + span * k // 5 for k in range(1, 5)]
    faults = [("isolate-az", json.dumps([AZS[k % 3]])) for k in range(4)]
    nemesis = pa.table(
        {
            "time_ns": [t for s in starts for t in (s, s + span // 10)],
            "type": ["start", "stop"] * 4,
            "fault": [f for f, _ in faults for _ in range(2)],
            "targets": [t for _, t in faults for _ in range(2)],
            "detail": [None] * 8,
        }
    )
    ticks = np.linspace(BASE_NS, end_ns, num=40, dtype=np.int64)
    rows = [
        (int(t), f"broker-{o}", p, (p + k // 10) % 3)
        for k, t in enumerate(ticks)
        for o in range(3)
        for p in range(spec.partitions)
    ]
    observations = pa.table(
        {
            "time_ns": [r[0] for r in rows],
            "observer": [r[1] for r in rows],
            "topic": [spec.topic] * len(rows),
            "partition": [r[2] for r in rows],
            "leader": [r[3] for r in rows],
            "isr": ["[0, 1, 2]"] * len(rows),
            "leader_epoch": [None] * len(rows),
            "controller": [0] * len(rows),
        }
    )
    return {"processes": processes, "nemesis": nemesis, "observations": observations}


def generate(spec: SynthSpec) -> dict[str, pa.Table]:
    """All five tables of a synthetic history."""
    b = _Builder(spec)
    b.plant_writes(spec.plant)
    live = _live_reads(b, spec.plant)
    reads = _reads_table(b, live)
    writes = _writes_table(b)
    end_ns = int(pc.max(reads.column("poll_ns")).as_py() or BASE_NS)
    return {"writes": writes, "reads": reads, **_small_tables(b, end_ns)}


def write_history(tables: dict[str, pa.Table], directory: str | Path, fmt: str = "parquet") -> Path:
    """Write ``tables`` as ``<table>.parquet`` or ``<table>.jsonl`` into ``directory``."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    for name, table in tables.items():
        if fmt == "parquet":
            pq.write_table(table, out / f"{name}.parquet", row_group_size=1_000_000)
        else:
            with (out / f"{name}.jsonl").open("w", encoding="utf-8") as handle:
                for row in table.to_pylist():
                    handle.write(json.dumps(row) + "\n")
    return out
