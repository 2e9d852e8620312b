"""Availability per fault and AZ from a small hand-made history: gaps, first acks, heal, targets."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from checkers.availability import availability_of, targets_az
from report.availability import availability_rows

S = 1_000_000_000
T0 = 1_700_000_000 * S


def write_history(directory: Path, stop: bool = True) -> Path:
    # az1 acknowledged every second throughout; az2 nothing from 10 s (the fault) until 23.5 s (3.5 s after the heal).
    acks = [(az, T0 + t * S // 2) for az in ("az1", "az2") for t in range(0, 80)
            if az == "az1" or not (20 <= t < 47)]
    rows = {"process": [f"p-{az}" for az, _ in acks], "op_id": list(range(len(acks))),
            "topic": ["t"] * len(acks), "key": [None] * len(acks), "value": [f"v{i}" for i in range(len(acks))],
            "partition": [0] * len(acks), "offset": list(range(len(acks))), "status": ["ok"] * len(acks),
            "error": [None] * len(acks), "invoke_ns": [t - 1000 for _, t in acks], "complete_ns": [t for _, t in acks],
            "az": [az for az, _ in acks]}
    directory.mkdir(parents=True)
    pq.write_table(pa.table(rows), directory / "writes.parquet")
    pq.write_table(pa.table({"process": ["c"], "seq": [0], "phase": ["final"], "topic": ["t"], "partition": [0],
                             "offset": [0], "key": [None], "value": ["v0"], "leader_epoch": [None],
                             "poll_ns": [T0], "az": ["az1"], "group": [None]}), directory / "reads.parquet")
    targets = json.dumps({"az": "az2", "brokers": [1], "scope": "all"})
    events = [(T0 + 10 * S, "start")] + ([(T0 + 20 * S, "stop")] if stop else [])
    pq.write_table(pa.table({"time_ns": [t for t, _ in events], "type": [k for _, k in events],
                             "fault": ["isolate-az"] * len(events), "targets": [targets] * len(events),
                             "detail": [None] * len(events)}), directory / "nemesis.parquet")
    return directory


def test_the_isolated_az_waits_for_its_first_ack_until_after_the_heal(tmp_path: Path) -> None:
    rows = availability_of(write_history(tmp_path / "history"))
    by_az = {r["az"]: r for r in rows}
    assert [r["az"] for r in rows] == ["az1", "az2"]
    az1, az2 = by_az["az1"], by_az["az2"]
    assert (az1["targeted"], az2["targeted"]) == (False, True)
    assert az1["first_ack_after_start_s"] == 0.0 and az1["longest_gap_s"] == 0.5
    assert az1["first_ack_after_heal_s"] == 0.0 and az1["acks_during"] == 21
    assert az2["first_ack_after_start_s"] == 13.5 and az2["longest_gap_s"] == 10.0
    assert az2["first_ack_after_heal_s"] == 3.5 and az2["acks_during"] == 0
    assert az2["start_ns"] == T0 + 10 * S and az2["stop_ns"] == T0 + 20 * S


def test_a_fault_never_stopped_runs_to_the_end_of_the_history(tmp_path: Path) -> None:
    az2 = {r["az"]: r for r in availability_of(write_history(tmp_path / "history", stop=False))}["az2"]
    assert az2["stop_ns"] is None and az2["first_ack_after_heal_s"] is None
    assert az2["longest_gap_s"] == 13.5  # 10 s to the first ack at 23.5 s; the rest come every 0.5 s


def test_targets_name_an_az_or_its_hosts() -> None:
    assert targets_az({"link": ["az1", "az3"]}, "az3") and targets_az({"nodes": ["az2-node"]}, "az2")
    assert not targets_az({"az": "az1", "brokers": [0]}, "az2") and not targets_az({"ring": []}, "az1")


def test_the_report_words_the_verdicts_rows(tmp_path: Path) -> None:
    rows = availability_of(write_history(tmp_path / "history"))
    shown = availability_rows({"availability": rows}, T0)
    assert shown[1]["az"] == "az2" and shown[1]["targeted"] and shown[1]["first_ack"] == "13.500 s"
    assert shown[1]["window"] == "+10.000 s – +20.000 s" and shown[1]["after_heal"] == "3.500 s"
    assert availability_rows(None, T0) == [] and availability_rows({}, T0) == []
