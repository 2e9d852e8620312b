"""Consumer groups against the rest of the spec (harness.spec_groups): group protocols and assignors, the broker
version, and the faults that name a group or a consumer; each refusal one line naming the key (exit 3)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.spec import parse_spec
from harness.spec_groups import consumer_names
from testbed.errors import SpecError
from tests.conftest import REPO, faultline

ZOMBIE = yaml.safe_load((REPO / "scenarios" / "zombie-consumer.yaml").read_text())
FAILOVER = yaml.safe_load((REPO / "scenarios" / "coordinator-failover.yaml").read_text())


def spec_with(settings: dict[str, Any], kafka_version: str | None = None, **consumer: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {"name": "t", "workloads": {"producers": [{"azs": ["az1"]}], "consumers": [
        {"mode": "group", "group": "g", "settings": settings, **consumer}]}}
    if kafka_version:
        raw["cluster"] = {"kafka_version": kafka_version}
    return raw


BAD = [
    ({"group.protocol": "eager"}, None, "workloads.consumers[0].settings.group.protocol: 'eager' is not one of "
     "classic, consumer"),
    ({"partition.assignment.strategy": "sticky"}, None, "workloads.consumers[0].settings.partition.assignment."
     "strategy: 'sticky' is not one of range, roundrobin, cooperative-sticky"),
    ({"partition.assignment.strategy": "range,bogus"}, None, "workloads.consumers[0].settings.partition.assignment."
     "strategy: 'bogus' is not one of"),
    ({"group.protocol": "consumer", "partition.assignment.strategy": "range"}, "4.0.0",
     "workloads.consumers[0].settings.partition.assignment.strategy: group.protocol consumer (KIP-848) assigns "
     "partitions on the broker"),
    ({"group.protocol": "consumer"}, "3.7.2", "workloads.consumers[0].settings.group.protocol: consumer (KIP-848) "
     "needs Kafka 4.0 or later; this spec runs Kafka 3.7.2"),
]


@pytest.mark.parametrize("settings, version, says", BAD)
def test_bad_group_protocols_name_the_key(settings: dict[str, Any], version: str | None, says: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_spec(spec_with(settings, version))
    assert str(err.value).startswith(says), err.value


@pytest.mark.parametrize("settings, version", [
    ({"group.protocol": "consumer"}, "4.0.0"),
    ({"group.protocol": "classic", "partition.assignment.strategy": "cooperative-sticky"}, None),
    ({"partition.assignment.strategy": "range,roundrobin"}, None),
])
def test_good_group_protocols_pass(settings: dict[str, Any], version: str | None) -> None:
    assert parse_spec(spec_with(settings, version)).consumers[0].settings == settings


def test_an_assign_consumer_is_not_judged_by_group_protocol_rules() -> None:
    raw = spec_with({}, None)
    raw["workloads"]["consumers"][0] = {"mode": "assign"}
    assert parse_spec(raw).consumers[0].mode == "assign"


def test_the_scenarios_name_their_group_and_consumer_in_every_configuration() -> None:
    for configuration in ZOMBIE["configurations"]:
        spec = parse_spec(ZOMBIE, configuration)
        assert spec.nemesis.items[0].fault.targets == ("consumer-az1-0",)
    protocols = {c: (s.consumers[0].settings.get("group.protocol", "classic"),
                     s.consumers[0].settings.get("partition.assignment.strategy"), s.cluster.kafka_version)
                 for c in ZOMBIE["configurations"] for s in [parse_spec(ZOMBIE, c)]}
    assert protocols == {"eager": ("classic", "range", "2.7.2"),
                         "cooperative": ("classic", "cooperative-sticky", "2.7.2"),
                         "consumer-protocol": ("consumer", None, "4.1.1")}
    faults = {c: parse_spec(FAILOVER, c).nemesis.items[0].fault for c in FAILOVER["configurations"]}
    assert {c: (f.fault, f.targets) for c, f in faults.items()} == {
        "kill": ("kill", ("group-coordinator:failover",)),
        "isolate-az": ("isolate-az", ("group-coordinator:failover",)),
        "power-off": ("power-off", ("group-coordinator:failover",)),
        "offsets-rf1-power-cut": ("power-off", ("group-coordinator:failover",))}
    rf1 = parse_spec(FAILOVER, "offsets-rf1-power-cut")
    assert rf1.cluster.broker_overrides["offsets.topic.replication.factor"] == "1"
    assert len(rf1.nemesis.items) == 1  # no stop: powered off to the end of the run, the heal powers it on


def test_a_group_coordinator_target_must_name_a_group_of_the_spec() -> None:
    raw = copy.deepcopy(FAILOVER)
    raw["nemesis"][0]["target"] = "group-coordinator:nobody"
    with pytest.raises(SpecError, match=r"^nemesis\[0\]\.target: group-coordinator:nobody: nobody is not a "
                                        r"consumer group of this spec \(groups: failover\)$"):
        parse_spec(raw)


@pytest.mark.parametrize("process, change, says", [
    ("consumer-az2-1", None, r"consumer-az2-1 is not a consumer of this spec \(consumers: consumer-az1-0, "
     r"consumer-az2-0, consumer-az3-0\)"),
    ("consumer-az1-0", {"kill_every_s": 5}, "consumer-az1-0 is killed on schedule"),
])
def test_pause_workload_must_name_a_consumer_it_can_stop(process: str, change: dict[str, Any] | None,
                                                         says: str) -> None:
    raw = copy.deepcopy(ZOMBIE)
    raw["nemesis"][0]["process"] = process
    raw["workloads"]["consumers"][0].update(change or {})
    with pytest.raises(SpecError, match=r"^nemesis\[0\]\.process: " + says):
        parse_spec(raw)


def test_consumer_names_count_per_az_over_groups_as_the_plan_does() -> None:
    raw = copy.deepcopy(ZOMBIE)
    raw["workloads"]["consumers"].append({"azs": ["az1"], "per_az": 2, "mode": "assign"})
    names = consumer_names(parse_spec(raw).consumers)
    assert list(names) == ["consumer-az1-0", "consumer-az2-0", "consumer-az3-0", "consumer-az1-1", "consumer-az1-2"]
    assert names["consumer-az1-2"].mode == "assign" and names["consumer-az1-0"].group == "zombie"


def test_a_consumer_protocol_on_an_old_kafka_stops_the_cli_in_one_line(tmp_path: Path) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text(yaml.safe_dump(spec_with({"group.protocol": "consumer"}, "3.7.2")))
    proc = faultline("run", str(spec), "--results", str(tmp_path / "results"), timeout=60)
    assert proc.returncode == 3, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "settings.group.protocol: consumer (KIP-848) needs Kafka 4.0" in lines[0]
    assert not (tmp_path / "results").exists()
