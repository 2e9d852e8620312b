"""Journals to contract tables: exact rows from hand-made journals, killed writers, corruption named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from checkers.schema import TABLES, arrow_schema
from workloads.history import HistoryError, build_history
from workloads.tables import write_table

IDEMPOTENT = {"acks": "all", "enable.idempotence": True, "max.in.flight.requests.per.connection": 5}


def journal(path: Path, *lines: dict[str, Any], torn: str | None = None) -> Path:
    text = "".join(json.dumps(line) + "\n" for line in lines)
    path.write_text(text + (torn or ""))
    return path


def header(
    process: str, role: str, az: str | None, config: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    return {
        "kind": "process",
        "process": process,
        "role": role,
        "az": az,
        "topic": "t",
        "pid": 1,
        "start_ns": 1,
        "config": config or {},
        **extra,
    }


def rows(history: Path, table: str) -> list[dict[str, Any]]:
    return list(pq.read_table(history / f"{table}.parquet").to_pylist())


@pytest.fixture
def journals(tmp_path: Path) -> Path:
    d = tmp_path / "journal"
    d.mkdir()
    journal(
        d / "p-az1-0.jsonl",
        header(
            "p-az1-0",
            "producer",
            "az1",
            IDEMPOTENT,
            values={"prefix": "p-az1-0-", "width": 0, "partitions": 2, "key": "none"},
        ),
        {"kind": "invoke", "t": 100, "op": 0, "n": 3},
        {"kind": "ack", "t": 200, "op": "0,2", "offset": [0, 1]},
        {
            "kind": "outcome",
            "op": 1,
            "t": 210,
            "status": "fail",
            "error": "NOT_ENOUGH_REPLICAS",
            "partition": 1,
            "detail": "Broker: Not enough in-sync replicas",
        },
        {"kind": "client_error", "t": 250, "error": "_TRANSPORT", "detail": "x", "fatal": False},
        {"kind": "invoke", "t": 300, "op": 3, "n": 2},
        {"kind": "ack", "t": 400, "op": "3", "offset": [0]},
        torn='{"kind":"ack","t":500,"op":"4","off',
    )
    journal(
        d / "p-az2-0.jsonl",
        header(
            "p-az2-0",
            "producer",
            "az2",
            {"acks": "0"},
            values={"prefix": "z-", "width": 4, "partitions": 1, "key": "value"},
        ),
        {"kind": "invoke", "t": 10, "op": 0, "n": 2},
        {"kind": "ack", "t": 20, "op": "0000,0001", "offset": [-1001, -1001]},
        {"kind": "end", "t": 30, "sent": 2, "ok": 2, "fail": 0, "info": 0, "fatal": None},
    )
    journal(
        d / "c-az2-0.jsonl",
        header("c-az2-0", "consumer", "az2", {"mode": "assign"}),
        {"kind": "rebalance", "t": 900, "event": "assign", "partitions": [0, 1]},
        {
            "kind": "poll",
            "t": 1000,
            "seq": 0,
            "phase": "live",
            "group": None,
            "records": [[0, 0, None, "p-az1-0-0", 0], [0, 1, None, "p-az1-0-2", 0]],
        },
        {"kind": "consume_error", "t": 1050, "error": "_TRANSPORT", "detail": "x", "partition": None},
        {
            "kind": "poll",
            "t": 1100,
            "seq": 2,
            "phase": "live",
            "group": None,
            "records": [[1, 0, None, "p-az1-0-3", 1]],
        },
        {"kind": "end", "t": 1200, "records": 3, "fatal": None},
    )
    journal(
        d / "g-az3-0.jsonl",
        header("g-az3-0", "consumer", "az3", {"mode": "group", "group.id": "g1"}),
        {
            "kind": "poll",
            "t": 1300,
            "seq": 0,
            "phase": "live",
            "group": "g1",
            "records": [[1, 0, "k", "p-az1-0-3", None]],
        },
        {"kind": "commit", "t": 1301, "mode": "sync", "error": None, "offsets": [[1, 1, None]]},
    )
    journal(
        d / "d-az3.jsonl",
        header("d-az3", "drain", "az3", {"mode": "assign"}),
        {"kind": "watermarks", "t": 1900, "partitions": {"0": [0, 2], "1": [0, 1]}},
        {
            "kind": "poll",
            "t": 2000,
            "seq": 0,
            "phase": "final",
            "group": None,
            "records": [
                [0, 0, None, "p-az1-0-0", 0],
                [0, 1, None, "p-az1-0-2", 0],
                [1, 0, None, "p-az1-0-3", 1],
            ],
        },
        {"kind": "drain_end", "t": 2100, "complete": True, "records": 3, "reason": None, "behind": {}},
    )
    journal(
        d / "d-az2.jsonl",
        header("d-az2", "drain", "az2", {"mode": "assign"}),
        {
            "kind": "drain_end",
            "t": 2100,
            "complete": False,
            "records": 0,
            "reason": "timed out",
            "behind": {"0": [0, 2]},
        },
    )
    journal(d / "d-az1.jsonl", header("d-az1", "drain", "az1", {"mode": "assign"}))
    journal(
        d / "o-b0.jsonl",
        header("o-b0", "observer", None, {"broker_id": 0}),
        {
            "kind": "observation",
            "t": 5,
            "observer": "broker-0",
            "broker": 0,
            "controller": 1,
            # partition 0 as observers write it now (its leader's high watermark and last stable offset), 1 as
            # older journals did (no end offsets: null)
            "partitions": [["t", 0, 0, [0, 1, 2], 3, 0, 120, 114], ["t", 1, None, [], None, 5]],
        },
        {"kind": "unreachable", "t": 6, "observer": "broker-0", "error": "ConnectionRefusedError: x"},
        torn='{"kind":"observation","t":7',
    )
    (d / "killed-at-birth.jsonl").write_text("")
    journal(d / "crashed-at-birth.jsonl", {"kind": "crash", "t": 1, "error": "MemoryError: "})
    (d / "torn-at-birth.jsonl").write_text('{"kind":"process","pro')
    journal(
        d / "nemesis.jsonl",
        {"time_ns": 7, "type": "start", "fault": "isolate-az", "targets": ["az1"], "detail": {"leader": 0}},
        {"time_ns": 9, "type": "stop", "fault": "isolate-az", "targets": '["az1"]', "detail": "healed"},
    )
    return d


def test_writes_rows_are_exact(journals: Path, tmp_path: Path) -> None:
    history = tmp_path / "history"
    build_history(journals, history)
    base = {"topic": "t", "key": None, "txn": None, "source": None}  # contract v2's columns: null outside transactions
    assert rows(history, "writes") == [
        {
            **base,
            "process": "p-az1-0",
            "op_id": 0,
            "value": "p-az1-0-0",
            "partition": 0,
            "offset": 0,
            "status": "ok",
            "error": None,
            "invoke_ns": 100,
            "complete_ns": 200,
            "az": "az1",
        },
        {
            **base,
            "process": "p-az1-0",
            "op_id": 1,
            "value": "p-az1-0-1",
            "partition": 1,
            "offset": None,
            "status": "fail",
            "error": "NOT_ENOUGH_REPLICAS",
            "invoke_ns": 100,
            "complete_ns": 210,
            "az": "az1",
        },
        {
            **base,
            "process": "p-az1-0",
            "op_id": 2,
            "value": "p-az1-0-2",
            "partition": 0,
            "offset": 1,
            "status": "ok",
            "error": None,
            "invoke_ns": 100,
            "complete_ns": 200,
            "az": "az1",
        },
        {
            **base,
            "process": "p-az1-0",
            "op_id": 3,
            "value": "p-az1-0-3",
            "partition": 1,
            "offset": 0,
            "status": "ok",
            "error": None,
            "invoke_ns": 300,
            "complete_ns": 400,
            "az": "az1",
        },
        # Invoked, then the writer died before its outcome (the torn ack line): unknown.
        {
            **base,
            "process": "p-az1-0",
            "op_id": 4,
            "value": "p-az1-0-4",
            "partition": 0,
            "offset": None,
            "status": "info",
            "error": None,
            "invoke_ns": 300,
            "complete_ns": None,
            "az": "az1",
        },
        # acks=0: acknowledged without an offset; key strategy "value", zero-padded values.
        {
            "topic": "t",
            "process": "p-az2-0",
            "op_id": 0,
            "key": "z-0000",
            "value": "z-0000",
            "partition": 0,
            "offset": None,
            "status": "ok",
            "error": None,
            "invoke_ns": 10,
            "complete_ns": 20,
            "az": "az2",
            "txn": None,
            "source": None,
        },
        {
            "topic": "t",
            "process": "p-az2-0",
            "op_id": 1,
            "key": "z-0001",
            "value": "z-0001",
            "partition": 0,
            "offset": None,
            "status": "ok",
            "error": None,
            "invoke_ns": 10,
            "complete_ns": 20,
            "az": "az2",
            "txn": None,
            "source": None,
        },
    ]


def test_reads_rows_are_exact(journals: Path, tmp_path: Path) -> None:
    history = tmp_path / "history"
    build_history(journals, history)

    def read(
        process: str,
        seq: int,
        phase: str,
        partition: int,
        offset: int,
        value: str,
        epoch: int | None,
        poll_ns: int,
        az: str,
        group: str | None = None,
        key: str | None = None,
    ) -> dict[str, Any]:
        return {
            "process": process,
            "seq": seq,
            "phase": phase,
            "topic": "t",
            "partition": partition,
            "offset": offset,
            "key": key,
            "value": value,
            "leader_epoch": epoch,
            "poll_ns": poll_ns,
            "az": az,
            "group": group,
        }

    assert rows(history, "reads") == [
        read("c-az2-0", 0, "live", 0, 0, "p-az1-0-0", 0, 1000, "az2"),
        read("c-az2-0", 1, "live", 0, 1, "p-az1-0-2", 0, 1000, "az2"),
        read("c-az2-0", 2, "live", 1, 0, "p-az1-0-3", 1, 1100, "az2"),
        read("d-az3", 0, "final", 0, 0, "p-az1-0-0", 0, 2000, "az3"),
        read("d-az3", 1, "final", 0, 1, "p-az1-0-2", 0, 2000, "az3"),
        read("d-az3", 2, "final", 1, 0, "p-az1-0-3", 1, 2000, "az3"),
        read("g-az3-0", 0, "live", 1, 0, "p-az1-0-3", None, 1300, "az3", group="g1", key="k"),
    ]


def test_processes_observations_and_nemesis(journals: Path, tmp_path: Path) -> None:
    history = tmp_path / "history"
    build_history(journals, history)
    processes = {r["process"]: r for r in rows(history, "processes")}
    assert sorted(processes) == ["c-az2-0", "d-az1", "d-az2", "d-az3", "g-az3-0", "p-az1-0", "p-az2-0"]
    assert processes["p-az1-0"]["role"] == "producer" and processes["p-az1-0"]["az"] == "az1"
    assert json.loads(processes["p-az1-0"]["config"]) == IDEMPOTENT
    assert json.loads(processes["p-az2-0"]["config"]) == {"acks": "0"}
    assert rows(history, "observations") == [
        {
            "time_ns": 5,
            "observer": "broker-0",
            "topic": "t",
            "partition": 0,
            "leader": 0,
            "isr": "[0, 1, 2]",
            "leader_epoch": 3,
            "controller": 1,
            "high_watermark": 120,
            "last_stable_offset": 114,
        },
        {
            "time_ns": 5,
            "observer": "broker-0",
            "topic": "t",
            "partition": 1,
            "leader": None,
            "isr": "[]",
            "leader_epoch": None,
            "controller": 1,
            "high_watermark": None,
            "last_stable_offset": None,
        },
    ]
    assert rows(history, "nemesis") == [
        {
            "time_ns": 7,
            "type": "start",
            "fault": "isolate-az",
            "targets": '["az1"]',
            "detail": '{"leader": 0}',
        },
        {"time_ns": 9, "type": "stop", "fault": "isolate-az", "targets": '["az1"]', "detail": "healed"},
    ]


def test_the_summary_says_what_went_in(journals: Path, tmp_path: Path) -> None:
    summary = build_history(journals, tmp_path / "history")
    assert {k: v for k, v in summary.items() if k != "tables"} == {
        "journals": 8,
        "writes": 7,
        "ok": 5,
        "fail": 1,
        "info": 1,
        "reads": 7,
        "live_reads": 4,
        "final_reads": 3,
        "processes": 7,
        "observations": 2,
        "nemesis": 2,
        "commits": 0,  # its commit line is from before contract v3 (no `done`): no row
        "drains": {"d-az1": "unfinished", "d-az2": "incomplete", "d-az3": "complete"},
        "unfinished": ["d-az1", "g-az3-0", "o-b0", "p-az1-0"],
        "crashed": ["crashed-at-birth"],
        "empty": ["killed-at-birth.jsonl", "torn-at-birth.jsonl"],
        "torn": 3,
    }
    assert sorted(summary["tables"]) == sorted(TABLES)


def test_column_types_are_the_contracts(journals: Path, tmp_path: Path) -> None:
    history = tmp_path / "history"
    build_history(journals, history)
    for name in TABLES:
        written = pq.read_schema(history / f"{name}.parquet")
        assert written.equals(arrow_schema(name)), name
    # spot checks of the widths the declaration gives (int32 partitions and epochs, int64 offsets and times)
    reads = pq.read_schema(history / "reads.parquet")
    assert [str(reads.field(c).type) for c in ("partition", "leader_epoch", "offset", "poll_ns")] == [
        "int32", "int32", "int64", "int64"]


def test_an_empty_run_still_has_every_required_table(tmp_path: Path) -> None:
    (tmp_path / "journal").mkdir()
    summary = build_history(tmp_path / "journal", tmp_path / "history")
    assert summary["writes"] == summary["reads"] == 0
    assert sorted(p.name for p in (tmp_path / "history").iterdir()) == [
        "commits.parquet",
        "observations.parquet",
        "processes.parquet",
        "reads.parquet",
        "transactions.parquet",
        "writes.parquet",
    ]


def test_a_nemesis_journal_elsewhere_is_included(journals: Path, tmp_path: Path) -> None:
    elsewhere = journal(tmp_path / "faults.jsonl", {"time_ns": 1, "type": "info", "fault": None})
    (journals / "nemesis.jsonl").unlink()
    summary = build_history(journals, tmp_path / "history", nemesis_journal=elsewhere)
    assert summary["nemesis"] == 1
    assert rows(tmp_path / "history", "nemesis") == [
        {"time_ns": 1, "type": "info", "fault": None, "targets": None, "detail": None}
    ]


@pytest.mark.parametrize(
    "lines, says",
    [
        (
            [{"kind": "invoke", "t": 1, "op": 0, "n": 1}, {"kind": "ack", "t": 2, "op": "5", "offset": [0]}],
            "outcome for op 5, which was never invoked",
        ),
        (
            [
                {"kind": "invoke", "t": 1, "op": 0, "n": 1},
                {"kind": "ack", "t": 2, "op": "0", "offset": [0]},
                {"kind": "outcome", "op": 0, "t": 3, "status": "info", "error": "_MSG_TIMED_OUT"},
            ],
            "a second outcome for op 0",
        ),
        # A report from an abandoned (fatal) instance after its purge made the send `info`: never let a late one in.
        (
            [
                {"kind": "invoke", "t": 1, "op": 0, "n": 1},
                {"kind": "outcome", "op": 0, "t": 2, "status": "info", "error": "_PURGE_INFLIGHT"},
                {"kind": "ack", "t": 3, "op": "0", "offset": [7]},
            ],
            "a second outcome for op 0",
        ),
        ([{"kind": "invoke", "t": 1, "n": 1}, {"kind": "end"}], "invoke line without 'op'"),
    ],
)
def test_impossible_producer_journals_are_refused(
    tmp_path: Path, lines: list[dict[str, Any]], says: str
) -> None:
    journal(
        tmp_path / "p.jsonl",
        header("p", "producer", None, values={"prefix": "p-", "width": 0, "partitions": 1, "key": "none"}),
        *lines,
    )
    with pytest.raises(HistoryError, match=says):
        build_history(tmp_path, tmp_path / "history")


def test_corruption_before_the_last_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(header("c", "consumer", None)) + "\n{garbage\n" + '{"kind":"end"}\n')
    with pytest.raises(HistoryError, match=r"c\.jsonl:2: not JSON"):
        build_history(tmp_path, tmp_path / "history")


def test_a_journal_must_start_with_its_process_line(tmp_path: Path) -> None:
    journal(tmp_path / "x.jsonl", {"kind": "poll", "t": 1, "seq": 0, "phase": "live", "records": []})
    with pytest.raises(HistoryError, match=r"x\.jsonl:1: the first line must be a process line"):
        build_history(tmp_path, tmp_path / "history")


def test_a_table_that_cannot_be_written_leaves_no_file_behind(tmp_path: Path) -> None:
    columns = {name: [None] for name in ("process", "role", "az", "config")}  # process may not be null
    with pytest.raises(pa.ArrowInvalid):
        write_table(tmp_path, "processes", columns)
    assert list(tmp_path.iterdir()) == []


def test_rebuilding_replaces_tables_atomically(journals: Path, tmp_path: Path) -> None:
    history = tmp_path / "history"
    build_history(journals, history)
    (journals / "p-az2-0.jsonl").unlink()
    build_history(journals, history)
    assert len(rows(history, "writes")) == 5
    assert not [p for p in history.iterdir() if p.name.startswith(".")]
