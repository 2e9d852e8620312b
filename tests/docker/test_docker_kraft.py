"""KRaft on the docker runtime: the catalogue's isolate-az-leader with nothing changed but the Kafka version (4.1.1,
KRaft only) gives the netns verdicts, with each node container running its KRaft controller beside its broker."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, assert_isolate_az_leader_on_kraft, faultline
from tests.docker.test_docker_runtime import ours

pytestmark = [pytest.mark.docker, pytest.mark.catalogue]  # `make test-docker`, not `make test` (~4 min)

KRAFT_VERSION = "4.1.1"  # the newest 4.x faultline has run


def test_isolate_az_leader_on_docker_with_kraft_loses_with_acks1_and_not_with_acks_all(tmp_path: Path) -> None:
    built = subprocess.run([sys.executable, "compose/build_images.py", "--kafka-version", KRAFT_VERSION,
                            "--only", "kafka"], cwd=REPO, capture_output=True, text=True, timeout=1200)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    proc = faultline("run", "scenarios/isolate-az-leader.yaml", "--runtime", "docker", "--kafka-version",
                     KRAFT_VERSION, "--configuration", "acks1", "--configuration", "acksall", "--results",
                     str(tmp_path), timeout=1200)
    run_dir = assert_isolate_az_leader_on_kraft(proc, tmp_path, "docker")
    run = json.loads((run_dir / "run.json").read_text())
    assert run["versions"]["kafka"] == KRAFT_VERSION and run["versions"]["zookeeper"] == ""
    for node in ("az1-node", "az2-node", "az3-node"):  # a controller beside each broker, its log copied back
        logs = run_dir / "nodes" / node / "logs"
        assert (logs / "controller" / "server.log").stat().st_size > 0, node
        assert (logs / "broker" / "server.log").stat().st_size > 0, node
        assert not (logs / "zookeeper").exists(), node
    # When the fault fired the active controller (DescribeQuorum over the docker network) was the steered one,
    # broker 2's node (cluster.controller: 2), so isolating the leader's AZ left the quorum its leader.
    start = json.loads((run_dir / "journal" / "nemesis.jsonl").read_text().splitlines()[0])
    assert json.loads(start["detail"])["facts"]["controller"] == 2, start
    assert json.loads(start["targets"])["az"] == "az1", start
    assert json.loads((run_dir / "replicas.json").read_text())["agree"] is True
    assert ours(json.loads((run_dir / "state.json").read_text())["prefix"]) == []
