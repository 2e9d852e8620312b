"""Root where it is needed: the commands that make or touch a cluster refuse a non-root user in one line (exit 3,
saying to use sudo, nothing made); the ones that only read a run, a plan or a history work without root.

The euid is faked in-process (os.geteuid), and every step that would come after the root check (provisioning, a
cluster's state, clean-up, recovery, the machine checks of run and campaign) is replaced by one that fails the
test, so a command that forgot its root check cannot start anything here.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from checkers.cli import main as checker_main
from faultline.cli import main
from testbed.lifecycle import ROOT_NEEDED
from tests.checkers.cases import CLEAN
from tests.checkers.histories import write
from tests.conftest import REPO
from tests.report.runfolder import build_run

NOT_ROOT = 1000


def started(*args: Any, **kwargs: Any) -> None:
    raise AssertionError("a command went past its root check")


@pytest.fixture
def not_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: NOT_ROOT)
    for target in ("faultline.cli.provision", "faultline.cli.tear_down", "faultline.cli.cluster_from_state",
                   "faultline.cli.clean_leftovers", "faultline.cli.check_can_provision", "faultline.cli.active_run_dir",
                   "harness.recover.recover", "campaign.command.check_can_provision"):
        monkeypatch.setattr(target, started)


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_run(tmp_path_factory.mktemp("results") / "isolate-az-leader" / "20260528T202640Z" / "acks1")


@pytest.mark.parametrize("args", [
    ["cluster", "up", "--run-dir", "{tmp}/run"],
    ["cluster", "status"],
    ["cluster", "down"],
    ["clean"],
    ["recover", "{tmp}"],
    ["run", str(REPO / "scenarios" / "smoke.yaml"), "--results", "{tmp}/results"],
    ["campaign", str(REPO / "campaigns" / "quick.yaml"), "--results", "{tmp}/results"],
])
def test_a_command_that_makes_or_touches_a_cluster_asks_for_sudo_in_one_line(
        not_root: None, tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
    status = main([a.replace("{tmp}", str(tmp_path)) for a in args])
    err = capsys.readouterr().err.strip().splitlines()
    assert (status, err) == (3, [f"faultline: {ROOT_NEEDED}"])
    assert "sudo" in ROOT_NEEDED
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no run folder, no results


def test_reading_a_run_a_plan_or_the_catalogue_needs_no_root(
        not_root: None, run_folder: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    copy = tmp_path / "isolate-az-leader" / "20260528T202640Z" / "acks1"
    shutil.copytree(run_folder, copy)
    assert main(["show", str(copy)]) == 0
    assert "PASS (expected) · INVALID: lost 3 acknowledged writes" in capfd.readouterr().out
    assert main(["report", str(copy)]) == 0 and (copy / "report.html").is_file()
    assert main(["list"]) == 0 and "isolate-az-leader" in capfd.readouterr().out
    assert main(["campaign", str(REPO / "campaigns" / "quick.yaml"), "--plan", "--budget", "10m"]) == 0
    assert main(["compose", str(REPO / "scenarios" / "smoke.yaml"), "-o", str(tmp_path / "compose")]) == 0
    assert (tmp_path / "compose" / "docker-compose.yml").is_file()


def test_the_checker_needs_no_root(not_root: None, tmp_path: Path) -> None:
    history = write(tmp_path / "history", CLEAN.tables(), "jsonl")
    assert checker_main([str(history), "--out", str(tmp_path / "out"), "--engine", "pandas"]) == 0
    assert (tmp_path / "out" / "verdict.json").is_file()
