"""Bad input: exit 3, one line on stderr naming the file and the line or column, no verdict."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from checkers import HistoryError, check
from tests.checkers.cases import CLEAN
from tests.checkers.histories import write

REPO = Path(__file__).resolve().parents[2]


def run_cli(history: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "checkers", str(history), "--out", str(out), *extra],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )


def assert_rejected(history: Path, tmp_path: Path, *needles: str, engine: str = "pandas") -> str:
    out = tmp_path / "out"
    proc = run_cli(history, out, "--engine", engine)
    assert proc.returncode == 3, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0]
    assert not (out / "verdict.json").exists()
    return lines[0]


def clean(tmp_path: Path, fmt: str = "jsonl") -> Path:
    return write(tmp_path / "history", CLEAN.tables(), fmt)


def replace_line(path: Path, lineno: int, text: str) -> None:
    lines = path.read_text().splitlines()
    lines[lineno - 1] = text
    path.write_text("\n".join(lines) + "\n")


def test_missing_required_table(tmp_path: Path) -> None:
    history = clean(tmp_path)
    (history / "reads.jsonl").unlink()
    assert_rejected(history, tmp_path, str(history), "missing required table 'reads'")


def test_malformed_json_line(tmp_path: Path) -> None:
    history = clean(tmp_path)
    replace_line(history / "reads.jsonl", 3, '{"process": "c", "seq": 3,')
    assert_rejected(history, tmp_path, "reads.jsonl: line 3", "malformed JSON")


def test_missing_required_column_in_a_jsonl_line(tmp_path: Path) -> None:
    history = clean(tmp_path)
    row = json.loads((history / "writes.jsonl").read_text().splitlines()[1])
    del row["value"]
    replace_line(history / "writes.jsonl", 2, json.dumps(row))
    assert_rejected(history, tmp_path, "writes.jsonl: line 2", "column 'value'", "missing")


def test_wrong_type_in_jsonl(tmp_path: Path) -> None:
    history = clean(tmp_path)
    row = json.loads((history / "writes.jsonl").read_text().splitlines()[0])
    row["offset"] = "0"
    replace_line(history / "writes.jsonl", 1, json.dumps(row))
    assert_rejected(history, tmp_path, "writes.jsonl: line 1", "column 'offset'", "integer")


def test_status_outside_its_domain(tmp_path: Path) -> None:
    history = clean(tmp_path)
    row = json.loads((history / "writes.jsonl").read_text().splitlines()[2])
    row["status"] = "OK"
    replace_line(history / "writes.jsonl", 3, json.dumps(row))
    assert_rejected(history, tmp_path, "writes.jsonl: line 3", "column 'status'")


def test_duplicate_value_in_writes_jsonl(tmp_path: Path) -> None:
    history = clean(tmp_path)
    lines = (history / "writes.jsonl").read_text().splitlines()
    row = json.loads(lines[1])
    row["value"] = json.loads(lines[0])["value"]
    replace_line(history / "writes.jsonl", 2, json.dumps(row))
    assert_rejected(history, tmp_path, "writes.jsonl: line 2", "duplicate value", "line 1")


def test_bad_jsonl_is_rejected_before_spark_starts(tmp_path: Path) -> None:
    history = clean(tmp_path)
    replace_line(history / "reads.jsonl", 2, "not json")
    assert_rejected(history, tmp_path, "reads.jsonl: line 2", engine="spark")


def set_cell(path: Path, column: str, row: int, value: Any, **write: Any) -> None:
    """Rewrite one cell of a Parquet table (``write``: options for pq.write_table)."""
    table = pq.read_table(path)
    cells = table.column(column).to_pylist()
    cells[row] = value
    array = pa.array(cells, table.schema.field(column).type)
    pq.write_table(table.set_column(table.schema.get_field_index(column), column, array), path, **write)


def test_missing_required_parquet_column(tmp_path: Path) -> None:
    history = clean(tmp_path, "parquet")
    table = pq.read_table(history / "writes.parquet").drop_columns(["status"])
    pq.write_table(table, history / "writes.parquet")
    assert_rejected(history, tmp_path, "writes.parquet: column 'status'", "missing required column")


def test_wrong_parquet_column_type(tmp_path: Path) -> None:
    history = clean(tmp_path, "parquet")
    table = pq.read_table(history / "reads.parquet")
    table = table.set_column(
        table.schema.get_field_index("offset"), "offset", table.column("offset").cast(pa.string())
    )
    pq.write_table(table, history / "reads.parquet")
    assert_rejected(history, tmp_path, "reads.parquet: column 'offset'", "expected an integer")


def _parquet_with_duplicate(tmp_path: Path) -> Path:
    history = clean(tmp_path, "parquet")
    first = pq.read_table(history / "writes.parquet").column("value")[0].as_py()
    set_cell(history / "writes.parquet", "value", 2, first)
    return history


def test_duplicate_value_in_writes_parquet(tmp_path: Path) -> None:
    history = _parquet_with_duplicate(tmp_path)
    assert_rejected(history, tmp_path, "writes.parquet: row 3: column 'value'", "duplicate value")


def test_not_a_parquet_file(tmp_path: Path) -> None:
    history = clean(tmp_path, "parquet")
    (history / "reads.parquet").write_text("hello")
    assert_rejected(history, tmp_path, "reads.parquet", "not a readable Parquet file")


def test_bad_config_json_in_processes(tmp_path: Path) -> None:
    history = clean(tmp_path)
    replace_line(history / "processes.jsonl", 1, json.dumps({"process": "p", "config": "{acks: all"}))
    assert_rejected(history, tmp_path, "processes.jsonl: line 1", "column 'config'")


def test_parquet_wins_over_jsonl_and_extra_columns_are_ignored(tmp_path: Path) -> None:
    history = clean(tmp_path, "parquet")
    (history / "writes.jsonl").write_text("garbage\n")
    table = pq.read_table(history / "reads.parquet").append_column("extra", pa.array(["x"] * 6))
    pq.write_table(table.drop_columns(["leader_epoch", "az", "key", "group"]), history / "reads.parquet")
    assert check(history, engine="pandas")["valid"] is True


@pytest.mark.spark
def test_spark_names_a_null_in_a_parquet_column(tmp_path: Path, spark: object) -> None:
    history = clean(tmp_path, "parquet")
    set_cell(history / "reads.parquet", "poll_ns", 4, None)
    with pytest.raises(HistoryError, match=r"reads\.parquet: column 'poll_ns': is null"):
        check(history, engine="spark")
    with pytest.raises(HistoryError, match=r"reads\.parquet: row 5: column 'poll_ns': is null"):
        check(history, engine="pandas")


@pytest.mark.spark
def test_spark_names_a_duplicate_value_in_parquet_writes(tmp_path: Path, spark: object) -> None:
    history = _parquet_with_duplicate(tmp_path)
    with pytest.raises(HistoryError, match=r"writes\.parquet: column 'value': duplicate value 'v0'"):
        check(history, engine="spark")


@pytest.mark.spark
def test_spark_names_a_status_outside_its_domain_in_parquet(tmp_path: Path, spark: object) -> None:
    history = clean(tmp_path, "parquet")
    set_cell(history / "writes.parquet", "status", 1, "maybe")
    with pytest.raises(
        HistoryError, match=r"writes\.parquet: column 'status': 'maybe' is not one of ok, fail"
    ):
        check(history, engine="spark")


@pytest.mark.spark
def test_spark_finds_a_null_no_footer_rules_out(tmp_path: Path, spark: object) -> None:
    """Without statistics in the footers, the null check has to read the column itself."""
    history = clean(tmp_path, "parquet")
    set_cell(history / "reads.parquet", "value", 2, None, write_statistics=False)
    with pytest.raises(HistoryError, match=r"reads\.parquet: column 'value': is null"):
        check(history, engine="spark")


def test_parquet_summary_streams_a_dataset_of_files(tmp_path: Path) -> None:
    """Counts, names and group readers over two files, one without the optional `group` column."""
    from checkers.parquet import summarize
    from checkers.schema import READS
    from checkers.sources import locate_history

    history = clean(tmp_path, "parquet")
    table = pq.read_table(history / "reads.parquet")
    (history / "reads.parquet").unlink()
    dataset = history / "reads.parquet"
    dataset.mkdir()
    grouped = table.slice(0, 2).set_column(
        table.schema.get_field_index("group"), "group", pa.array(["g", None], pa.string())
    )
    pq.write_table(grouped, dataset / "part-0.parquet")
    pq.write_table(table.slice(2).drop_columns(["group"]), dataset / "part-1.parquet")
    summary = summarize(locate_history(history)["reads"], READS)
    phases = table.column("phase").to_pylist()
    assert summary.rows == table.num_rows and not summary.bad
    assert dict(summary.counts) == {p: phases.count(p) for p in set(phases)}
    assert summary.processes == set(table.column("process").to_pylist())
    assert summary.topics == {"t"}
    assert summary.grouped == {table.column("process")[0].as_py()}
