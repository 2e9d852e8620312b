"""Runs over SSH on a fresh test bed: smoke (with a killed sshd session mid-run), then isolate-az-leader reusing
what the first run uploaded. In this order: the second test relies on the first having provisioned the hosts."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from testbed.sshbed import SshTestBed
from tests.conftest import REPO, faultline, run_dir_of

pytestmark = [pytest.mark.docker, pytest.mark.cluster]

# The harness's sshd sessions (`sshd: root@notty`, `sshd: root [priv]`), not the listener (`sshd: /usr/sbin/sshd`).
KILL_SESSIONS = "for p in $(pgrep -f '^sshd: root'); do kill -9 $p; done; echo killed"


def ready_seconds(log: str) -> float:
    found = re.findall(r"cluster fl[0-9a-f]{6} ready in ([0-9.]+) s", log)
    assert found, "no 'cluster ... ready' line in the log"
    return float(found[0])


def nothing_of_runs_left(bed: SshTestBed) -> None:
    """No run folder, fault rule, unsyncfs mount or run process is left on any host of the bed."""
    for address in bed.containers:
        assert bed.exec(address, "ls /var/lib/faultline/runs 2>/dev/null || true").split() == [], address
        assert "fl" not in bed.exec(address, "iptables -S"), address
        assert "unsyncfs" not in bed.exec(address, "cat /proc/mounts"), address
        assert bed.exec(address, "grep -l FAULTLINE_RUN /proc/[0-9]*/environ 2>/dev/null || true").strip() == "", \
            address


def test_smoke_over_ssh_from_a_fresh_testbed_survives_a_killed_session(testbed: SshTestBed, tmp_path: Path) -> None:
    for address in testbed.containers:  # fresh: nothing of faultline on any host
        assert testbed.exec(address, "ls /var/lib/faultline 2>/dev/null || true").strip() == "", address
    spec = yaml.safe_load((REPO / "scenarios" / "smoke.yaml").read_text())
    spec.update(duration_s=25)
    (tmp_path / "smoke.yaml").write_text(yaml.safe_dump(spec))
    results = tmp_path / "results"
    harness = subprocess.Popen(
        [sys.executable, "-m", "harness", "run", str(tmp_path / "smoke.yaml"), "--inventory", str(testbed.inventory),
         "--known-hosts", str(testbed.known_hosts), "--results", str(results)],
        cwd=REPO, env=os.environ.copy(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and not list(results.glob("smoke/*/journal/producer-*.jsonl")):
            time.sleep(0.5)
        time.sleep(3)
        client_az1 = next(a for a, r in testbed.roles.items() if r == ("az1", "client"))
        node_az2 = next(a for a, r in testbed.roles.items() if r == ("az2", "node"))
        for address in (client_az1, node_az2):  # the harness's control connections to these hosts drop
            testbed.exec(address, KILL_SESSIONS)
        out, err = harness.communicate(timeout=600)
    finally:
        if harness.poll() is None:
            harness.kill()
    assert harness.returncode == 0, out + err[-3000:]
    run_dir = run_dir_of(results, "smoke")
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["valid"] is True and verdict["stats"]["ok"] >= 3000, verdict.get("stats")
    writes = pd.read_parquet(run_dir / "history" / "writes.parquet")
    reads = pd.read_parquet(run_dir / "history" / "reads.parquet")
    acked = set(writes.loc[writes["status"] == "ok", "value"])
    assert acked <= set(reads.loc[reads["phase"] == "final", "value"]), "acknowledged writes missing"
    log = (run_dir / "harness.log").read_text()
    assert "uploading Kafka 2.7.2 to az1-node" in log and "installing the client venv on az1-client" in log
    assert "dropped; reconnected" in log, "the killed sessions were noticed and replaced"
    assert (run_dir / "nodes" / "az1-node" / "logs" / "broker" / "server.log").stat().st_size > 0
    clocks = json.loads((run_dir / "clocks.json").read_text())
    assert set(clocks["start"]) == set(clocks["end"]) == {f"az{i}-{r}" for i in (1, 2, 3) for r in ("node", "client")}
    for host, start in clocks["start"].items():  # each measurement with its time: the offset is interpolated between
        assert start["at_s"] < clocks["end"][host]["at_s"], (host, start, clocks["end"][host])
    state = json.loads((run_dir / "state.json").read_text())
    assert state["runtime"] == "ssh" and "--known-hosts" in state["ssh"]["host_keys"]
    (testbed.folder / "first-ready-s").write_text(str(ready_seconds(log)))
    nothing_of_runs_left(testbed)


@pytest.mark.extended  # 72 s; `make test` keeps the ssh runtime's smoke and its killed-harness clean-up
def test_isolate_az_leader_over_ssh_reuses_the_upload_and_finds_what_netns_finds(testbed: SshTestBed,
                                                                                 tmp_path: Path) -> None:
    spec = yaml.safe_load((REPO / "scenarios" / "isolate-az-leader.yaml").read_text())
    # acks1 makes the point (its control acksall runs on netns in `make test`); CI time is short.
    spec["configurations"] = {"acks1": spec["configurations"]["acks1"]}
    spec.update(duration_s=34, nemesis=[{"at": 8, "fault": "isolate-az", "target": "leader", "name": "isolate-leader"},
                                        {"at": 24, "stop": "isolate-leader"}])
    (tmp_path / "isolate.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    proc = faultline("run", str(tmp_path / "isolate.yaml"), "--inventory", str(testbed.inventory), "--known-hosts",
                     str(testbed.known_hosts), "--results", str(tmp_path), timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    first_ready = float((testbed.folder / "first-ready-s").read_text())
    run_dir = run_dir_of(tmp_path, "isolate-az-leader", "acks1")
    counts = json.loads((run_dir / "verdict.json").read_text())["counts"]
    assert counts["lost"] > 0 and counts["divergence"] > 0, counts
    log = (run_dir / "harness.log").read_text()
    assert "az1-node already has Kafka 2.7.2" in log and "reusing it, nothing uploaded" in log
    assert "uploading Kafka" not in log and "installing the client venv" not in log
    assert ready_seconds(log) < first_ready, (ready_seconds(log), first_ready)
    nothing_of_runs_left(testbed)


def test_a_killed_harness_leaves_what_clean_inventory_removes_and_nothing_else(testbed: SshTestBed,
                                                                               tmp_path: Path) -> None:
    spec = yaml.safe_load((REPO / "scenarios" / "smoke.yaml").read_text())
    spec.update(name="killed-ssh", duration_s=120, nemesis=[{"at": 3, "fault": "isolate-az", "target": "az3",
                                                              "name": "cut"}])
    (tmp_path / "killed.yaml").write_text(yaml.safe_dump(spec))
    node = next(a for a, r in testbed.roles.items() if r == ("az1", "node"))
    # A process and a chain of someone else's, on a host the run uses.
    bystander = testbed.exec(node, "setsid sleep 600 > /dev/null 2>&1 < /dev/null & echo $!; iptables -N KEEPME").strip()
    harness = subprocess.Popen(
        [sys.executable, "-m", "harness", "run", str(tmp_path / "killed.yaml"), "--inventory", str(testbed.inventory),
         "--known-hosts", str(testbed.known_hosts), "--results", str(tmp_path)],
        cwd=REPO, env=os.environ.copy(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not list(tmp_path.glob("killed-ssh/*/journal/producer-*.jsonl")):
            time.sleep(0.5)
        assert list(tmp_path.glob("killed-ssh/*/journal/producer-*.jsonl")), "the run never got going"
        prefix = json.loads(next(tmp_path.glob("killed-ssh/*/state.json")).read_text())["prefix"]
        while time.monotonic() < deadline and f"-N {prefix}-in" not in testbed.exec(node, "iptables -S"):
            time.sleep(0.5)
        assert f"-A INPUT -j {prefix}-in" in testbed.exec(node, "iptables -S"), "the run's chain is hooked"
        harness.send_signal(signal.SIGKILL)
        harness.wait(10)
        assert prefix in testbed.exec(node, "ls /var/lib/faultline/runs"), "the killed harness left its files"
        assert testbed.exec(node, f"grep -l FAULTLINE_RUN={prefix} /proc/[0-9]*/environ || true").strip()
        proc = faultline("clean", "--inventory", str(testbed.inventory), "--known-hosts", str(testbed.known_hosts),
                         timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert f"az1-node: /var/lib/faultline/runs/{prefix}" in proc.stdout, proc.stdout
        nothing_of_runs_left(testbed)
        assert testbed.exec(node, f"cat /proc/{bystander}/cmdline").startswith("sleep"), "someone else's survives"
        assert "-N KEEPME" in testbed.exec(node, "iptables -S"), "someone else's chain survives"
        assert testbed.exec(node, "ls /var/lib/faultline/cache").split(), "the cache stays for the next run"
    finally:
        if harness.poll() is None:
            harness.kill()
        testbed.exec(node, f"kill {bystander}; iptables -X KEEPME", check=False)
