"""The fault registry: a new kind of an existing category is its record and its logic, and nothing else.

The fixture registers `isolate-node` (a partition built from the existing `shapes.cut_hosts`) and the tests
show it validated, in the JSON Schema and docs/spec.md's fault table, in the report's words, dispatched to its
implementation, and refused on a runtime without the ability it needs, with no edit anywhere else.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from harness import spec_checks
from harness.spec_schema import reference_markdown
from nemesis import faults, shapes
from nemesis.fault_base import FaultEnv
from nemesis.fault_schema import schedule_schema
from nemesis.fault_spec import FaultSpec
from nemesis.registry import (
    FaultKind,
    Need,
    fault_for,
    fault_kind,
    fault_kinds,
    fault_names,
    journal_names,
    of_category,
    registered,
)
from nemesis.schedule import parse_schedule
from nemesis.spec import parse_fault
from nemesis.targets import ClusterFacts, PartitionFacts, Resolver
from report.faultwords import describe
from testbed.addressing import AddressPlan, make_plan
from testbed.errors import SpecError
from testbed.journal_names import POWER_CUT, STRAY_PRODUCE
from testbed.runtime.kinds import Ability, kind

PLAN = make_plan("198.18.2.0/24", 3)
FACTS = ClusterFacts(1, {0: PartitionFacts(0, (0, 1, 2))})


def isolate_node(spec: FaultSpec, resolver: Resolver, plan: AddressPlan) -> tuple[shapes.Grudge, dict[str, Any]]:
    """The logic: the target's node host cut from every other host (its AZ's clients included)."""
    node = resolver.node(spec.targets[0])
    return shapes.cut_hosts([node.name], shapes.all_hosts(plan) - {node.name}), {"node": node.name,
                                                                                "brokers": [node.broker_id]}


ISOLATE_NODE = FaultKind(
    "isolate-node", "partition", "cut the target's node host off from every other host",
    faults.PartitionFault(isolate_node), keys=("target", "scope"), required=("target",), single_target=True,
    needs=(Need(Ability.PAUSE),), words=lambda t: f"{t.get('node')} cut off from every other host")


@pytest.fixture
def isolate_node_kind() -> Iterator[FaultKind]:
    with registered(ISOLATE_NODE) as record:
        yield record


def test_a_new_kind_is_validated_by_its_record(isolate_node_kind: FaultKind) -> None:
    spec = parse_fault("n[0]", {"fault": "isolate-node", "target": "leader", "scope": "kafka"})
    assert (spec.category, spec.targets, spec.scope, spec.is_partition) == ("partition", ("leader",), "kafka", True)
    with pytest.raises(SpecError, match=r"^n\[0\]\.target: required for fault isolate-node$"):
        parse_fault("n[0]", {"fault": "isolate-node"})
    with pytest.raises(SpecError, match=r"^n\[0\]\.between: unknown key for fault isolate-node"):
        parse_fault("n[0]", {"fault": "isolate-node", "target": "leader", "between": ["az1", "az2"]})
    with pytest.raises(SpecError, match=r"n\[0\]\.target: \['leader', 'az2'\] is not a target"):
        parse_fault("n[0]", {"fault": "isolate-node", "target": ["leader", "az2"]})  # one target
    chaos = parse_schedule("nemesis", [{"random-chaos": {"until": 30, "faults": [{"fault": "isolate-node",
                                                                                   "target": "random"}]}}])
    assert [f.fault for _, f in chaos.faults()] == ["isolate-node"]
    assert "isolate-node" in of_category("partition") and isolate_node_kind in fault_kinds()


def test_a_new_kind_is_in_the_schema_and_the_docs_table(isolate_node_kind: FaultKind) -> None:
    starts = schedule_schema()["items"]["anyOf"]
    mine = [s for s in starts if s.get("properties", {}).get("fault") == {"const": "isolate-node"}]
    assert len(mine) == 1 and mine[0]["required"] == ["fault", "target", "at"]
    assert set(mine[0]["properties"]) == {"fault", "at", "name", "partition", "target", "scope"}
    assert ("| `isolate-node` | partition | `partition`, **`target`**, `scope` | cut the target's node host off "
            "from every other host |") in reference_markdown()


def test_a_new_kind_has_its_words_and_is_dispatched(isolate_node_kind: FaultKind) -> None:
    assert describe("isolate-node", {"node": "az2-node"}) == "az2-node cut off from every other host"
    spec = parse_fault("f", {"fault": "isolate-node", "target": "leader"})
    assert fault_for(spec) is isolate_node_kind.implementation
    added: list[tuple[str, Any, str]] = []
    firewall = SimpleNamespace(add=lambda key, grudge, scope: added.append((key, grudge, scope)) or ["az2-node"])
    env = FaultEnv(SimpleNamespace(plan=PLAN), firewall)  # type: ignore[arg-type]
    injected = fault_for(spec).inject(spec, Resolver(PLAN, random.Random(1), 0, lambda: FACTS), env, "iso")
    assert (injected.fault, injected.targets) == ("isolate-node", {"node": "az1-node", "brokers": [0],
                                                                     "scope": "all"})  # the leader's
    assert added[0][0] == "iso" and shapes.is_cut(added[0][1], "az1-node", "az2-node")
    assert "isolate-node" in journal_names()


def test_a_new_kind_is_refused_on_a_runtime_without_the_ability_it_needs(
        isolate_node_kind: FaultKind, monkeypatch: pytest.MonkeyPatch) -> None:
    schedule = parse_schedule("nemesis", [{"at": 1, "fault": "isolate-node", "target": "leader"}])
    spec_checks.check_runtime_can(schedule, "netns", True)  # netns can pause
    lacking = dataclasses.replace(kind("netns"), abilities=frozenset(set(Ability) - {Ability.PAUSE}))
    monkeypatch.setattr(spec_checks, "kind", lambda name: lacking)
    with pytest.raises(SpecError, match=r"nemesis\[0\]\.fault: isolate-node needs a runtime "
                                                               r"with pause; the netns runtime cannot"):
        spec_checks.check_runtime_can(schedule, "netns", True)


def test_the_registry_forgets_a_kind_after_its_block_and_refuses_a_taken_name() -> None:
    with registered(ISOLATE_NODE):
        assert "isolate-node" in fault_names()
    assert "isolate-node" not in fault_names()
    with pytest.raises(SpecError, match="unknown fault 'isolate-node'"):
        parse_fault("f", {"fault": "isolate-node", "target": "leader"})
    with pytest.raises(ValueError, match="already registered"), registered(dataclasses.replace(ISOLATE_NODE,
                                                                                                name="kill")):
        pass


def test_the_names_other_layers_journal_are_the_registrys() -> None:
    assert fault_kind("power-off").journal_names == ("power-off", POWER_CUT)
    assert STRAY_PRODUCE in fault_names() and fault_kind(STRAY_PRODUCE).category == "client"
    assert len(set(journal_names())) == len(journal_names())
