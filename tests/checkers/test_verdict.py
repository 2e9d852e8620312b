"""The verdict document: unknown verdicts, exit statuses, context in examples, stable bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from checkers import check, exit_status, write_verdict
from checkers.anomalies import ANOMALIES
from checkers.pandas_engine import PandasEngine
from checkers.verdict import dumps
from tests.checkers.cases import CASES
from tests.checkers.histories import T0, r, reads, w, write
from tests.checkers.test_input import run_cli


def test_no_final_reads_is_unknown_with_exit_2(tmp_path: Path) -> None:
    history = write(tmp_path / "h", {"writes": [w("a", 1, offset=0)], "reads": reads(r("a", 0, "live"))})
    proc = run_cli(history, tmp_path / "out", "--engine", "pandas")
    assert proc.returncode == 2
    verdict = json.loads((tmp_path / "out" / "verdict.json").read_text())
    assert verdict["valid"] == "unknown" and "no final reads" in verdict["reason"]
    assert verdict["errors"] == {}
    assert set(verdict["counts"]) == set(ANOMALIES)


def test_valid_and_invalid_exit_statuses(tmp_path: Path) -> None:
    ok = run_cli(write(tmp_path / "clean", CASES["clean"].tables()), tmp_path / "o1", "--engine", "pandas")
    bad = run_cli(write(tmp_path / "lost", CASES["lost"].tables()), tmp_path / "o2", "--engine", "pandas")
    assert (ok.returncode, bad.returncode) == (0, 1)
    verdict = json.loads((tmp_path / "o2" / "verdict.json").read_text())
    assert list(verdict) == ["valid", "engine", "engine_reason", "counts", "errors", "examples", "stats"]
    assert verdict["engine_reason"] == "asked for (--engine pandas)"
    assert verdict["stats"] == {
        "writes": 4,
        "ok": 4,
        "fail": 0,
        "info": 0,
        "reads": 2,
        "live_reads": 0,
        "final_reads": 2,
        "transactions": 0,
        "committed": 0,
        "aborted": 0,
        "unknown": 0,
    }


def test_an_engine_failure_is_unknown_never_a_crash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(*_: object) -> None:
        raise RuntimeError("disk on fire\nsecond line")

    monkeypatch.setattr(PandasEngine, "analyse", explode)
    verdict = check(write(tmp_path, CASES["lost"].tables()), engine="pandas")
    assert verdict["valid"] == "unknown"
    assert verdict["reason"] == "pandas engine failed: RuntimeError: disk on fire"
    assert exit_status(verdict) == 2


def test_write_verdict_is_atomic_and_leaves_no_temp_files(tmp_path: Path) -> None:
    verdict = check(write(tmp_path / "h", CASES["lost"].tables()), engine="pandas")
    path = write_verdict(verdict, tmp_path / "out")
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["verdict.json"]
    assert path.read_text() == dumps(verdict)


def _with_context(tmp_path: Path) -> Path:
    tables = CASES["lost"].tables()
    tables["nemesis"] = [
        {"time_ns": T0, "type": "start", "fault": "isolate-az", "targets": '["az1"]', "detail": None},
        {
            "time_ns": T0 + 3_000_000,
            "type": "stop",
            "fault": "isolate-az",
            "targets": '["az1"]',
            "detail": None,
        },
        {
            "time_ns": T0 + 6_500_000,
            "type": "start",
            "fault": "kill",
            "targets": '["broker-2"]',
            "detail": None,
        },
    ]
    tables["observations"] = [
        # broker-1 thinks 1 leads before b's write and 2 during it; broker-3's last view (before) says 3.
        {"time_ns": T0 - 10**9, "observer": "broker-1", "topic": "t", "partition": 0, "leader": 1},
        {"time_ns": T0 + 4_000_000, "observer": "broker-1", "topic": "t", "partition": 0, "leader": 2},
        {"time_ns": T0 - 10**9, "observer": 3, "topic": "t", "partition": 0, "leader": 3},
        {"time_ns": T0 + 9 * 10**9, "observer": 3, "topic": "t", "partition": 0, "leader": 4},
        {"time_ns": T0 + 4_000_000, "observer": "broker-1", "topic": "t", "partition": 1, "leader": 9},
    ]
    return write(tmp_path, tables)


def test_examples_name_active_faults_and_claimed_leaders(tmp_path: Path) -> None:
    verdict = check(_with_context(tmp_path), engine="pandas")
    b = verdict["examples"]["lost"][0]  # invoked at T0+2ms, completed at T0+7ms
    assert b["value"] == "b"
    assert b["faults"] == [
        {"fault": "isolate-az", "targets": ["az1"], "start_ns": T0, "stop_ns": T0 + 3_000_000},
        {"fault": "kill", "targets": ["broker-2"], "start_ns": T0 + 6_500_000, "stop_ns": None},
    ]
    assert b["leaders"] == [1, 2, 3]


def test_same_history_same_verdict_bytes(tmp_path: Path) -> None:
    history = _with_context(tmp_path)
    assert dumps(check(history, engine="pandas")) == dumps(check(history, engine="pandas"))
