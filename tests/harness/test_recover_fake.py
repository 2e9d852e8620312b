"""`recover` on the fake runtime: finishing the run a dead harness left, from its run folder alone."""

from __future__ import annotations

import json
from pathlib import Path
from signal import SIGCONT
from typing import Any

import pandas as pd
import pytest

from checkers.schema import TABLES
from harness.recover import recover
from harness.run import write_spec
from harness.spec import Spec, parse_spec
from harness.workloadset import WorkloadSet, plan_workloads
from nemesis.journal import read_journal
from nemesis.nemesis import Nemesis
from testbed.addressing import AddressPlan, Host, make_plan
from testbed.errors import WorkloadError
from testbed.kafka.cluster import KafkaCluster
from testbed.kafka.config import ClusterSettings
from testbed.kafka.wire import BrokerView
from testbed.machine import Machine
from testbed.runfolder import RunFolder
from testbed.runtime.base import Runtime, new_prefix
from testbed.state import RunState, claim_active
from tests.fakes import FakeRuntime, FakeTopic, exits_by_itself, workload_behaviours

SPEC: dict[str, Any] = {
    "name": "fake-recover", "seed": 5, "duration_s": 30, "settle_timeout_s": 1, "drain_timeout_s": 1,
    "checker": "pandas",
    "workloads": {"producers": [{"azs": ["az1"], "rate": 10}], "consumers": [{"azs": ["az3"]}]},
    "nemesis": [{"at": 5, "fault": "isolate-az", "target": "az2", "name": "iso"}],
}


def dead_harness_run(run_dir: Path, spec: Spec, active_file: Path) -> FakeRuntime:
    """What a harness killed mid-run leaves: its run folder, and hosts with its processes and faults."""
    folder = RunFolder(run_dir).make()
    write_spec(spec, folder)
    prefix = new_prefix()
    state = RunState.create(run_dir, prefix, runtime="fake", settings=spec.cluster.to_json(), harness_pid=4242)
    claim_active(run_dir, prefix, active_file)
    world = FakeRuntime(make_plan(spec.cluster.network, spec.cluster.nodes), prefix, state,
                        scripts={"workload/drain-": exits_by_itself(0)}, behaviours=workload_behaviours(FakeTopic()))
    world.create()
    cluster = KafkaCluster(world, spec.cluster, folder)
    cluster.write_configs()
    cluster.power_on_all()
    WorkloadSet(world, folder, cluster).start(plan_workloads(spec, cluster))
    dead = Nemesis(cluster, world, folder.nemesis_journal, spec.seed)
    dead.start({"fault": "isolate-az", "target": "az2"}, name="iso")
    dead.start({"fault": "pause", "target": "az3"}, name="pause")
    dead.start({"fault": "kill", "target": "az1"}, name="kill")
    dead.close()  # the harness dies here: none of them is stopped, nothing is healed
    return world


class SettledCluster(KafkaCluster):
    """The real cluster object, settled at once as a healthy cluster would be; the brokers' views of it (the live
    state the nemesis reads to resolve targets) must not be needed; the brokers it asks ZooKeeper about are noted
    (`unregistered`: ZooKeeper has let each go)."""

    unregistered: list[str]

    def settled(self) -> dict[str, BrokerView] | None:
        return {}

    def views(self) -> dict[str, BrokerView | None]:
        raise AssertionError("recover's heal must not need the cluster's live state")

    def registered(self, node: Host) -> bool:
        self.unregistered.append(node.name)
        return False


@pytest.fixture
def machine(tmp_path: Path) -> dict[str, Any]:
    """The factory gives back the dead harness's hosts (as the netns runtime finds them by prefix)."""
    found: dict[str, Any] = {"unregistered": [], "replica_checks": 0}

    def make_runtime(kind: str, prefix: str, plan: AddressPlan, state: RunState) -> FakeRuntime:
        world = found["world"]
        assert (kind, prefix, plan) == ("fake", world.prefix, world.plan), "built from the state file"
        world.state = state
        return world

    def replicas(folder: RunFolder, topic: str, kafka_version: str, final: Any = None) -> dict[str, Any]:
        found["replica_checks"] += 1
        return {"topic": topic, "partitions": [], "agree": True}

    def make_cluster(runtime: Runtime, settings: ClusterSettings, folder: RunFolder) -> SettledCluster:
        cluster = SettledCluster(runtime, settings, folder)
        cluster.unregistered = found["unregistered"]
        return cluster

    found["active"] = tmp_path / "active.json"
    found["machine"] = Machine(make_runtime=make_runtime, make_cluster=make_cluster, dump_replicas=replicas,
                               active_file=found["active"])
    return found


def test_recover_heals_drains_tears_down_and_judges_the_dead_harnesss_run(
        machine: dict[str, Any], tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    world = machine["world"] = dead_harness_run(run_dir, parse_spec(SPEC), machine["active"])
    folder = RunFolder(run_dir)
    paused = world.process("az3-node/broker")
    producer = world.process("workload/producer-az1-0")
    assert paused is not None and paused.paused() and producer is not None

    outcome = recover(run_dir, engine="pandas", machine=machine["machine"])

    # The nemesis journal stays one the history reads: every row's targets and detail are JSON objects.
    for line in folder.nemesis_journal.read_text().splitlines():
        row = json.loads(line)
        assert isinstance(json.loads(row["detail"]), dict) and isinstance(json.loads(row["targets"]), dict)
    rows = read_journal(folder.nemesis_journal)
    assert [(r["type"], r["fault"]) for r in rows] == [
        ("start", "isolate-az"), ("start", "pause"), ("start", "kill"), ("info", "heal-all"),
        ("stop", "isolate-az"), ("stop", "pause"), ("stop", "kill")]
    # Each of the dead harness's faults ends where recover healed it, not at the end of the run.
    assert [(r["detail"]["name"], r["detail"]["by"]) for r in rows[4:]] == [
        ("iso", "recover"), ("pause", "recover"), ("kill", "recover")]
    assert [r["targets"] for r in rows[4:]] == [r["targets"] for r in rows[:3]]
    heal = rows[3]
    assert heal["detail"]["by"] == "recover"
    assert heal["targets"] == {"resumed": ["az3-node/broker"], "restarted": ["az1-node/broker"]}
    assert world.cleared_last() == sorted(h.name for h in world.plan.hosts)
    assert SIGCONT in [s for s, _ in paused.signals]
    assert machine["unregistered"] == ["az1-node"], "the killed broker waited for ZooKeeper to let it go"

    # Its clients were stopped gracefully (so they journal their end), a fresh drain read the log.
    assert producer.ended_by == "SIGTERM"
    assert world.processes["workload/consumer-az3-0"].ended_by == "SIGTERM"
    for table in TABLES:
        assert folder.table(table).exists(), table
    reads = pd.read_parquet(folder.table("reads"))
    assert sorted(reads.loc[reads["phase"] == "final", "process"].unique()) == [
        "drain-az1-recover", "drain-az2-recover", "drain-az3-recover"]
    assert outcome.verdict["valid"] is True and outcome.status == 0, outcome.verdict
    assert len(pd.read_parquet(folder.table("writes"))) == 3
    assert machine["replica_checks"] == 1
    assert len(pd.read_parquet(folder.table("nemesis"))) == 7

    # And nothing is left: hosts gone, every process dead, the machine's cluster record released.
    assert world.destroyed == 1 and not world.exists() and world.alive() == []
    assert not machine["active"].exists()


def test_recover_without_hosts_judges_the_journals_alone(machine: dict[str, Any], tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    world = machine["world"] = dead_harness_run(run_dir, parse_spec(SPEC), machine["active"])
    world.destroy()  # the machine was rebooted: the run folder is all there is
    before = RunFolder(run_dir).nemesis_journal.read_text()

    outcome = recover(run_dir, engine="pandas", machine=machine["machine"])

    assert outcome.verdict["valid"] == "unknown" and outcome.status == 2
    assert "already gone" in outcome.verdict["reason"]
    assert RunFolder(run_dir).table("writes").exists()
    assert RunFolder(run_dir).nemesis_journal.read_text() == before, "nothing to heal, nothing journaled"
    assert world.created == 1 and world.firewall_calls[-1][0] == "set", "no host was touched"


def test_a_recover_that_fails_in_its_drain_leaves_the_cluster_up_and_a_second_one_finishes(
        machine: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_dir = tmp_path / "run"
    world = machine["world"] = dead_harness_run(run_dir, parse_spec(SPEC), machine["active"])
    world.scripts["workload/drain-az2-recover"] = exits_by_itself(1)  # as a drain refusing its config does
    folder = RunFolder(run_dir)

    with pytest.raises(WorkloadError, match="drain-az2-recover exited with status 1"):
        recover(run_dir, engine="pandas", machine=machine["machine"])

    # Healed, its clients stopped, but the cluster is as the dead harness left it otherwise: up, and the machine's.
    assert world.exists() and world.destroyed == 0
    assert all(world.processes[f"az{i}-node/{role}"].alive() for i in (1, 2, 3) for role in ("zookeeper", "broker"))
    assert world.processes["workload/producer-az1-0"].ended_by == "SIGTERM"
    assert [p for p in world.alive() if "drain" in p] == [], "its own drains were stopped"
    assert machine["active"].exists()
    assert not folder.verdict.exists()

    del world.scripts["workload/drain-az2-recover"]
    monkeypatch.chdir(tmp_path)
    outcome = recover(Path("run"), engine="pandas", machine=machine["machine"])  # a relative path, as a user types it

    assert outcome.verdict["valid"] is True and outcome.status == 0, outcome.verdict
    assert outcome.run_dir == run_dir
    reads = pd.read_parquet(folder.table("reads"))
    assert {"drain-az1-recover2", "drain-az2-recover2", "drain-az3-recover2"} <= set(
        reads.loc[reads["phase"] == "final", "process"]), "the second attempt's drains have names of their own"
    assert all(Path(json.loads(folder.workload_config(f"drain-az{i}-recover2").read_text())["journal"]).is_absolute()
               for i in (1, 2, 3))
    assert world.destroyed == 1 and not world.exists() and world.alive() == []
    assert not machine["active"].exists()


def test_a_recovered_configuration_is_held_to_its_own_expectations(tmp_path: Path) -> None:
    """The run folder's spec.yaml keeps the configuration's `expect`, so `recover` judges by it, not the top's."""
    from harness.recover import load_run_spec

    raw = {**SPEC, "expect": {"absent": ["lost"]},
           "configurations": {"own": {"expect": {"present": ["lost"], "valid": False}}, "inherits": {}}}
    for name, want in (("own", parse_spec(raw, "own").expect), ("inherits", parse_spec(raw, None).expect)):
        folder = RunFolder(tmp_path / name).make()
        write_spec(parse_spec(raw, name), folder)
        recovered = load_run_spec(folder)
        assert (recovered.configuration, recovered.expect) == (name, want)
    assert parse_spec(raw, "own").expect.present == ("lost",)
