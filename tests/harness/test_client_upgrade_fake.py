"""upgrade-client on a fake world: the process stopped by SIGTERM, its configuration started again under
`<process>-u1` on the new client's venv, the roles not under test left on the harness's own; the spec's checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.run import write_spec
from harness.spec import parse_spec
from harness.spec_clients import client_upgrades
from harness.workloadset import WorkloadSet, plan_workloads
from nemesis.registry import fault_for
from nemesis.spec import parse_fault
from nemesis.workload_faults import UpgradeClient
from testbed.addressing import make_plan
from testbed.dist.clients import ClientEnv
from testbed.errors import FaultError, SpecError
from testbed.kafka.cluster import KafkaCluster
from testbed.runfolder import RunFolder
from testbed.runtime.base import new_prefix
from tests.fakes import FakeRuntime

SPEC = {
    "name": "up", "duration_s": 20,
    "workloads": {"producers": [{"azs": ["az1"], "rate": 10}],
                  "consumers": [{"azs": ["az1"], "mode": "group", "group": "g", "commit": "after"}]},
    "nemesis": [{"at": 5, "fault": "upgrade-client", "process": "producer-az1-0", "to_version": "2.16.1"},
                {"at": 8, "fault": "upgrade-client", "process": "consumer-az1-0", "to_version": "2.16.1"}],
}
NEW = ClientEnv("2.16.1", ("env", "/venvs/2.16.1/bin/python"), {"confluent_kafka": "2.16.1", "librdkafka": "2.13.0"})
OLD = ClientEnv("1.9.2", ("env", "/venvs/1.9.2/bin/python"), {"confluent_kafka": "1.9.2", "librdkafka": "1.9.2"})


def world(tmp_path: Path) -> tuple[FakeRuntime, WorkloadSet]:
    spec = parse_spec(SPEC)
    folder = RunFolder(tmp_path / "run").make()
    write_spec(spec, folder)
    runtime = FakeRuntime(make_plan(spec.cluster.network, spec.cluster.nodes), new_prefix())
    runtime.create()
    cluster = KafkaCluster(runtime, spec.cluster, folder)
    workloads = WorkloadSet(runtime, folder, cluster, OLD, {"2.16.1": NEW})
    workloads.start(plan_workloads(spec, cluster))
    return runtime, workloads


def test_the_process_is_stopped_cleanly_and_started_again_on_the_new_client(tmp_path: Path) -> None:
    runtime, workloads = world(tmp_path)
    assert runtime.processes["workload/producer-az1-0"].argv[1] == "/venvs/1.9.2/bin/python"
    done = workloads.upgrade("producer-az1-0", "2.16.1")
    assert done["replacement"] == "producer-az1-0-u1" and done["client"]["confluent_kafka"] == "2.16.1"
    assert done["stop_ns"] <= done["stopped_ns"] <= done["started_ns"] and done["exit_status"] == 0
    old = runtime.processes["workload/producer-az1-0"]
    assert old.ended_by == "SIGTERM"  # its own way out: a producer flushes and closes
    new = runtime.processes["workload/producer-az1-0-u1"]
    assert new.argv[1] == "/venvs/2.16.1/bin/python"
    config = json.loads(workloads.folder.workload_config("producer-az1-0-u1").read_text())
    assert config["process"] == "producer-az1-0-u1" and config["value_prefix"] == "producer-az1-0-u1-"
    assert "producer-az1-0" not in workloads.running and "producer-az1-0-u1" in workloads.running
    member = workloads.upgrade("consumer-az1-0", "2.16.1")
    consumer = json.loads(workloads.folder.workload_config("consumer-az1-0-u1").read_text())
    assert member["replacement"] == "consumer-az1-0-u1" and consumer["group"] == "g"  # the same group, rejoined
    assert all(p.argv[1] != "/venvs/2.16.1/bin/python" for n, p in runtime.processes.items() if "observer" in n)


def test_the_run_looking_while_the_old_process_exits_sees_no_death(tmp_path: Path) -> None:
    """The nemesis's thread stops the process while the run's thread checks every workload is alive: between the
    process's exit and the upgrade's end, check_alive must not call the exit a death (stability campaign
    2026-11-28: "workload producer-az2-0 died mid-run" 0.01 s after upgrade-client's SIGTERM)."""
    _, workloads = world(tmp_path)
    stop_within = workloads.processes.stop_within
    looked = []

    def stop_then_look(timeouts: dict, signum: int = 15) -> list[str]:
        stuck = stop_within(timeouts, signum)
        workloads.check_alive()  # the run's thread, in between: must not raise WorkloadError
        looked.append(sorted(timeouts))
        return stuck

    workloads.processes.stop_within = stop_then_look  # type: ignore[method-assign]
    workloads.upgrade("producer-az1-0", "2.16.1")
    assert looked == [["workload/producer-az1-0"]] and not workloads.stopping
    workloads.check_alive()


def test_an_upgrade_it_cannot_do_is_a_fault_error(tmp_path: Path) -> None:
    _, workloads = world(tmp_path)
    with pytest.raises(FaultError, match="no client venv of confluent-kafka 2.2.0 was made for this run"):
        workloads.upgrade("producer-az1-0", "2.2.0")
    with pytest.raises(FaultError, match="producer-az9-0 is not a running producer or consumer"):
        workloads.upgrade("producer-az9-0", "2.16.1")


class Control:
    def upgrade(self, process: str, version: str) -> dict:
        return {"replacement": f"{process}-u1", "stopped_ns": 1, "client": {"confluent_kafka": version}}


def test_the_fault_asks_the_harness_and_journals_the_new_client() -> None:
    spec = parse_fault("f", {"fault": "upgrade-client", "process": "consumer-az2-0", "to_version": "2.16.1"})
    assert isinstance(fault_for(spec), UpgradeClient) and spec.options == {"to_version": "2.16.1"}
    env = type("Env", (), {"workloads": Control()})()
    injected = fault_for(spec).inject(spec, None, env, "up")  # type: ignore[arg-type]
    assert injected.targets == {"process": "consumer-az2-0", "replacement": "consumer-az2-0-u1",
                                "to_version": "2.16.1"}
    assert injected.detail == {"stopped_ns": 1, "client": {"confluent_kafka": "2.16.1"}}


@pytest.mark.parametrize(("change", "says"), [
    ({"to_version": "1.2.0"}, r"nemesis\[0\]\.to_version: faultline runs clients from 1\.9\.0 on"),
    ({"to_version": "two"}, r"nemesis\[0\]\.to_version: .*not a confluent-kafka version"),
    ({"process": "drain-az1-0"}, r"nemesis\[0\]\.process: 'drain-az1-0' is not a workload process fault upgrade-client"),
])
def test_bad_upgrade_specs_are_one_line(change: dict, says: str) -> None:
    raw = json.loads(json.dumps(SPEC))
    raw["nemesis"][0].update(change)
    with pytest.raises(SpecError, match=says):
        parse_spec(raw)


def test_the_upgrade_targets_are_listed_once() -> None:
    raw = json.loads(json.dumps(SPEC))
    raw["cluster"] = {"runtime": "docker"}  # docker puts the venvs into its client containers
    assert client_upgrades(parse_spec(raw).nemesis) == ["2.16.1"]  # two faults onto 2.16.1: one version
