"""Group faults as data: `group-coordinator:<group>` resolved by FindCoordinator when the fault fires, and a
`pause-workload` that may name a consumer (pure: the coordinator lookup is handed in)."""

from __future__ import annotations

import random

import pytest

from nemesis.fault_schema import fault_schema
from nemesis.registry import fault_kind
from nemesis.spec import parse_fault
from nemesis.targets import Resolver
from testbed.addressing import make_plan
from testbed.errors import FaultError, SpecError
from testbed.kafka.wire import GROUP_KEY, TRANSACTION_KEY, _find_coordinator_request

PLAN = make_plan("198.18.2.0/24", 3)


def test_group_coordinator_names_the_coordinators_broker_found_once_apart_from_transactions() -> None:
    asked: list[str] = []

    def find_group(group: str) -> int | None:
        asked.append(group)
        return {"alo": 1}.get(group)

    r = Resolver(PLAN, random.Random(1), 0, None, lambda process: 2, find_group)
    assert r.node("group-coordinator:alo").name == "az2-node"
    assert r.az("group-coordinator:alo") == "az2"
    assert asked == ["alo"] and r.group_coordinators == {"alo": 1}
    assert r.coordinators == {} and r.facts is None  # neither a transaction coordinator nor the partitions' state
    assert r.node("txn-coordinator:producer-az1-0").name == "az3-node"  # the other finder, for the other key
    with pytest.raises(FaultError, match="group-coordinator:other: no broker names a coordinator"):
        r.node("group-coordinator:other")
    with pytest.raises(FaultError, match="no way to find it"):
        Resolver(PLAN, random.Random(1), 0, None, lambda process: 2).node("group-coordinator:alo")


def test_find_coordinator_asks_with_the_group_key_type() -> None:
    group, txn = (_find_coordinator_request("alo", kind, 1) for kind in (GROUP_KEY, TRANSACTION_KEY))
    assert group[-1] == 0 and txn[-1] == 1 and group[-4:-1] == b"alo"  # key, then key_type: 0 names a group


@pytest.mark.parametrize("fault", ["kill", "power-off", "isolate-az"])
def test_group_coordinator_is_a_target_of_kill_power_off_and_isolate_az(fault: str) -> None:
    spec = parse_fault("f", {"fault": fault, "target": "group-coordinator:faultline-g0"})
    assert spec.targets == ("group-coordinator:faultline-g0",)


def test_a_malformed_group_coordinator_is_not_a_target() -> None:
    with pytest.raises(SpecError, match=r"^f\.target: 'group-coordinator:' is not a target.*group-coordinator:<group>"):
        parse_fault("f", {"fault": "kill", "target": "group-coordinator:"})


def test_pause_workload_takes_a_consumer_and_the_other_workload_faults_do_not() -> None:
    assert parse_fault("f", {"fault": "pause-workload", "process": "consumer-az2-0"}).targets == ("consumer-az2-0",)
    assert fault_kind("pause-workload").processes == ("producer", "consumer")
    with pytest.raises(SpecError, match=r"^f\.process: 'consumer-az1-0' is not a workload process fault "
                                        r"replace-workload takes; expected a producer such as producer-az1-0$"):
        parse_fault("f", {"fault": "replace-workload", "process": "consumer-az1-0"})
    with pytest.raises(SpecError, match="expected a producer such as producer-az1-0 or a consumer such as"):
        parse_fault("f", {"fault": "pause-workload", "process": "drain-az1"})


def test_the_schema_of_process_follows_the_kinds_roles() -> None:
    import re
    paused = fault_schema("pause-workload")["properties"]["process"]["pattern"]
    replaced = fault_schema("replace-workload")["properties"]["process"]["pattern"]
    assert re.match(paused, "consumer-az1-0") and re.match(paused, "producer-az1-0")
    assert re.match(replaced, "producer-az1-0") and not re.match(replaced, "consumer-az1-0")
