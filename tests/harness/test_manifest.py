"""run.json: written when a run starts and again when it ends, whatever the ending (on the fake runtime)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from harness.manifest import SCHEMA_VERSION, Manifest, fault_kinds, finish_recovered, run_id_of
from harness.run import execute_run
from harness.spec import load_specs, parse_spec
from harness.versions import software_versions
from testbed.runfolder import RunFolder
from tests.harness.test_run_fake import SPEC, FakeMachine, fail_a_drain

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def machine(tmp_path: Path) -> FakeMachine:
    return FakeMachine(tmp_path / "run" / "active.json")


def read_manifest(run_dir: Path) -> dict[str, Any]:
    return dict(json.loads(RunFolder(run_dir).manifest.read_text()))


def test_a_finished_run_has_a_manifest_with_its_settings_versions_and_outcome(
        machine: FakeMachine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAULTLINE_CAMPAIGN_ID", "nightly-2026-11-23")
    run_dir = tmp_path / "results" / "fake-run" / "20261123-160000"
    outcome = execute_run(parse_spec(SPEC), run_dir, engine="pandas", machine=machine.machine)
    m = read_manifest(run_dir)
    assert m["schema_version"] == SCHEMA_VERSION
    assert (m["run_id"], m["campaign_id"], m["scenario"], m["configuration"]) == (
        "fake-run/20261123-160000", "nightly-2026-11-23", "fake-run", None)
    assert m["status"] == "finished" and m["exit_status"] == outcome.status == 0 and m["valid"] is True
    assert ISO.match(m["started_at"]) and ISO.match(m["ended_at"]) and m["started_at"] <= m["ended_at"]
    assert 0 < m["duration_s"] < 120
    assert m["runtime"] == "netns" and m["versions"] == software_versions("2.7.2")
    assert m["faults"] == ["isolate-az"]
    assert m["settings"]["producers"][0]["settings"] == {"acks": "all", "enable.idempotence": False}
    assert m["settings"]["topic"]["min_insync_replicas"] == 2
    assert m["outcome"] is None and m["expected"] is None  # the spec expects nothing
    samples = m["resources"]["samples"]  # a run shorter than a minute: the last sample, taken once judged
    assert m["resources"]["interval_s"] == 60 and samples[-1]["phase"] == "checking"
    assert samples[-1]["peak_rss_bytes"] > 1 << 20 and samples[-1]["history_bytes"] > 0
    assert samples[-1]["journal_bytes"] > 0 and samples[-1]["folder_bytes"] >= samples[-1]["journal_bytes"]


def test_a_run_that_fails_says_so_in_its_manifest(machine: FakeMachine, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FAULTLINE_CAMPAIGN_ID", raising=False)
    fail_a_drain(machine)
    spec = parse_spec({**SPEC, "expect": {"absent": ["lost"]}})
    with pytest.raises(Exception):  # noqa: B017 - which error is test_run_fake's business
        execute_run(spec, tmp_path / "run", engine="pandas", machine=machine.machine)
    m = read_manifest(tmp_path / "run")
    assert (m["status"], m["exit_status"], m["outcome"], m["campaign_id"]) == ("error", 3, "ERROR", None)
    assert m["ended_at"] is not None


def test_the_first_manifest_marks_a_run_as_running(tmp_path: Path) -> None:
    (spec,) = load_specs(REPO / "scenarios" / "isolate-az-leader.yaml", "acks1")
    run_dir = tmp_path / "isolate-az-leader" / "20261123-160000" / "acks1"
    Manifest(spec, run_dir).write()
    m = read_manifest(run_dir)
    assert (m["status"], m["ended_at"], m["outcome"]) == ("running", None, None)
    assert m["run_id"] == run_id_of(spec, run_dir) == "isolate-az-leader/20261123-160000/acks1"
    assert m["settings"]["producers"][0]["settings"]["acks"] == "1"
    assert fault_kinds(spec) == ["isolate-az"]


def test_recover_finishes_the_manifest_the_killed_run_left(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAULTLINE_CAMPAIGN_ID", "nightly")
    (spec,) = load_specs(REPO / "scenarios" / "isolate-az-leader.yaml", "acks1")
    run_dir = tmp_path / "isolate-az-leader" / "20261123-160000" / "acks1"
    killed = Manifest(spec, run_dir)
    killed.write()
    series = [{"t_s": 60.0, "phase": "running", "peak_rss_bytes": 5 << 20}]
    killed.resources(series, 60.0)  # the dead harness's last sample
    started = read_manifest(run_dir)["started_at"]
    monkeypatch.delenv("FAULTLINE_CAMPAIGN_ID")
    verdict = {"valid": False, "counts": {"lost": 3}}
    finish_recovered(spec, run_dir, verdict, {"expected": "lost > 0", "observed": "lost = 3", "passed": True}, 1)
    m = read_manifest(run_dir)
    assert (m["status"], m["started_at"], m["campaign_id"], m["recovered"]) == ("finished", started, "nightly", True)
    assert (m["exit_status"], m["valid"], m["outcome"], m["observed"]) == (1, False, "PASS", "lost = 3")
    assert m["duration_s"] >= 0
    assert m["resources"] == {"interval_s": 60.0, "samples": series}, "the killed run's series, to its last sample"


def test_an_ssh_runs_manifest_says_what_each_node_hosts_power_off_was(tmp_path: Path) -> None:
    (spec,) = load_specs(REPO / "scenarios" / "isolate-az-leader.yaml", "acks1")
    manifest = Manifest(spec, tmp_path)
    manifest.finish(None, None, None, failed=True)
    assert "power_offs" not in json.loads((tmp_path / "run.json").read_text())  # netns, docker: nothing per host
    power = {"az1-node": "unsyncfs", "az2-node": "command", "az3-node": "processes"}
    RunFolder(tmp_path).state.write_text(json.dumps({"runtime": "ssh", "ssh": {"power": power}}))
    manifest.finish(None, None, None, failed=True)
    assert json.loads((tmp_path / "run.json").read_text())["power_offs"] == power
