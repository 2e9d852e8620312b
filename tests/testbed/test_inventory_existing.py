"""An inventory with `provision: false`: a cluster of the user's, its commands and ports, and the rules that cut only
those ports; every fault one line naming the file and the entry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from nemesis.shapes import firewall_rules, isolate_az
from testbed.errors import UsageError
from testbed.existing_spec import DEFAULT_PORTS
from testbed.inventory import load_inventory

KILL = {"kill": "systemctl kill -s KILL kafka", "start": "systemctl start kafka"}


def hosts(commands: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    out = []
    for i in (1, 2, 3):
        node: dict[str, Any] = {"address": f"10.0.{i}.11", "az": f"az{i}", "role": "node"}
        if commands is not None:
            node["commands"] = commands
        out += [node, {"address": f"10.0.{i}.21", "az": f"az{i}", "role": "client"}]
    return out


def write(tmp_path: Path, **changes: Any) -> Path:
    (tmp_path / "id").write_text("not checked here\n")
    data: dict[str, Any] = {"control": "10.0.0.5", "key_file": "id", "provision": False, "hosts": hosts()}
    data.update(changes)
    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_cluster_of_yours_names_its_commands_and_its_ports_and_cuts_only_those(tmp_path: Path) -> None:
    inventory = load_inventory(write(tmp_path, ports=[9092, 2181], hosts=hosts({"broker": KILL})))
    assert inventory.provision is False and inventory.ports == (2181, 9092)
    node = inventory.host("az2-node")
    assert node.command("broker", "kill") == KILL["kill"] and node.command("broker", "pause") is None
    assert node.command("zookeeper", "kill") is None
    plan = inventory.plan(3)
    assert plan.cut_ports == ("2181", "9092")
    rules = firewall_rules(plan, [(isolate_az(plan, "az1"), "all")])["az1-node"].splitlines()
    # every rule names one of the cluster's ports: ssh, or anything else between the hosts, is never cut
    assert rules and all(" -p tcp --" in r and r.split()[-3] in ("2181", "9092") for r in rules), rules
    assert "-A FAULTLINE-IN -s 10.0.2.11/32 -p tcp --dport 9092 -j DROP" in rules
    assert "-A FAULTLINE-OUT -d 10.0.3.21/32 -p tcp --sport 2181 -j DROP" in rules
    kafka = firewall_rules(plan, [(isolate_az(plan, "az1"), "kafka")])["az1-node"]
    assert "2181" not in kafka and "--dport 9092" in kafka  # a scope keeps its own ports


def test_without_ports_a_cluster_of_yours_is_cut_on_kafkas_and_zookeepers_and_a_made_one_on_every_packet(
        tmp_path: Path) -> None:
    assert load_inventory(write(tmp_path)).plan(3).cut_ports == tuple(str(p) for p in sorted(DEFAULT_PORTS))
    made = load_inventory(write(tmp_path, provision=True))
    assert made.provision and made.plan(3).cut_ports == ()
    rules = firewall_rules(made.plan(3), [(isolate_az(made.plan(3), "az1"), "all")])["az1-node"]
    assert "-A FAULTLINE-IN -s 10.0.2.11/32 -j DROP" in rules.splitlines()


@pytest.mark.parametrize(("changes", "says"), [
    ({"provision": "no"}, r"provision: 'no' must be true \(faultline makes the cluster\) or false \(yours\)"),
    ({"provision": True, "ports": [9092]}, r"ports: only with provision: false"),
    ({"provision": True, "hosts": hosts({"broker": KILL})},
     r"hosts\[0\] \(10.0.1.11\): commands: only with provision: false"),
    ({"ports": [9092, 70000]}, r"ports: 70000 is not a TCP port"),
    ({"ports": []}, r"ports: \[\] must be a non-empty list of TCP ports"),
    ({"hosts": hosts({"kafka": KILL})}, r"hosts\[0\] \(10.0.1.11\): commands: unknown role 'kafka' \(known: broker, "
                                        r"zookeeper\)"),
    ({"hosts": hosts({"broker": {"restart": "x"}})},
     r"hosts\[0\] \(10.0.1.11\): commands: broker.restart: unknown action \(known: stop, start, kill, pause, resume\)"),
    ({"hosts": hosts({"broker": {"kill": ""}})}, r"hosts\[0\] \(10.0.1.11\): commands: broker.kill: '' must be a command line"),
    ({"hosts": [*hosts()[:1], {"address": "10.0.1.21", "az": "az1", "role": "client", "commands": {"broker": KILL}},
                *hosts()[2:]]},
     r"hosts\[1\] \(10.0.1.21\): commands: only node hosts run the cluster's processes"),
])
def test_a_bad_entry_is_one_line_naming_the_file_and_the_entry(tmp_path: Path, changes: dict[str, Any],
                                                               says: str) -> None:
    path = write(tmp_path, **changes)
    with pytest.raises(UsageError, match=rf"^inventory {path}: {says}") as caught:
        load_inventory(path)
    assert "\n" not in str(caught.value)
