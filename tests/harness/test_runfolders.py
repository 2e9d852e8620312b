"""`show` and `report` at every level of the results tree: a run, a timestamp or `latest` folder, a scenario."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from faultline.cli import main
from harness.runfolders import find_runs
from testbed.errors import UsageError
from testbed.runfolder import RunFolder
from tests.report.runfolder import build_run


@pytest.fixture(scope="module")
def built_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_run(tmp_path_factory.mktemp("built") / "acks1")


@pytest.fixture
def scenario(built_run: Path, tmp_path: Path) -> Path:
    """results/isolate-az-leader/<ts>/{acks1, acksall, crashed} and latest -> <ts>: acks1 and acksall finished,
    crashed's harness failed (its spec.yaml and harness.log, no verdict)."""
    top = tmp_path / "results" / "isolate-az-leader" / "20260528T202640Z"
    for name in ("acks1", "acksall"):
        shutil.copytree(built_run, top / name)
        spec = yaml.safe_load((top / name / "spec.yaml").read_text())
        (top / name / "spec.yaml").write_text(yaml.safe_dump({**spec, "configuration": name}))
        for made in ("report.html", "junit.xml"):
            (top / name / made).unlink(missing_ok=True)
    RunFolder(top / "crashed").make()
    shutil.copy(top / "acks1" / "spec.yaml", top / "crashed" / "spec.yaml")
    (top / "crashed" / "harness.log").write_text("WorkloadError: workload producer-az1-0 died mid-run\n")
    (top.parent / "latest").symlink_to(top.name)
    return top.parent


def test_every_level_names_the_configurations_runs(scenario: Path) -> None:
    top = scenario / "20260528T202640Z"
    for named in (scenario, scenario / "latest", top):
        found = find_runs(named)
        assert (found.top, found.finished, found.unfinished, found.several) == (
            top, [top / "acks1", top / "acksall"], [top / "crashed"], True), named
    one = find_runs(scenario / "latest" / "acks1")
    assert (one.finished, one.several) == ([top / "acks1"], False)
    with pytest.raises(UsageError, match="crashed: not a finished run folder .*did not finish"):
        find_runs(top / "crashed")
    with pytest.raises(UsageError, match="no such folder"):
        find_runs(scenario / "nope")


def test_show_latest_prints_every_configurations_summary(scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(scenario / "latest")]) == 0
    out = capsys.readouterr().out
    for name in ("acks1", "acksall"):  # the same built run in each: an expected loss, the verdict line says both
        assert f"isolate-az-leader [{name}] / 20260528T202640Z: PASS (expected) · INVALID: lost 3 acknowledged" in out
    assert "crashed: no verdict (its run did not finish: see " in out


def test_report_latest_renders_each_configuration_and_one_junit(scenario: Path) -> None:
    assert main(["report", str(scenario / "latest")]) == 0
    top = scenario / "20260528T202640Z"
    assert (top / "acks1" / "report.html").is_file() and (top / "acksall" / "report.html").is_file()
    suite = ET.parse(top / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    assert {c.get("name"): [x.tag for x in c] for c in suite.iter("testcase")} == {
        "acks1": [], "acksall": [], "crashed": ["error"]}


def test_a_relative_path_is_resolved_where_it_was_typed(scenario: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(scenario.parent)
    assert main(["show", "isolate-az-leader/latest/acks1"]) == 0
    assert "[acks1]" in capsys.readouterr().out
