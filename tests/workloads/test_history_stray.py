"""A stray-transactional-produce fault's write (nemesis/stray.py) in the history: the writes, transactions and
processes rows its nemesis `start` row becomes (workloads/history_stray.py), taken or refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from workloads.history import HistoryError, build_history


def _stray(**changes: Any) -> dict[str, Any]:
    stray = {"process": "stray-hang", "value": "stray-hang-0", "txn": "stray-hang-t0",
             "transactional_id": "fl00-stray-hang", "producer_id": 4000, "producer_epoch": 0, "topic": "faultline",
             "partition": 0, "offset": 812, "status": "ok", "error": None, "error_code": 0,
             "invoke_ns": 6_000, "complete_ns": 6_050}
    return {**stray, **changes}


def _history(tmp_path: Path, stray: dict[str, Any] | None) -> Path:
    journals = tmp_path / "journal"
    journals.mkdir()
    detail = {"name": "stray-hang", **({"stray": stray} if stray is not None else {})}
    row = {"time_ns": 6_100, "type": "start", "fault": "stray-transactional-produce",
           "targets": json.dumps({"topic": "faultline", "partition": 0}), "detail": json.dumps(detail)}
    stop = {"time_ns": 7_000, "type": "stop", "fault": "stray-transactional-produce", "targets": "{}",
            "detail": json.dumps({"name": "stray-hang"})}
    (journals / "nemesis.jsonl").write_text(json.dumps(row) + "\n" + json.dumps(stop) + "\n")
    history = tmp_path / "history"
    build_history(journals, history)
    return history


def _rows(history: Path, table: str) -> list[dict[str, Any]]:
    return list(pq.read_table(history / f"{table}.parquet").to_pylist())


def test_a_taken_stray_write_is_ok_in_a_transaction_that_never_ended(tmp_path: Path) -> None:
    history = _history(tmp_path, _stray())
    [write] = _rows(history, "writes")
    assert {k: write[k] for k in ("process", "value", "txn", "partition", "offset", "status", "error",
                                  "invoke_ns", "complete_ns")} == {
        "process": "stray-hang", "value": "stray-hang-0", "txn": "stray-hang-t0", "partition": 0, "offset": 812,
        "status": "ok", "error": None, "invoke_ns": 6_000, "complete_ns": 6_050}
    [txn] = _rows(history, "transactions")
    assert {k: txn[k] for k in ("process", "txn", "intent", "status", "end_ns", "complete_ns")} == {
        "process": "stray-hang", "txn": "stray-hang-t0", "intent": None, "status": "info", "end_ns": None,
        "complete_ns": None}
    [process] = _rows(history, "processes")
    assert process["role"] == "producer"
    assert json.loads(process["config"])["transactional.id"] == "fl00-stray-hang"
    assert [r["type"] for r in _rows(history, "nemesis")] == ["start", "stop"]


def test_a_refused_stray_write_fails_with_the_brokers_error(tmp_path: Path) -> None:
    history = _history(tmp_path, _stray(offset=None, status="fail", error="INVALID_TXN_STATE", error_code=48))
    [write] = _rows(history, "writes")
    assert (write["status"], write["error"], write["offset"]) == ("fail", "INVALID_TXN_STATE", None)
    [txn] = _rows(history, "transactions")
    assert (txn["status"], txn["error"], txn["complete_ns"]) == ("fail", "INVALID_TXN_STATE", 6_050)


def test_a_start_without_a_write_adds_no_rows(tmp_path: Path) -> None:
    history = _history(tmp_path, None)
    assert _rows(history, "writes") == [] and _rows(history, "transactions") == []


def test_a_stray_write_missing_a_field_is_named(tmp_path: Path) -> None:
    stray = _stray()
    del stray["txn"]
    with pytest.raises(HistoryError, match=r"nemesis.jsonl:1: stray-transactional-produce start without txn"):
        _history(tmp_path, stray)
