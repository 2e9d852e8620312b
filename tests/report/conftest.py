"""Fixtures of the report tests: one hand-built run folder, rendered once per session."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from report import render_report
from tests.report.runfolder import build_run


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "browser: opens a page in headless Chromium (Debian's chromium package)"
    )


@pytest.fixture(scope="session")
def built_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The pristine run folder; tests that change a run copy it first (see `run_copy`)."""
    return build_run(tmp_path_factory.mktemp("results") / "isolate-az-leader" / "20260528T202640Z" / "acks1")


@pytest.fixture(scope="session")
def report_html(built_run: Path) -> str:
    return render_report(built_run).read_text(encoding="utf-8")


@pytest.fixture
def run_copy(built_run: Path, tmp_path: Path) -> Path:
    """A private copy of the run folder, same scenario, timestamp and configuration names, to change at will."""
    target = tmp_path / built_run.parent.parent.name / built_run.parent.name / built_run.name
    shutil.copytree(built_run, target)
    for made in ("report.html", "junit.xml"):
        (target / made).unlink(missing_ok=True)
    return target
