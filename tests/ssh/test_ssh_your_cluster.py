"""A cluster of the user's as the system under test (inventory `provision: false`): the catalogue's
isolate-az-leader against a ZooKeeper + Kafka cluster the ssh test bed started by itself (tests/ssh/their_cluster.py,
plain `java` with configs written here; faultline provisions nothing) gives the provisioned run's verdicts, and
afterwards the brokers (the same pids), their configuration, every topic but the run's own (configuration, end
offsets), the user's consumer group and every host's iptables are as they were. Named to run last on the bed (the
cluster it starts is gone when it ends)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from testbed.sshbed import SshTestBed
from tests.conftest import REPO, faultline, run_dir_of
from tests.ssh.test_ssh_runs import nothing_of_runs_left
from tests.ssh.their_cluster import USER_TOPIC, look, start_their_cluster

pytestmark = [pytest.mark.docker, pytest.mark.cluster, pytest.mark.catalogue]  # `make test-docker`, not `make test`

VERSION = "2.7.2"


def test_isolate_az_leader_on_a_cluster_of_yours_gives_the_verdicts_and_leaves_it_as_it_was(testbed: SshTestBed,
                                                                                           tmp_path: Path) -> None:
    theirs = start_their_cluster(testbed, VERSION, controller=2)
    try:
        before = look(theirs)
        assert USER_TOPIC in before["topics"] and "billing" in before["groups"], before
        inventory = testbed.write_inventory(
            tmp_path / "yours.yaml", provision=False, ports=[9092, 2181, 2888, 3888],
            hosts=[{"address": a, "az": az, "role": role, **({"commands": theirs.commands()} if role == "node" else {})}
                   for a, (az, role) in testbed.roles.items()])
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
    finally:
        theirs.stop()
