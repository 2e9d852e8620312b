"""KRaft over SSH: the catalogue's isolate-az-leader with nothing changed but the Kafka version (4.1.1, KRaft only),
on the sshd test bed, gives the netns verdicts. Named to run after test_ssh_runs, which needs a fresh test bed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from testbed.sshbed import SshTestBed
from tests.conftest import REPO, assert_isolate_az_leader_on_kraft, faultline
from tests.ssh.test_ssh_runs import nothing_of_runs_left

pytestmark = [pytest.mark.docker, pytest.mark.cluster, pytest.mark.catalogue]  # `make test-docker` (~6 min)

KRAFT_VERSION = "4.1.1"


def test_isolate_az_leader_over_ssh_on_kraft_loses_with_acks1_and_not_with_acks_all(testbed: SshTestBed,
                                                                                    tmp_path: Path
                                                                                    ) -> None:
    spec = yaml.safe_load((REPO / "scenarios" / "isolate-az-leader.yaml").read_text())
    spec["configurations"] = {c: spec["configurations"][c] for c in ("acks1", "acksall")}
    (tmp_path / "isolate.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    proc = faultline("run", str(tmp_path / "isolate.yaml"), "--kafka-version", KRAFT_VERSION, "--inventory",
                     str(testbed.inventory), "--known-hosts", str(testbed.known_hosts), "--results", str(tmp_path),
                     timeout=1500)
    run_dir = assert_isolate_az_leader_on_kraft(proc, tmp_path, "ssh")
    for node in ("az1-node", "az2-node", "az3-node"):  # a controller beside each broker, its log fetched back
        assert (run_dir / "nodes" / node / "logs" / "controller" / "server.log").stat().st_size > 0, node
    start = json.loads((run_dir / "journal" / "nemesis.jsonl").read_text().splitlines()[0])
    assert json.loads(start["detail"])["facts"]["controller"] == 2, start  # the active controller, DescribeQuorum
    assert json.loads((run_dir / "replicas.json").read_text())["agree"] is True
    nothing_of_runs_left(testbed)
