"""The docker runtime on a real dockerd and real containers: the same runs, faults and verdicts as netns."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import docker
import pandas as pd
import pytest
import yaml

from testbed.runtime import unsynced
from tests.conftest import REPO, faultline, run_dir_of
from tests.docker.conftest import machine_network

pytestmark = pytest.mark.docker


def ours(prefix: str) -> list[str]:
    client = docker.from_env()
    return [f"container {c.name}" for c in client.containers.list(all=True) if c.name.startswith(prefix)] + \
        [f"network {n.name}" for n in client.networks.list() if n.name.startswith(prefix)]


@pytest.mark.extended  # `make test` runs isolate-az-leader on Docker, below
def test_smoke_on_docker_keeps_every_acknowledged_write(tmp_path: Path) -> None:
    proc = faultline("run", "scenarios/smoke.yaml", "--runtime", "docker", "--results", str(tmp_path), timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    run_dir = run_dir_of(tmp_path, "smoke")
    state = json.loads((run_dir / "state.json").read_text())
    assert state["runtime"] == "docker" and state["settings"]["network"] == "198.19.0.0/24"
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["valid"] is True and verdict["stats"]["ok"] >= 3000, verdict.get("stats")
    writes = pd.read_parquet(run_dir / "history" / "writes.parquet")
    reads = pd.read_parquet(run_dir / "history" / "reads.parquet")
    acked = set(writes.loc[writes["status"] == "ok", "value"])
    assert acked <= set(reads.loc[reads["phase"] == "final", "value"]), "acknowledged writes missing"
    assert set(reads.loc[reads["phase"] == "live", "az"]) == {"az1", "az2", "az3"}, "consumers in every AZ read"
    # Everything came back from the containers: broker logs, replica dumps, harness log with live rates.
    assert (run_dir / "nodes" / "az1-node" / "logs" / "broker" / "server.log").stat().st_size > 0
    assert json.loads((run_dir / "replicas.json").read_text())["agree"] is True
    rates = [line for line in (run_dir / "harness.log").read_text().splitlines() if "] running" in line]
    assert any("writes       0/s" not in line for line in rates[1:]), "the journals were synced during the run"
    assert ours(state["prefix"]) == []


@pytest.mark.extended  # 85 s; `make test` isolates an AZ on Docker in tests/docker/test_app_client_az.py
def test_isolate_az_leader_on_docker_loses_what_the_isolated_leader_acknowledged(tmp_path: Path) -> None:
    """The configuration that loses writes; acksall, its control, runs on netns in `make test`."""
    proc = faultline("run", "scenarios/isolate-az-leader.yaml", "--runtime", "docker", "--configuration", "acks1",
                     "--results", str(tmp_path), timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert [line.split()[0] for line in proc.stdout.splitlines() if "isolate-az-leader [" in line] == ["PASS"]
    verdict = json.loads((run_dir_of(tmp_path, "isolate-az-leader", "acks1") / "verdict.json").read_text())
    counts = verdict["counts"]
    assert counts["lost"] > 0 and counts["divergence"] > 0, counts
    for example in verdict["examples"]["divergence"]:
        assert 0 in example["leaders"], example  # the isolated broker-0 claimed leadership


@pytest.mark.catalogue  # `make test-docker`, not `make test`: CI runs the cases that prove the runtime
def test_power_off_kills_the_node_container_and_keeps_its_data(tmp_path: Path) -> None:
    proc = faultline("run", "scenarios/power-off-mid-replication.yaml", "--runtime", "docker", "--configuration",
                     "acksall", "--results", str(tmp_path), timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    run_dir = run_dir_of(tmp_path, "power-off-mid-replication", "acksall")
    nemesis = pd.read_parquet(run_dir / "history" / "nemesis.parquet")
    starts = nemesis[(nemesis["type"] == "start") & (nemesis["fault"] == "power-cut")]  # unsynced writes dropped
    assert len(starts) >= 1
    node = json.loads(starts.iloc[0]["targets"])["nodes"][0]
    # The broker came back on the same data: it started twice, and the second time recovered the segments
    # the killed container left unflushed (a fresh data directory has none).
    server_log = (run_dir / "nodes" / node / "logs" / "broker" / "server.log").read_text()
    assert server_log.count("started (kafka.server.KafkaServer)") >= 2, "the broker started again after its power-off"
    assert "Recovering unflushed segment" in server_log
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["expectation"]["passed"] is True and verdict["counts"]["lost"] == 0


def test_a_killed_harness_is_cleaned_up_and_nothing_else(tmp_path: Path) -> None:
    client = docker.from_env()
    spec = yaml.safe_load((REPO / "scenarios" / "smoke.yaml").read_text())
    spec.update(name="killed-docker", duration_s=120)
    (tmp_path / "killed.yaml").write_text(yaml.safe_dump(spec))
    bystander_net = client.networks.create("bystander-net", internal=True)
    bystander = client.containers.create("faultline/base:bookworm", ["sleep", "600"], name="bystander")
    harness = subprocess.Popen([sys.executable, "-m", "harness", "run", str(tmp_path / "killed.yaml"), "--runtime",
                                "docker", "--results", str(tmp_path)], cwd=REPO, env=os.environ.copy(),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not list(tmp_path.glob("killed-docker/*/journal/producer-*.jsonl")):
            time.sleep(0.5)
        assert list(tmp_path.glob("killed-docker/*/journal/producer-*.jsonl")), "the run never got going"
        prefix = json.loads(next(tmp_path.glob("killed-docker/*/state.json")).read_text())["prefix"]
        harness.send_signal(signal.SIGKILL)
        harness.wait(10)
        assert ours(prefix), "the killed harness should have left its containers"
        mounts = [s for s in unsynced.mounted().values() if s.startswith(prefix)]
        assert len(mounts) == 6, mounts  # its nodes' data directories, on unsyncfs on this machine
        proc = faultline("clean", timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert ours(prefix) == []
        assert not [s for s in unsynced.mounted().values() if s.startswith(prefix)]
        assert client.containers.get("bystander") and client.networks.get(bystander_net.id)
    finally:
        if harness.poll() is None:
            harness.kill()
        bystander.remove(force=True)
        bystander_net.remove()


@pytest.mark.parametrize("env, spec_change, says", [
    ({"DOCKER_HOST": "unix:///nonexistent/docker.sock"}, {}, "no Docker daemon answers at unix:///nonexistent"),
    ({}, {"cluster": {"kafka_version": "2.6.3"}}, "image faultline/kafka:2.6.3 is not in the Docker daemon"),
])
def test_bad_input_is_one_line_and_creates_nothing(tmp_path: Path, env: dict[str, str],
                                                   spec_change: dict[str, object], says: str) -> None:
    spec = yaml.safe_load((REPO / "scenarios" / "smoke.yaml").read_text())
    spec.update(spec_change)
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(spec))
    before = ours("fl")
    proc = faultline("run", str(tmp_path / "bad.yaml"), "--runtime", "docker", "--results", str(tmp_path / "r"),
                     env={**os.environ, **env})
    assert proc.returncode == 3, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], proc.stderr
    assert ours("fl") == before


def test_the_machine_network_is_as_it_was(machine_before: dict[str, str]) -> None:
    assert machine_network() == machine_before
