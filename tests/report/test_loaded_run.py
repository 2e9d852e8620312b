"""report.loaded_run reads history tables through the checker's reader in its lenient mode."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from checkers.lenient_tables import frame_columns, read_frame
from report.loaded_run import load_run


def test_the_run_holds_the_lenient_readers_frames_less_the_columns_the_report_never_shows(run_copy: Path) -> None:
    (run_copy / "history" / "nemesis.parquet").write_bytes(b"not Parquet")
    run = load_run(run_copy)
    assert [p for p in run.problems if p.startswith("history/nemesis: unreadable (")], run.problems
    assert run.table("nemesis").empty and list(run.table("nemesis").columns) == list(frame_columns("nemesis"))
    assert "key" not in run.table("reads") and "leader_epoch" not in run.table("reads")
    assert "source" not in run.table("writes")
    for name, skip in (("writes", {"source"}), ("reads", {"key", "leader_epoch"}), ("observations", set())):
        expected = read_frame(run_copy / "history", name, [], skip)
        assert len(expected) > 0
        pd.testing.assert_frame_equal(run.table(name), expected)


def test_tables_not_asked_for_are_empty_in_the_contracts_columns(run_copy: Path) -> None:
    run = load_run(run_copy, tables=["writes"])
    assert len(run.table("writes")) > 0
    assert run.table("reads").empty and "poll_ns" in run.table("reads") and "key" not in run.table("reads")
    assert str(run.table("reads")["poll_ns"].dtype) == "Int64"
