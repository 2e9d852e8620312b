"""The lenient mode of the checker's table reading (checkers.lenient_tables), the report's one reader.

Where the strict reader (checkers.tables) refuses a history, the lenient one reads what there is:
a missing table is empty, an unreadable one is empty plus a problem line, a torn last JSONL line is
left out and noted; integers stay exact (Int64) in JSONL and Parquet alike.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from checkers.errors import HistoryError
from checkers.lenient_tables import frame_columns, read_frame
from checkers.sources import TableSource
from checkers.tables import load_table

BIG = 2**53 + 1  # the first integer a float64 cannot hold
NANOS = 1_780_000_000_123_456_789  # a real nanosecond timestamp, also beyond 2**53


def _write_row(op_id: int, **extra: Any) -> dict[str, Any]:
    return {"process": "producer-az1-0", "op_id": op_id, "topic": "t", "value": f"v{op_id}", "partition": 0,
            "offset": op_id, "status": "ok", "invoke_ns": NANOS + op_id, **extra}


def _jsonl(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_a_missing_table_is_an_empty_frame_with_the_contracts_columns_and_no_problem(tmp_path: Path) -> None:
    problems: list[str] = []
    frame = read_frame(tmp_path, "writes", problems)
    assert problems == []
    assert frame.empty
    assert list(frame.columns) == list(frame_columns("writes"))
    assert str(frame["invoke_ns"].dtype) == "Int64" and str(frame["partition"].dtype) == "Int64"
    assert frame["value"].dtype == object


def test_a_corrupt_parquet_file_is_an_empty_frame_and_one_problem_where_the_strict_reader_refuses(
        tmp_path: Path) -> None:
    path = tmp_path / "writes.parquet"
    path.write_bytes(b"PAR1 this is not a Parquet file")
    problems: list[str] = []
    frame = read_frame(tmp_path, "writes", problems)
    assert frame.empty and list(frame.columns) == list(frame_columns("writes"))
    assert len(problems) == 1 and problems[0].startswith("history/writes: unreadable (")
    with pytest.raises(HistoryError, match="writes.parquet"):
        load_table(TableSource("writes", path, "parquet", (path,)))


def test_a_bad_jsonl_line_before_the_last_makes_the_table_unreadable_naming_the_line(tmp_path: Path) -> None:
    _jsonl(tmp_path / "writes.jsonl", [json.dumps(_write_row(1)), "{not json", json.dumps(_write_row(2))])
    problems: list[str] = []
    frame = read_frame(tmp_path, "writes", problems)
    assert frame.empty
    assert len(problems) == 1
    assert problems[0].startswith("history/writes: unreadable (writes.jsonl line 2: ")


def test_a_torn_last_jsonl_line_is_left_out_and_noted_the_rows_before_it_kept(tmp_path: Path) -> None:
    _jsonl(tmp_path / "writes.jsonl", [json.dumps(_write_row(1)), "", "[1, 2]", json.dumps(_write_row(2)),
                                       '{"process": "producer-az1-0", "op_'])
    problems: list[str] = []
    frame = read_frame(tmp_path, "writes", problems)
    assert frame["op_id"].tolist() == [1, 2]  # the array line is no object: skipped, not a problem
    assert len(problems) == 1
    assert problems[0].startswith("history/writes.jsonl line 5: torn last line left out (")


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_integers_above_2_to_the_53_stay_exact(tmp_path: Path, fmt: str) -> None:
    assert float(BIG) != BIG and float(NANOS) != NANOS  # what a float column would lose
    rows = [_write_row(1, complete_ns=BIG), _write_row(2, complete_ns=None)]
    if fmt == "jsonl":
        _jsonl(tmp_path / "writes.jsonl", [json.dumps(row) for row in rows])
    else:
        pq.write_table(pa.Table.from_pylist(rows), tmp_path / "writes.parquet")
    problems: list[str] = []
    frame = read_frame(tmp_path, "writes", problems)
    assert problems == []
    assert str(frame["invoke_ns"].dtype) == "Int64" and str(frame["complete_ns"].dtype) == "Int64"
    assert [int(v) for v in frame["invoke_ns"]] == [NANOS + 1, NANOS + 2]
    assert int(frame["complete_ns"][0]) == BIG
    assert frame["complete_ns"][1] is pd.NA


def test_parquet_wins_over_jsonl_and_a_dataset_directory_reads_whole(tmp_path: Path) -> None:
    _jsonl(tmp_path / "writes.jsonl", [json.dumps(_write_row(9))])
    dataset = tmp_path / "writes.parquet"
    dataset.mkdir()
    pq.write_table(pa.Table.from_pylist([_write_row(1)]), dataset / "part-0.parquet")
    pq.write_table(pa.Table.from_pylist([_write_row(2)]), dataset / "part-1.parquet")
    (dataset / "_SUCCESS").write_text("")
    problems: list[str] = []
    frame = read_frame(tmp_path, "writes", problems)
    assert problems == []
    assert sorted(frame["op_id"].tolist()) == [1, 2]


def test_skipped_columns_are_not_read_and_absent_ones_are_null_in_their_kind(tmp_path: Path) -> None:
    pq.write_table(pa.Table.from_pylist([_write_row(1, source="src")]), tmp_path / "writes.parquet")
    frame = read_frame(tmp_path, "writes", [], skip={"source"})
    assert "source" not in frame.columns
    assert frame["txn"].tolist() == [None] and frame["txn"].dtype == object  # absent from the file
    assert frame["complete_ns"].isna().all() and str(frame["complete_ns"].dtype) == "Int64"


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_ids_read_as_text_and_json_values_as_their_sorted_json_text(tmp_path: Path, fmt: str) -> None:
    rows = [{"time_ns": NANOS, "observer": 2, "isr": [1, 0]}]
    nemesis = [{"time_ns": NANOS, "type": "start", "targets": {"b": 1, "a": [2]}, "detail": "text"}]
    if fmt == "jsonl":
        _jsonl(tmp_path / "observations.jsonl", [json.dumps(r) for r in rows])
        _jsonl(tmp_path / "nemesis.jsonl", [json.dumps(r) for r in nemesis])
    else:
        pq.write_table(pa.Table.from_pylist(rows), tmp_path / "observations.parquet")
        pq.write_table(pa.Table.from_pylist(nemesis), tmp_path / "nemesis.parquet")
    problems: list[str] = []
    observations = read_frame(tmp_path, "observations", problems)
    faults = read_frame(tmp_path, "nemesis", problems)
    assert problems == []
    assert observations["observer"].tolist() == ["2"]
    assert observations["isr"].tolist() == ["[1, 0]"]
    assert faults["targets"].tolist() == ['{"a": [2], "b": 1}']
    assert faults["detail"].tolist() == ["text"]
