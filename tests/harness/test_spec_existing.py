"""A spec against a cluster of the user's (inventory `provision: false`): what it may not do there is refused in one
line before anything starts (exit 3), and `run --dry-run` prints what it would do to each host and stops (exit 0)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.spec import load_specs
from testbed.errors import SpecError
from tests.conftest import REPO

KILL = {"kill": "kill -9 $(cat /run/kafka.pid)", "start": "systemctl start kafka"}
PAUSE = {"pause": "kill -STOP $(cat /run/kafka.pid)", "resume": "kill -CONT $(cat /run/kafka.pid)"}


def inventory(tmp_path: Path, commands: dict[str, Any] | None = None) -> Path:
    (tmp_path / "id").write_text("not read here\n")
    hosts: list[dict[str, Any]] = []
    for i in (1, 2, 3):
        node: dict[str, Any] = {"address": f"10.0.{i}.11", "az": f"az{i}", "role": "node"}
        if commands:
            node["commands"] = commands
        hosts += [node, {"address": f"10.0.{i}.21", "az": f"az{i}", "role": "client"}]
    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump({"control": "10.0.0.5", "key_file": "id", "provision": False, "hosts": hosts}))
    return path


def spec(tmp_path: Path, nemesis: list[dict[str, Any]], **more: Any) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump({"name": "yours", "duration_s": 20, "workloads": {"producers": [{"rate": 10}]},
                                    "nemesis": nemesis, **more}))
    return path


KILL_AZ1 = [{"at": 5, "fault": "kill", "target": "az1", "name": "k"}, {"at": 9, "stop": "k"}]


@pytest.mark.parametrize(("nemesis", "more", "says"), [
    ([{"at": 5, "fault": "power-off", "target": "az1"}], {"cluster": {"lose_unsynced_writes": False}},
     r"nemesis\[0\]\.fault: power-off: with provision: false \(a cluster of yours, inventory .*\) a power cut needs "
     r"faultline's own processes"),
    ([{"at": 5, "fault": "slow-link", "target": "az1", "delay_ms": 50}], {},
     r"nemesis\[0\]\.fault: slow-link: .* a degraded link needs faultline's own delay process"),
    ([{"at": 5, "fault": "stray-transactional-produce"}], {},
     r"nemesis\[0\]\.fault: stray-transactional-produce: .* it would leave a hanging transaction in your cluster"),
    (KILL_AZ1, {}, r"nemesis\[0\]\.fault: kill \(role broker\): .* it runs the inventory's commands.broker.kill on "
                   r"each node host, and hosts\[0\] \(10.0.1.11\) has none"),
    ([{"at": 5, "fault": "pause", "target": "az1", "role": "zookeeper"}], {},
     r"nemesis\[0\]\.fault: pause \(role zookeeper\): .* commands.zookeeper.pause"),
    ([{"random-chaos": {"from": 1, "until": 10, "duration": [1, 2], "interval": [1, 2],
                        "faults": [{"fault": "isolate-az", "target": "az1"}, {"fault": "graceful-stop",
                                                                              "target": "az2"}]}}], {},
     r"nemesis\[0\]\.fault: graceful-stop \(role broker\): .* commands.broker.stop"),
    ([], {"cluster": {"extra_topics": ["input"]}}, r"cluster.extra_topics: with provision: false .* only its own "
                                                   r"topic"),
    ([], {"workloads": {"producers": [{"rate": 10}], "consumers": [{"mode": "group", "group": "g"}]}},
     r"workloads.consumers\[0\]\.mode: group: with provision: false .* consumer groups would commit offsets"),
])
def test_what_a_cluster_of_yours_cannot_take_is_one_line(tmp_path: Path, nemesis: list[dict[str, Any]],
                                                         more: dict[str, Any], says: str) -> None:
    with pytest.raises(SpecError, match=says) as caught:
        load_specs(spec(tmp_path, nemesis, **more), inventory=inventory(tmp_path))
    assert "\n" not in str(caught.value)


def test_partitions_and_the_commands_the_inventory_names_are_taken(tmp_path: Path) -> None:
    nemesis = [*KILL_AZ1, {"at": 10, "fault": "pause", "target": "az2", "name": "p"}, {"at": 12, "stop": "p"},
               {"at": 13, "fault": "isolate-az", "target": "leader"}]
    [run] = load_specs(spec(tmp_path, nemesis), inventory=inventory(tmp_path, {"broker": {**KILL, **PAUSE}}))
    assert run.cluster.provision is False and run.cluster.runtime == "ssh"
    [made] = load_specs(spec(tmp_path, []), inventory=None)
    assert made.cluster.provision is True


def dry_run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", "run", *argv, "--dry-run"], cwd=REPO, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})


def test_dry_run_says_what_each_host_gets_and_touches_nothing(tmp_path: Path) -> None:
    nemesis = [*KILL_AZ1, {"at": 13, "fault": "isolate-az", "target": "leader"}]
    proc = dry_run(str(spec(tmp_path, nemesis, cluster={"controller": 2, "min_insync_replicas": 2})), "--inventory",
                   str(inventory(tmp_path, {"broker": KILL})))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "against a cluster of yours" in out and "provision: false" in out
    assert "makes one topic, faultline-<run prefix> (3 partitions, replication factor 3; min.insync.replicas 2, " \
           "unclean.leader.election.enable false), and deletes it at the end" in out
    assert "does not apply (your cluster's own values hold): cluster.controller\n" in out
    assert "faults: kill (az1) at 5 s; isolate-az (leader) at 13 s" in out
    assert "DROP rules for TCP ports 2181, 2888, 3888, 9092, 9093 to and from the cut hosts" in out
    node = next(line for line in out.splitlines() if line.lstrip().startswith("az2-node"))
    assert "nothing installed" in node and "kill of its broker: kill `kill -9 $(cat /run/kafka.pid)`, start " \
                                          "`systemctl start kafka`" in node, node
    client = next(line for line in out.splitlines() if line.lstrip().startswith("az3-client"))
    assert "a venv under /var/lib/faultline" in client and "observer of broker 2" in client, client
    assert len(out.splitlines()) <= 24  # one screen
    assert not (REPO / "results" / "yours").exists()  # no run folder


def test_a_dry_run_of_a_refused_spec_is_its_one_line_and_exit_3(tmp_path: Path) -> None:
    proc = dry_run(str(spec(tmp_path, KILL_AZ1)), "--inventory", str(inventory(tmp_path)))
    assert proc.returncode == 3 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "commands.broker.kill" in proc.stderr, proc.stderr
