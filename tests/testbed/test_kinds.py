"""One record per runtime kind: its facts agree with its classes, and the code above the runtime reads them."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from harness.spec import parse_spec
from report.hosts import host_notes
from testbed.errors import SpecError, UsageError
from testbed.kafka.config import ClusterSettings
from testbed.runtime import kinds
from testbed.runtime.kinds import (
    DEFAULT_KIND,
    INVENTORY_KIND,
    KIND_NAMES,
    KINDS,
    Ability,
    default_kind,
    default_network,
    implemented_abilities,
    inventory_kind,
    kind,
)
from tests.conftest import REPO

SPEC: dict[str, Any] = {"name": "s", "duration_s": 5, "workloads": {"producers": [{"azs": ["az1"]}]},
                        "nemesis": [{"at": 2, "fault": "slow-link", "target": "az1", "delay_ms": 200}]}


def test_the_kinds_and_the_default() -> None:
    assert KIND_NAMES == ("netns", "docker", "ssh", "docker-existing")
    assert DEFAULT_KIND in KIND_NAMES and ClusterSettings().runtime == DEFAULT_KIND
    assert [kind(name).name for name in KIND_NAMES] == list(KIND_NAMES)


@pytest.mark.parametrize("name", ["bogus", "", "SSH"])
def test_an_unknown_kind_is_one_line_naming_the_known_ones(name: str) -> None:
    with pytest.raises(UsageError) as exc:
        kind(name)
    assert str(exc.value) == f"runtime {name!r} does not exist (known: netns, docker, ssh, docker-existing)"


@pytest.mark.parametrize("record", KINDS, ids=lambda k: k.name)
def test_a_kinds_abilities_are_the_protocols_its_classes_implement(record: kinds.RuntimeKind) -> None:
    assert record.abilities == implemented_abilities(record)
    assert record.runtime_class().kind == record.name  # what state.json records is the record's name


def test_the_abilities_as_the_runtimes_have_them() -> None:
    assert kind("netns").abilities == frozenset(Ability)
    for name in ("docker", "ssh"):
        assert kind(name).can(Ability.POWER_CUT) and kind(name).can(Ability.PAUSE)
    assert kinds.can(Ability.LOSE_UNSYNCED) == ("netns", "docker", "ssh")  # ssh: per host, checked at preflight
    assert kinds.can(Ability.SHAPE_LINKS) == ("netns", "docker", "ssh")


def test_a_kind_that_keeps_the_page_cache_says_so_after_a_power_off() -> None:
    for record in KINDS:
        assert record.power_off_note is None or "page cache survives" in record.power_off_note
        assert record.power_note({}) == record.power_off_note, record.name
    assert kind("netns").power_off_note is None and kind("docker").power_off_note is None
    ssh = kind("ssh")  # per node host, from state.json: only hosts whose power-off kept their page cache
    power = {"az1-node": "unsyncfs", "az2-node": "command", "az3-node": "processes"}
    note = ssh.power_note({"ssh": {"power": power}})
    assert note is not None and note.startswith("az3-node: ") and "page cache survives" in note
    assert ssh.power_note({"ssh": {"power": {**power, "az3-node": "unsyncfs"}}}) is None
    hosts = ssh.hosts_note({"ssh": {"inventory": "/i.yaml", "host_keys": "tofu", "power": power}})
    assert hosts is not None and "power-off per node host: az1-node unsyncfs, az2-node command, az3-node processes" \
        in hosts


def test_two_kinds_take_their_hosts_from_an_inventory_and_the_others_from_a_network(tmp_path: Path) -> None:
    assert [k.name for k in KINDS if k.needs_inventory] == [INVENTORY_KIND, "docker-existing"] == \
        ["ssh", "docker-existing"]
    (tmp_path / "ssh.yaml").write_text("control: 10.0.0.5\nhosts: []\n")
    (tmp_path / "docker.yaml").write_text("nodes: [{az: az1, broker: kafka-1}]\n")
    assert inventory_kind(tmp_path / "ssh.yaml") == "ssh" and inventory_kind(tmp_path / "docker.yaml") == \
        "docker-existing"
    assert all((k.network is None) == k.needs_inventory for k in KINDS)
    assert default_kind(inventory=True) == "ssh" and default_kind(inventory=False) == DEFAULT_KIND
    assert default_network("netns") == "198.18.0.0/24" == ClusterSettings().network
    assert default_network("docker") == "198.19.0.0/24"
    assert default_network("ssh") == default_network(DEFAULT_KIND)  # named in its settings, laid out nowhere
    assert kinds.networks_text() == "netns 198.18.0.0/24, docker 198.19.0.0/24"


def test_the_address_plan_comes_from_the_network_or_the_inventory(tmp_path: Path) -> None:
    plan = kind("docker").address_plan("198.19.0.0/24", 3, None)
    assert plan.network == "198.19.0.0/24" and len(plan.nodes) == 3
    with pytest.raises(UsageError, match=r"^the ssh runtime needs an inventory \(--inventory FILE or "
                                         r"cluster.inventory\)$"):
        kind("ssh").address_plan("198.18.0.0/24", 3, None)
    with pytest.raises(UsageError, match=r"^the ssh runtime needs an inventory"):
        kind("ssh").preflight(plan, "2.7.2")
    (tmp_path / "id").write_text("not read here\n")
    hosts = [{"address": f"10.0.{i}.{11 if role == 'node' else 21}", "az": f"az{i}", "role": role}
             for i in (1, 2, 3) for role in ("node", "client")]
    (tmp_path / "inventory.yaml").write_text(yaml.safe_dump({"control": "10.0.0.5", "key_file": "id",
                                                             "hosts": hosts}))
    plan = kind("ssh").address_plan("198.18.0.0/24", 3, str(tmp_path / "inventory.yaml"))
    assert [n.address for n in plan.nodes] == ["10.0.1.11", "10.0.2.11", "10.0.3.11"]


def test_the_report_prints_the_kinds_caveats(tmp_path: Path) -> None:
    (tmp_path / "state.json").write_text('{"runtime": "ssh", "ssh": {"inventory": "/i.yaml", "host_keys": "tofu"}}')
    notes = host_notes(tmp_path, pd.DataFrame({"fault": ["power-off"]}))
    assert notes == ["hosts: ssh, from the inventory /i.yaml; host keys tofu", kind("ssh").power_off_note]  # before
    # the kinds of power-off were recorded: the page cache's caveat
    (tmp_path / "state.json").write_text('{"runtime": "bogus"}')
    assert host_notes(tmp_path, pd.DataFrame({"fault": ["power-off"]})) == []


def test_the_spec_refuses_what_the_record_says_the_runtime_cannot(monkeypatch: pytest.MonkeyPatch) -> None:
    on_docker = {**SPEC, "cluster": {"runtime": "docker"}}
    assert parse_spec(on_docker).nemesis.items
    cannot = dataclasses.replace(kind("docker"), abilities=kind("docker").abilities - {Ability.SHAPE_LINKS})
    monkeypatch.setitem(kinds._BY_NAME, "docker", cannot)
    with pytest.raises(SpecError, match=r"slow-link needs a runtime that can delay and throttle links; the docker "
                                        r"runtime cannot \(use --runtime netns"):
        parse_spec(on_docker)  # the record says it cannot: the spec refuses it


def test_the_spec_asks_the_record_which_kind_needs_an_inventory() -> None:
    with pytest.raises(SpecError, match=r"^cluster.inventory: the ssh runtime needs an inventory \(--inventory "
                                        r"FILE\), and only it uses one$"):
        parse_spec({**SPEC, "cluster": {"runtime": "ssh"}, "nemesis": []})
    with pytest.raises(SpecError, match=r"^cluster.inventory: an inventory names ssh hosts, but the runtime is "
                                        r"docker$"):
        parse_spec({**SPEC, "cluster": {"runtime": "docker", "inventory": "x.yaml"}, "nemesis": []})
    assert parse_spec({**SPEC, "cluster": {"runtime": "docker"}, "nemesis": []}).cluster.network == "198.19.0.0/24"


def test_the_kinds_and_the_docker_range_use_the_address_plan_modules_networks() -> None:
    from testbed import addressing
    from testbed.runtime import docker_api

    assert kind("netns").network == addressing.DEFAULT_NETWORK and kind("docker").network == addressing.DOCKER_NETWORK
    assert str(docker_api.NETWORK_RANGE) == addressing.DOCKER_NETWORK
    source = "\n".join(p.read_text() for p in (REPO / "testbed" / "runtime").glob("*.py"))
    assert f'"{addressing.DEFAULT_NETWORK}"' not in source and f'"{addressing.DOCKER_NETWORK}"' not in source
