"""A cluster of the user's as the system under test (inventory `provision: false`): the catalogue's
isolate-az-leader against a ZooKeeper + Kafka cluster the ssh test bed started by itself (tests/ssh/their_cluster.py,
plain `java` with configs written here; faultline provisions nothing) gives the provisioned run's verdicts, and
afterwards the brokers (the same pids), their configuration, every topic but the run's own (configuration, end
offsets), the user's consumer group and every host's iptables are as they were. Then process faults through the
inventory's commands: a kill of the controller's broker and a pause of another, their pids journaled, only the killed
one running under a new pid afterwards. Named to run last on the bed (the cluster it starts is gone when it ends)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from testbed.sshbed import SshTestBed
from tests.conftest import REPO, faultline, run_dir_of
from tests.ssh.test_ssh_runs import nothing_of_runs_left
from tests.ssh.their_cluster import USER_TOPIC, TheirCluster, look, start_their_cluster

pytestmark = [pytest.mark.docker, pytest.mark.cluster, pytest.mark.catalogue]  # `make test-docker`, not `make test`

VERSION = "2.7.2"


@pytest.fixture(scope="module")
def theirs(testbed: SshTestBed) -> Iterator[TheirCluster]:
    cluster = start_their_cluster(testbed, VERSION, controller=2)
    try:
        yield cluster
    finally:
        cluster.stop()


def your_inventory(bed: SshTestBed, theirs: TheirCluster, path: Path) -> Path:
    return bed.write_inventory(path, provision=False, ports=[9092, 2181, 2888, 3888],
                               hosts=[{"address": a, "az": az, "role": role,
                                       **({"commands": theirs.commands()} if role == "node" else {})}
                                      for a, (az, role) in bed.roles.items()])


def test_isolate_az_leader_on_a_cluster_of_yours_gives_the_verdicts_and_leaves_it_as_it_was(
        testbed: SshTestBed, theirs: TheirCluster, tmp_path: Path) -> None:
    before = look(theirs)
    assert USER_TOPIC in before["topics"] and "billing" in before["groups"], before
    inventory = your_inventory(testbed, theirs, tmp_path / "yours.yaml")
    spec = yaml.safe_load((REPO / "scenarios" / "isolate-az-leader.yaml").read_text())
    spec["configurations"] = {c: spec["configurations"][c] for c in ("acks1", "acksall")}
    (tmp_path / "isolate.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    proc = faultline("run", str(tmp_path / "isolate.yaml"), "--inventory", str(inventory), "--known-hosts",
                     str(testbed.known_hosts), "--results", str(tmp_path), timeout=1500)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "against a cluster of yours" in proc.stdout and "nothing installed" in proc.stdout  # the screen first
    assert [line.split()[0] for line in proc.stdout.splitlines() if "isolate-az-leader [" in line] == ["PASS"] * 2
    counts = {c: json.loads((run_dir_of(tmp_path, "isolate-az-leader", c) / "verdict.json").read_text())["counts"]
              for c in ("acks1", "acksall")}
    assert counts["acks1"]["lost"] > 0 and counts["acks1"]["divergence"] > 0, counts
    assert counts["acksall"]["lost"] == 0 and counts["acksall"]["divergence"] == 0, counts
    for configuration in ("acks1", "acksall"):
        run_dir = run_dir_of(tmp_path, "isolate-az-leader", configuration)
        learned = json.loads((run_dir / "existing-cluster.json").read_text())
        assert learned["controller"] == 2 and sorted(learned["brokers"]) == ["0", "1", "2"], learned
        assert all(b["log_dirs"] == ["/opt/theirs/kafka-logs"] and b["rack"] == f"az{int(i) + 1}"
                   for i, b in learned["brokers"].items()), learned
        state = json.loads((run_dir / "state.json").read_text())
        topic = state["settings"]["topic"]
        assert state["settings"]["provision"] is False and topic == f"faultline-{state['prefix']}", state
        replicas = json.loads((run_dir / "replicas.json").read_text())  # from the partitions it copied
        assert replicas["topic"] == topic and replicas["agree"] is True and replicas["partitions"], replicas
    after = look(theirs)
    for key in before:  # the same processes, configuration, topics, offsets, group and rules as before
        assert after[key] == before[key], key
    nothing_of_runs_left(testbed)


def test_process_faults_run_the_inventorys_commands_on_a_cluster_of_yours(
        testbed: SshTestBed, theirs: TheirCluster, tmp_path: Path) -> None:
    before = look(theirs)
    spec = yaml.safe_load((REPO / "scenarios" / "smoke.yaml").read_text())
    # The kill's undo waits for the old broker's ZooKeeper session to end, then for its start command's broker to
    # listen (26 s here on 2 cores): the pause comes well after.
    spec.update(duration_s=60, nemesis=[{"at": 5, "fault": "kill", "target": "az3", "name": "kill-controller"},
                                        {"at": 12, "stop": "kill-controller"},
                                        {"at": 45, "fault": "pause", "target": "az2", "name": "pause-az2"},
                                        {"at": 50, "stop": "pause-az2"}])
    (tmp_path / "smoke.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    proc = faultline("run", str(tmp_path / "smoke.yaml"), "--inventory",
                     str(your_inventory(testbed, theirs, tmp_path / "yours.yaml")), "--known-hosts",
                     str(testbed.known_hosts), "--results", str(tmp_path), timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "kill of its broker: kill `kill -9 $(cat /opt/theirs/broker.pid)`, start `sh /opt/theirs/start-broker.sh`" \
        in proc.stdout  # the screen names the commands the faults will run
    rows = [json.loads(line) for line in (run_dir_of(tmp_path, "smoke") / "journal" / "nemesis.jsonl").read_text()
            .splitlines()]
    started = {r["fault"]: json.loads(r["detail"]) for r in rows if r["type"] == "start"}
    assert started["kill"]["pids"] == {"az3-node/broker": before["pids"]["az3/broker"]}, started
    assert started["pause"]["pids"] == {"az2-node/broker": before["pids"]["az2/broker"]}, started
    after = look(theirs)
    moved = {k for k in before["pids"] if after["pids"][k] != before["pids"][k]}
    assert moved == {"az3/broker"}, (before["pids"], after["pids"])  # started again by its start command
    for key in ("brokers", "topics", "configs", "end offsets", "groups", "committed", "hosts"):
        assert after[key] == before[key], key
    nothing_of_runs_left(testbed)
