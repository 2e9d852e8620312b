"""The ssh inventory: parsed into an address plan, every fault one line naming the file and the entry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from nemesis.shapes import firewall_rules, isolate_az
from testbed.errors import UsageError
from testbed.inventory import load_inventory
from testbed.runtime.base import FAULT_IN_CHAIN
from testbed.runtime.run_chains import restore_text


def hosts(n: int = 3) -> list[dict[str, Any]]:
    return [{"address": f"10.0.{i}.{11 if role == 'node' else 21}", "az": f"az{i}", "role": role}
            for i in range(1, n + 1) for role in ("node", "client")]


@pytest.fixture
def key(tmp_path: Path) -> Path:
    path = tmp_path / "id"
    path.write_text("not checked here\n")
    return path


def write(tmp_path: Path, key: Path, **changes: Any) -> Path:
    data: dict[str, Any] = {"control": "10.0.0.5", "user": "root", "key_file": key.name, "hosts": hosts()}
    data.update(changes)
    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_an_inventory_is_an_address_plan(tmp_path: Path, key: Path) -> None:
    inventory = load_inventory(write(tmp_path, key, port=2222, sudo=True))
    plan = inventory.plan(3)
    assert [h.name for h in plan.hosts] == ["az1-node", "az1-client", "az2-node", "az2-client", "az3-node",
                                            "az3-client"]
    assert plan.node_of_az("az2").address == "10.0.2.11" and plan.control == "10.0.0.5"
    entry = inventory.host("az3-client")
    assert (entry.port, entry.sudo, entry.key_file, entry.user) == (2222, True, str(key), "root")
    assert entry.ssh_address == entry.address == "10.0.3.21"


def test_fault_rules_go_to_the_runs_chains_with_the_control_address_exempt_first(tmp_path: Path, key: Path) -> None:
    plan = load_inventory(write(tmp_path, key)).plan(3)
    rules = firewall_rules(plan, [(isolate_az(plan, "az1"), "all")])["az1-node"]
    assert FAULT_IN_CHAIN in rules
    text = restore_text("fl0a1b2c", plan.control, rules).splitlines()
    assert text[:5] == ["*filter", ":fl0a1b2c-in - [0:0]", ":fl0a1b2c-out - [0:0]",
                        "-A fl0a1b2c-in -s 10.0.0.5/32 -j ACCEPT", "-A fl0a1b2c-out -d 10.0.0.5/32 -j ACCEPT"]
    assert text[-1] == "COMMIT" and "-A fl0a1b2c-in -s 10.0.2.11/32 -j DROP" in text
    assert not any("FAULTLINE" in line for line in text)


@pytest.mark.parametrize("changes, says", [
    ({"control": "nowhere"}, "control: 'nowhere' is not an IPv4 address"),
    ({"key_file": "missing-key"}, "hosts[0] (10.0.1.11): key_file"),
    ({"hosts": hosts() + [{"address": "10.0.1.11", "az": "az4", "role": "node"}]},
     "hosts[6] (10.0.1.11): address 10.0.1.11 is also hosts[0] (10.0.1.11)'s"),
    ({"hosts": hosts() + [{"address": "10.0.9.9", "az": "az1", "role": "node"}]},
     "hosts[6] (10.0.9.9): hosts[0] (10.0.1.11) is already the node of az1"),
    ({"hosts": [{"address": "10.0.1.11", "az": "zone-a", "role": "node"}]}, "az: 'zone-a' must be az1..az9"),
    ({"hosts": [{"address": "10.0.1.11", "az": "az1", "role": "broker"}]}, "role: 'broker' must be 'node'"),
    ({"hosts": [{"address": "10.0.1.11", "az": "az1", "role": "node", "colour": "red"}]}, "unknown key 'colour'"),
    ({"port": 70000}, "port: 70000 is not a TCP port"),
    ({"root": "/"}, "root: '/' must be an absolute directory other than /"),
])
def test_bad_inventories_are_one_line_naming_the_entry(tmp_path: Path, key: Path, changes: dict[str, Any],
                                                       says: str) -> None:
    path = write(tmp_path, key, **changes)
    with pytest.raises(UsageError) as caught:
        load_inventory(path)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"inventory {path}: ") and says in message, message


def test_a_missing_az_is_named_when_the_cluster_needs_it(tmp_path: Path, key: Path) -> None:
    inventory = load_inventory(write(tmp_path, key, hosts=hosts(2)))
    with pytest.raises(UsageError, match="the cluster needs 3 AZs .* no node host is in az3 .*az1, az2"):
        inventory.plan(3)
    assert [h.name for h in inventory.plan(2).hosts] == ["az1-node", "az1-client", "az2-node", "az2-client"]


def test_an_unreadable_inventory_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"^inventory .*nope.yaml: cannot read it"):
        load_inventory(tmp_path / "nope.yaml")
    (tmp_path / "bad.yaml").write_text("control: [\n")
    with pytest.raises(UsageError, match=r"^inventory .*bad.yaml:\d+: not valid YAML"):
        load_inventory(tmp_path / "bad.yaml")


def test_a_spec_with_an_inventory_runs_on_ssh_and_ssh_needs_one(tmp_path: Path, key: Path) -> None:
    from harness.spec import load_specs
    from testbed.errors import SpecError

    inventory = write(tmp_path, key)
    spec = {"name": "s", "duration_s": 5, "cluster": {"inventory": inventory.name},
            "workloads": {"producers": [{"azs": ["az1"]}]}}
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    (cluster,) = [s.cluster for s in load_specs(tmp_path / "spec.yaml")]
    assert cluster.runtime == "ssh" and cluster.inventory == str(inventory) and cluster.known_hosts is None
    (other,) = load_specs(tmp_path / "spec.yaml", known_hosts=Path("kh"))
    assert other.cluster.known_hosts == str(Path("kh").absolute())
    del spec["cluster"]
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    with pytest.raises(SpecError, match="cluster.inventory: the ssh runtime needs an inventory"):
        load_specs(tmp_path / "spec.yaml", runtime="ssh")
    (cluster,) = [s.cluster for s in load_specs(tmp_path / "spec.yaml", inventory=inventory)]
    assert cluster.runtime == "ssh" and cluster.inventory == str(inventory)
