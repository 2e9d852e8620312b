"""Power cuts over SSH on the test bed (marker catalogue: `make test-docker`, not `make test`).

power-cut-cluster with the nodes' data on unsyncfs uploaded to the hosts: Kafka's default flush loses acknowledged
writes, flush.messages=1 none, each verdict re-derived from its history by `python -m checkers`. Then a node host
whose inventory names power commands (`docker kill` / `docker start` of its bed container): the harness waits for
its sshd, and the partition active across the power cycle is back on it before its processes start."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from testbed.sshbed import SshTestBed
from tests.conftest import REPO, faultline
from tests.ssh.test_ssh_runs import nothing_of_runs_left

pytestmark = [pytest.mark.docker, pytest.mark.cluster, pytest.mark.catalogue]


def rederived(run_dir: Path, out: Path) -> dict[str, int]:
    """The verdict's counts as `python -m checkers` derives them again from the run's history."""
    subprocess.run([sys.executable, "-m", "checkers", str(run_dir / "history"), "--out", str(out)], cwd=REPO,
                   capture_output=True, text=True, timeout=600)
    counts: dict[str, int] = json.loads((out / "verdict.json").read_text())["counts"]
    return counts


def test_power_cut_cluster_over_ssh_drops_unsynced_writes(testbed: SshTestBed, tmp_path: Path) -> None:
    results = tmp_path / "results"
    proc = faultline("run", "scenarios/power-cut-cluster.yaml", "--inventory", str(testbed.inventory),
                     "--known-hosts", str(testbed.known_hosts), "--results", str(results), timeout=1800)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    top = (results / "power-cut-cluster" / "latest").resolve()
    default = json.loads((top / "default-flush" / "verdict.json").read_text())
    fsynced = json.loads((top / "flush-each-message" / "verdict.json").read_text())
    assert default["counts"]["lost"] > 0, default["counts"]
    assert fsynced["counts"]["lost"] == 0 and fsynced["stats"]["ok"] > 0, fsynced["counts"]
    for conf, verdict in (("default-flush", default), ("flush-each-message", fsynced)):
        assert rederived(top / conf, tmp_path / f"again-{conf}") == verdict["counts"], conf
        nemesis = pd.read_parquet(top / conf / "history" / "nemesis.parquet")
        assert list(nemesis[nemesis["fault"] == "power-cut"]["type"]) == ["start", "stop"], conf
        manifest = json.loads((top / conf / "run.json").read_text())
        assert manifest["power_offs"] == {f"az{i}-node": "unsyncfs" for i in (1, 2, 3)}, conf
        assert "az1-node unsyncfs, az2-node unsyncfs, az3-node unsyncfs" in (top / conf / "report.html").read_text()
    nothing_of_runs_left(testbed)


SPEC = {
    "name": "ssh-power-command", "seed": 5, "duration_s": 24, "settle_timeout_s": 120,
    "cluster": {"partitions": 1, "replica_assignment": [[0, 1, 2]], "controller": 1, "min_insync_replicas": 2,
                "zookeeper_session_timeout_ms": 6000},
    "workloads": {"producers": [{"azs": ["az2", "az3"], "rate": 50, "settings": {"acks": "all"}}],
                  "consumers": [{"azs": ["az2"], "mode": "assign"}]},
    "nemesis": [{"at": 4, "fault": "isolate-az", "target": "az1", "name": "cut-az1"},
                {"at": 7, "fault": "power-off", "target": "az1-node", "name": "off-az1"},
                {"at": 12, "stop": "off-az1"},
                {"at": 20, "stop": "cut-az1"}],
}


def test_a_power_command_cycles_a_node_host_and_its_partition_holds(testbed: SshTestBed, tmp_path: Path) -> None:
    az1 = next(a for a, r in testbed.roles.items() if r == ("az1", "node"))
    hosts = [{"address": a, "az": az, "role": role, **(testbed.power_commands(a) if a == az1 else {})}
             for a, (az, role) in testbed.roles.items()]
    inventory = testbed.write_inventory(tmp_path / "inventory-power.yaml", hosts, power_timeout_s=60)
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(SPEC))
    container = testbed.containers[az1]
    container.reload()
    first_start = container.attrs["State"]["StartedAt"]
    seen: list[tuple[str, bool]] = []  # (the container's start, the run's input chain drops something) per poll
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            try:
                container.reload()
                rules = testbed.exec(az1, "iptables -S 2>/dev/null || true", check=False)
                seen.append((container.attrs["State"]["StartedAt"],
                             any(line.startswith("-A fl") and "DROP" in line for line in rules.splitlines())))
            except Exception:  # noqa: BLE001 - the container is off for a few seconds
                pass
            time.sleep(0.3)
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        proc = faultline("run", str(tmp_path / "spec.yaml"), "--inventory", str(inventory), "--known-hosts",
                         str(testbed.known_hosts), "--results", str(tmp_path / "results"), timeout=1200)
    finally:
        done.set()
        watcher.join(5)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr[-3000:]
    run_dir = (tmp_path / "results" / "ssh-power-command" / "latest").resolve()
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["power_offs"] == {"az1-node": "command", "az2-node": "unsyncfs", "az3-node": "unsyncfs"}
    nemesis = pd.read_parquet(run_dir / "history" / "nemesis.parquet")
    assert list(nemesis[nemesis["fault"] == "power-cut"]["type"]) == ["start", "stop"]
    log = (run_dir / "harness.log").read_text()
    assert "az1-node is back" in log and "after its power_on command" in log
    restarted = [dropping for started, dropping in seen if started != first_start]
    assert restarted, "the power command never restarted az1's node container"
    assert any(restarted), "the partition was not back on az1's node after its power-on"
    nothing_of_runs_left(testbed)
