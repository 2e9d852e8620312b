"""`txn-coordinator:<process>` targets: only a transactional producer of the spec, said at validation (exit 3)."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml

from harness.spec import parse_spec
from harness.spec_targets import producer_names
from testbed.errors import SpecError

REPO = Path(__file__).resolve().parents[2]
SPEC = yaml.safe_load((REPO / "scenarios" / "txn-coordinator-az.yaml").read_text())


def with_target(target: str, transactional: bool = True) -> dict:
    raw = copy.deepcopy(SPEC)
    raw["nemesis"][0]["target"] = target
    if not transactional:
        group = raw["workloads"]["producers"][0]
        for key in ("transactional", "txn_size", "txn_abort_share", "transaction_timeout_ms"):
            group.pop(key)
    return raw


def test_the_scenario_targets_a_transactional_producer_in_every_configuration() -> None:
    for configuration in SPEC["configurations"]:
        spec = parse_spec(SPEC, configuration)
        assert spec.nemesis.items[0].fault.targets == ("txn-coordinator:producer-az1-0",)


@pytest.mark.parametrize(("target", "transactional", "says"), [
    ("txn-coordinator:producer-az2-1", True, "producer-az2-1 is not a producer of this spec (transactional "
     "producers: producer-az1-0, producer-az2-0, producer-az3-0)"),
    ("txn-coordinator:producer-az1-0", False, "producer-az1-0 is not transactional (transactional producers: none)"),
])
def test_a_coordinator_target_must_name_a_transactional_producer(target: str, transactional: bool, says: str) -> None:
    with pytest.raises(SpecError, match=r"^nemesis\[0\]\.fault: " + target + ": " + re.escape(says)):
        parse_spec(with_target(target, transactional))


def test_a_malformed_coordinator_target_is_not_a_target() -> None:
    with pytest.raises(SpecError, match=r"nemesis\[0\]\.target: 'txn-coordinator:az1' is not a target"):
        parse_spec(with_target("txn-coordinator:az1"))


def test_producer_names_count_per_az_over_groups_as_the_plan_does() -> None:
    raw = copy.deepcopy(SPEC)
    raw["workloads"]["producers"].append({"azs": ["az1"], "per_az": 2, "rate": 10})
    spec = parse_spec(raw)
    assert producer_names(spec.producers) == {"producer-az1-0": True, "producer-az2-0": True,
                                              "producer-az3-0": True, "producer-az1-1": False,
                                              "producer-az1-2": False}


def test_workload_faults_name_producers_of_the_spec() -> None:
    zombie = yaml.safe_load((REPO / "scenarios" / "zombie-fencing.yaml").read_text())
    parse_spec(zombie, "pause-replace-resume")
    raw = copy.deepcopy(zombie)
    raw["nemesis"][0]["process"] = "producer-az2-5"
    with pytest.raises(SpecError, match=r"^nemesis\[0\]\.process: producer-az2-5 is not a producer of this spec"):
        parse_spec(raw)
    raw = copy.deepcopy(zombie)
    raw["workloads"]["producers"].append({"azs": ["az1"], "rate": 10})
    raw["nemesis"][1]["process"] = "producer-az1-1"
    with pytest.raises(SpecError, match=r"^nemesis\[1\]\.process: producer-az1-1 is not transactional"):
        parse_spec(raw)


def test_fenced_is_a_transactional_key_carried_to_the_workload(tmp_path: Path) -> None:
    from harness.workloadset import plan_workloads
    from testbed.addressing import make_plan
    from testbed.kafka.cluster import KafkaCluster
    from testbed.runfolder import RunFolder
    from testbed.state import RunState
    from tests.fakes import FakeRuntime
    from workloads.config import ProducerConfig, config_to_json, parse_config

    zombie = yaml.safe_load((REPO / "scenarios" / "zombie-fencing.yaml").read_text())
    spec = parse_spec(zombie, "pause-replace-resume")
    state = RunState.create(tmp_path, "fl00beef", runtime="fake", settings=spec.cluster.to_json(), harness_pid=1)
    world = FakeRuntime(make_plan(spec.cluster.network, spec.cluster.nodes), "fl00beef", state)
    cluster = KafkaCluster(world, spec.cluster, RunFolder(tmp_path).make())
    producers = [w.config for w in plan_workloads(spec, cluster) if isinstance(w.config, ProducerConfig)]
    assert {p.fenced for p in producers} == {"exit"}
    assert parse_config(config_to_json(producers[0])).fenced == "exit"
    raw = copy.deepcopy(zombie)
    raw["workloads"]["producers"][0]["fenced"] = "retire"
    with pytest.raises(SpecError, match=r"workloads\.producers\[0\]\.fenced"):
        parse_spec(raw)
    plain = {"azs": ["az1"], "rate": 10, "fenced": "exit"}
    raw = copy.deepcopy(zombie)
    raw["workloads"]["producers"] = [plain]
    raw["nemesis"] = []
    with pytest.raises(SpecError, match=r"workloads\.producers\[0\]\.fenced: only for a transactional producer"):
        parse_spec(raw)
