"""`harness clean --prefix`: one run's leftovers only (several harnesses on one machine), a bad prefix refused in one
line before anything is removed. The clean-up itself is replaced here; tests/harness/test_teardown.py cleans for real.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from faultline.cli import main


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[tuple[str, Any]]:
    seen: list[tuple[str, Any]] = []
    monkeypatch.setattr(os, "geteuid", lambda: 0)

    def leftovers(*args: Any, **kwargs: Any) -> list[str]:
        seen.append(("leftovers", (args, kwargs)))
        return []

    def daemons() -> list[str]:
        seen.append(("spark daemons", None))
        return []

    monkeypatch.setattr("faultline.cli.clean_leftovers", leftovers)
    monkeypatch.setattr("spark_analysis.standalone.clean_orphaned_daemons", daemons)
    monkeypatch.setattr("faultline.cli.ACTIVE_FILE", tmp_path / "active.json")
    return seen


def test_a_prefix_cleans_that_run_only_and_leaves_sparks_daemons(calls: list[tuple[str, Any]],
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["clean", "--prefix", "fl3a9c01"]) == 0
    assert calls == [("leftovers", (("fl3a9c01",), {}))]
    assert capsys.readouterr().out.strip() == "nothing to clean"


def test_without_a_prefix_every_runs_leftovers_and_orphaned_spark_daemons_go(calls: list[tuple[str, Any]]) -> None:
    assert main(["clean"]) == 0
    assert calls == [("leftovers", ((), {})), ("spark daemons", None)]


@pytest.mark.parametrize("prefix", ["fl3a9c0", "FL3A9C01", "fl3a9c01x", "*", ""])
def test_a_bad_prefix_is_one_line_and_removes_nothing(calls: list[tuple[str, Any]], capsys: pytest.CaptureFixture[str],
                                                      prefix: str) -> None:
    assert main(["clean", "--prefix", prefix]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"faultline: --prefix {prefix!r}: not a run prefix"), err
    assert calls == []
