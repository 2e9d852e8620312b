"""A whole run on the fake runtime: spec in, history tables and verdict out; teardown when any phase fails.

Kafka itself is replaced where only a live cluster can answer (bring-up,
settling, topic creation, the replica dump: the cluster tests cover them);
everything else is the harness's own code, through the runtime interface.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from checkers.schema import TABLES
from harness.run import execute_run
from harness.scenario import run_specs
from harness.spec import Spec, load_specs, parse_spec
from harness.workloadset import PROCESS_PREFIX
from nemesis.journal import read_journal
from testbed.addressing import AddressPlan, Host
from testbed.errors import ClusterError, FaultError, HarnessError, RuntimeFailure, WorkloadError
from testbed.kafka.cluster import KafkaCluster
from testbed.kafka.config import ClusterSettings
from testbed.kafka.wire import BrokerView
from testbed.machine import Machine
from testbed.runfolder import RunFolder
from testbed.runtime.base import Runtime
from testbed.state import RunState
from tests.fakes import FakeRuntime, FakeTopic, Script, exits_by_itself, workload_behaviours

SPEC: dict[str, Any] = {
    "name": "fake-run", "seed": 3, "duration_s": 1, "settle_timeout_s": 1, "drain_timeout_s": 1,
    "checker": "pandas",
    "workloads": {"producers": [{"azs": ["az1"], "rate": 10}], "consumers": [{"azs": ["az2"]}]},
    "nemesis": [{"at": 0, "fault": "isolate-az", "target": "az2", "name": "iso"}],
}


class HealthyCluster(KafkaCluster):
    """The real cluster object, but where only a live Kafka can answer (bring-up, settling, the brokers' views of
    the cluster) it answers as a healthy cluster would, or fails bring-up when told to."""

    def __init__(self, runtime: Runtime, settings: ClusterSettings, folder: RunFolder, machine: FakeMachine) -> None:
        super().__init__(runtime, settings, folder)
        self.machine = machine

    def bring_up(self, timeout: float = 90.0) -> None:
        self.write_configs()
        self.power_on_all()
        if self.machine.bring_up_fails:
            raise ClusterError("timed out after 90 s waiting for a ZooKeeper quorum")

    def settled(self) -> dict[str, BrokerView] | None:
        return {}

    def views(self) -> dict[str, BrokerView | None]:
        raise AssertionError("explicit targets must not need the cluster's live state")

    def registered(self, node: Host) -> bool:
        return False  # a broker killed moments ago: ZooKeeper has let it go


@dataclass
class FakeMachine:
    """The machine a fake run is made on (its `machine` is what the run flow is given), what the tests change
    about it before a run, and what they find on it after."""

    active_file: Path
    scripts: dict[str, Script] = field(default_factory=lambda: {"workload/drain-": exits_by_itself(0)})
    prepare: list[Callable[[FakeRuntime], None]] = field(default_factory=list)
    bring_up_fails: bool = False
    runtimes: list[FakeRuntime] = field(default_factory=list)
    replica_checks: list[str] = field(default_factory=list)
    machine: Machine = field(init=False)

    def __post_init__(self) -> None:
        self.machine = Machine(make_runtime=self.make_runtime, preflight=lambda *args, **kwargs: None,
                               ensure_kafka=lambda version: None,
                               make_cluster=lambda runtime, settings, folder: HealthyCluster(runtime, settings,
                                                                                             folder, self),
                               dump_replicas=self.dump_replicas, active_file=self.active_file)

    @property
    def runtime(self) -> FakeRuntime:
        (runtime,) = self.runtimes
        return runtime

    def make_runtime(self, kind: str, prefix: str, plan: AddressPlan, state: RunState) -> FakeRuntime:
        """A FakeRuntime with a topic of its own; Kafka's snapshot script answers as on a healthy node."""
        runtime = FakeRuntime(plan, prefix, state, scripts=self.scripts, behaviours=workload_behaviours(FakeTopic()),
                              execute=snapshot_answer)
        for step in self.prepare:
            step(runtime)
        self.runtimes.append(runtime)
        return runtime

    def dump_replicas(self, folder: RunFolder, topic: str, kafka_version: str,
                      final: dict[int, dict[int, set[str]]] | None = None) -> dict[str, Any]:
        """No segments to dump on the fake hosts: the replicas agree, nothing to compare."""
        self.replica_checks.append(topic)
        return {"topic": topic, "partitions": [], "agree": True}


def snapshot_answer(host: Host, argv: list[str], input_text: str | None) -> subprocess.CompletedProcess[str]:
    """What the segment snapshot script says on a node: two files, 100 bytes."""
    return subprocess.CompletedProcess(argv, 0, "copied 100 2\n" if "snapshot" in argv else "", "")


@pytest.fixture
def machine(tmp_path: Path) -> FakeMachine:
    return FakeMachine(tmp_path / "run" / "active.json")


def workload_processes(runtime: FakeRuntime) -> dict[str, Any]:
    return {p.name.removeprefix(PROCESS_PREFIX): p for p in runtime.spawned if p.name.startswith(PROCESS_PREFIX)}


def test_a_run_goes_from_spec_to_history_tables_and_a_valid_verdict(machine: FakeMachine, tmp_path: Path) -> None:
    run_dir = tmp_path / "results" / "fake-run"
    outcome = execute_run(parse_spec(SPEC), run_dir, engine="pandas", machine=machine.machine)
    folder, runtime = RunFolder(run_dir), machine.runtime

    assert outcome.status == 0 and outcome.verdict["valid"] is True, outcome.verdict
    assert outcome.verdict["engine"] == "pandas" and outcome.verdict["errors"] == {}
    assert json.loads(folder.verdict.read_text())["valid"] is True
    for table in TABLES:
        assert folder.table(table).exists(), table
    writes = pd.read_parquet(folder.table("writes"))
    assert sorted(writes["value"]) == ["producer-az1-0-0", "producer-az1-0-1", "producer-az1-0-2"]
    assert set(writes["status"]) == {"ok"}
    reads = pd.read_parquet(folder.table("reads"))
    final = reads[reads["phase"] == "final"]
    assert sorted(final["process"].unique()) == ["drain-az1", "drain-az2", "drain-az3"]
    assert set(final["value"]) == set(writes["value"])
    assert set(pd.read_parquet(folder.table("processes"))["process"]) == {
        "producer-az1-0", "consumer-az2-0", "drain-az1", "drain-az2", "drain-az3"}
    assert machine.replica_checks == ["faultline"]

    # The nemesis: its fault started and was undone by the heal, a snapshot of each node taken first.
    start, stop, heal = read_journal(folder.nemesis_journal)
    assert (start["type"], start["targets"]["az"]) == ("start", "az2")
    assert (stop["type"], stop["detail"]["by"]) == ("stop", "heal-all")
    assert stop["detail"]["snapshot"]["files"] == 2 * len(runtime.plan.nodes)
    assert (heal["type"], heal["fault"]) == ("info", "heal-all")
    assert runtime.cleared_last() == sorted(h.name for h in runtime.plan.hosts)

    # Workloads: configs put on their hosts, stopped by SIGTERM (drains ended by themselves), then all torn down.
    ended = {name: p.ended_by for name, p in workload_processes(runtime).items()}
    assert ended == {"producer-az1-0": "SIGTERM", "consumer-az2-0": "SIGTERM",
                     **{f"observer-broker-{i}": "SIGTERM" for i in range(3)},
                     **{f"drain-az{i}": "exit" for i in range(1, 4)}}
    put = {path for _, path in runtime.puts}
    assert {folder.workload_config(name) for name in ended} <= put
    assert all((h.name, folder.journal_dir) in runtime.fetches for h in runtime.plan.hosts)
    assert runtime.destroyed == 1 and not runtime.exists() and runtime.alive() == []
    assert not machine.active_file.exists()
    assert "] checking" in folder.harness_log.read_text()


def fail_bring_up(machine: FakeMachine) -> None:
    machine.bring_up_fails = True


def fail_an_observer_spawn(machine: FakeMachine) -> None:
    machine.prepare.append(lambda runtime: runtime.break_once("spawn", "workload/observer-broker-1"))


def kill_the_producer_mid_run(machine: FakeMachine) -> None:
    machine.scripts["workload/producer-"] = exits_by_itself(1, after_s=0.3)


def fail_a_firewall_clear(machine: FakeMachine) -> None:
    machine.prepare.append(lambda runtime: runtime.break_once("clear_firewall", "az2-node"))


def fail_a_drain(machine: FakeMachine) -> None:
    machine.scripts["workload/drain-az2"] = exits_by_itself(1)


@pytest.mark.parametrize(("phase", "break_it", "error", "nemesis_made"), [
    ("provisioning", fail_bring_up, ClusterError, False),
    ("starting workloads", fail_an_observer_spawn, RuntimeFailure, True),
    ("running", kill_the_producer_mid_run, WorkloadError, True),
    ("healing", fail_a_firewall_clear, FaultError, True),
    ("draining", fail_a_drain, WorkloadError, True),
])
def test_a_failure_in_any_phase_tears_everything_down(
        machine: FakeMachine, tmp_path: Path, phase: str, break_it: Callable[[FakeMachine], None],
        error: type[HarnessError], nemesis_made: bool) -> None:
    break_it(machine)
    spec = parse_spec({**SPEC, "duration_s": 2 if phase == "running" else 1})
    with pytest.raises(error) as raised:
        execute_run(spec, tmp_path / "run", engine="pandas", machine=machine.machine)
    assert isinstance(raised.value, HarnessError)
    runtime = machine.runtime
    assert runtime.spawned, "the cluster had started"
    assert runtime.alive() == [], "every process is dead"
    assert runtime.destroyed == 1 and not runtime.exists()
    assert not machine.active_file.exists(), "the machine's one-cluster record is released"
    workloads = workload_processes(runtime)
    assert all(p.ended_by != "destroy" for p in workloads.values()), \
        {n: p.ended_by for n, p in workloads.items()}  # stopped by the harness, so they journal their end
    if nemesis_made:
        assert runtime.cleared_last() == sorted(h.name for h in runtime.plan.hosts)
    else:
        assert runtime.firewall_calls == []
    if phase == "running":
        assert "producer-az1-0 died mid-run" in str(raised.value)
    if phase == "draining":
        assert "drain-az2 exited with status 1" in str(raised.value)


def test_a_crashed_configuration_is_a_junit_error_and_exit_3_while_the_others_keep_their_results(
        machine: FakeMachine, tmp_path: Path) -> None:
    # Three configurations expecting a valid run; the middle one's producers (in az2) die mid-run.
    raw = {**SPEC, "duration_s": 2, "expect": {"valid": True},
           "configurations": {"first": {}, "crashes": {"overrides": {"workloads": {
               "producers": [{"azs": ["az2"], "rate": 10}]}}}, "third": {}}}
    machine.scripts["workload/producer-az2-"] = exits_by_itself(1, after_s=0.3)
    specs = load_specs_from(raw, tmp_path)
    out = io.StringIO()

    status, cases = run_specs(specs, tmp_path / "results", "pandas", out, machine=machine.machine)

    assert status == 3, out.getvalue()
    assert {c.configuration: c.passed for c in cases} == {"first": True, "crashes": None, "third": True}
    top = tmp_path / "results" / "fake-run" / "latest"
    for name in ("first", "third"):
        assert json.loads(RunFolder(top / name).verdict.read_text())["valid"] is True, name
    assert not RunFolder(top / "crashes").verdict.exists()
    assert "ERROR fake-run [crashes] the harness failed: WorkloadError: workload producer-az2-0 died mid-run" \
        in out.getvalue()
    junit = ET.parse(top / "junit.xml").getroot().find("testsuite")
    assert junit is not None and (junit.get("tests"), junit.get("failures"), junit.get("errors")) == ("3", "0", "1")
    outcomes = {case.get("name"): [child.tag for child in case] for case in junit.iter("testcase")}
    assert outcomes == {"first": [], "crashes": ["error"], "third": []}
    assert all(r.destroyed == 1 and not r.exists() for r in machine.runtimes)


def test_junit_xml_is_written_when_the_run_is_interrupted(machine: FakeMachine, tmp_path: Path) -> None:
    raw = {**SPEC, "configurations": {"first": {}, "second": {}}}
    specs = load_specs_from(raw, tmp_path)

    def interrupt_the_second(runtime: FakeRuntime) -> None:
        if machine.runtimes:  # the first configuration's runtime is made: Ctrl-C while the second's is
            raise KeyboardInterrupt

    machine.prepare.append(interrupt_the_second)
    with pytest.raises(KeyboardInterrupt):
        run_specs(specs, tmp_path / "results", "pandas", io.StringIO(), machine=machine.machine)
    suite = ET.parse(tmp_path / "results" / "fake-run" / "latest" / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    assert {c.get("name"): [x.tag for x in c] for c in suite.iter("testcase")} == {"first": [], "second": ["error"]}


def load_specs_from(raw: dict[str, Any], tmp_path: Path) -> list[Spec]:
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(raw))
    return load_specs(path, None, None)


def test_several_spec_files_each_keep_their_folder_latest_and_junit_and_the_worst_status_wins(
        machine: FakeMachine, tmp_path: Path) -> None:
    from harness.batch import run_batch

    machine.scripts["workload/producer-az2-"] = exits_by_itself(1, after_s=0.3)
    good = load_specs_from({**SPEC, "name": "good", "expect": {"valid": True},
                            "configurations": {"one": {}, "two": {}}}, tmp_path)
    (tmp_path / "b").mkdir()
    broken = load_specs_from({**SPEC, "name": "broken", "duration_s": 2, "workloads": {
        "producers": [{"azs": ["az2"], "rate": 10}]}}, tmp_path / "b")
    out = io.StringIO()

    status = run_batch([good, broken], tmp_path / "results", "pandas", out, machine=machine.machine)

    assert status == 3, out.getvalue()
    lines = out.getvalue().splitlines()
    assert lines[-1] == "1 of 2 scenarios passed; FAILED: broken (3: the harness failed)"
    # a file of several configurations ends in a line with every configuration's verdict line
    assert lines[-2] == "good: 2 of 2 configurations PASS | one: PASS (expected) · VALID | two: PASS (expected) · VALID"
    marks = sorted((line.split()[0], re.search(r"(good|broken) \[", line)[1]) for line in lines[:-2])  # type: ignore[index]
    assert marks == [("ERROR", "broken"), ("PASS", "good"), ("PASS", "good")]
    assert all(line.startswith("PASS (expected) · VALID | good [") for line in lines[:-2] if "good" in line)
    for name, tests in (("good", "2"), ("broken", "1")):
        latest = tmp_path / "results" / name / "latest"
        assert latest.is_symlink(), name
        suite = ET.parse(latest / "junit.xml").getroot().find("testsuite")
        assert suite is not None and suite.get("tests") == tests, name
    manifests = [json.loads(RunFolder(tmp_path / "results" / "good" / "latest" / c).manifest.read_text())
                 for c in ("one", "two")]
    assert [(m["status"], m["outcome"]) for m in manifests] == [("finished", "PASS")] * 2


def test_a_bad_file_among_several_is_refused_before_anything_starts(machine: FakeMachine, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from faultline.cli import main

    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump(SPEC))
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({**SPEC, "duration_s": "long"}))
    assert main(["run", str(good), str(bad), "--results", str(tmp_path / "results")], machine.machine) == 3
    assert "bad.yaml" in capsys.readouterr().err
    assert not (tmp_path / "results").exists() and machine.runtimes == []


def test_a_run_without_its_preconditions_evidence_is_inconclusive_and_exits_4(
        machine: FakeMachine, tmp_path: Path) -> None:
    window = {"pattern": "AlterIsr in flight", "from": "iso.start", "precondition": True, "says": "the race window"}
    raw = {**SPEC, "configurations": {"plain": {"expect": {"valid": True}},
                                      "window": {"expect": {"valid": True, "logs": [window]}}}}
    out = io.StringIO()

    status, cases = run_specs(load_specs_from(raw, tmp_path), tmp_path / "results", "pandas", out,
                              machine=machine.machine)

    assert status == 4, out.getvalue()
    assert {c.configuration: (c.passed, bool(c.inconclusive)) for c in cases} == {
        "plain": (True, False), "window": (False, True)}
    window = next(line for line in out.getvalue().splitlines() if "| fake-run [window] |" in line)
    assert window.startswith("INCONCLUSIVE (precondition not shown: the race window") and " · VALID | " in window
    top = tmp_path / "results" / "fake-run" / "latest"
    expectation = json.loads(RunFolder(top / "window").verdict.read_text())["expectation"]
    assert expectation["passed"] is False and expectation["mismatches"] == []
    assert expectation["inconclusive"][0].startswith("precondition not shown: the race window in any node's logs")
    assert json.loads(RunFolder(top / "window").manifest.read_text())["outcome"] == "INCONCLUSIVE"
    outcomes = {case.get("name"): [child.tag for child in case]
                for case in ET.parse(top / "junit.xml").getroot().iter("testcase")}
    assert outcomes == {"plain": [], "window": ["skipped"]}
