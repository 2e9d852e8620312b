"""The foundation on a real cluster: up, produce and read from every AZ, status vs ZooKeeper, down."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from testbed.dist.classdata import archive
from testbed.dist.kafka import DEFAULT_VERSION
from testbed.kafka.zk import zk_snapshot
from tests.conftest import REPO, faultline
from tests.harness.leftovers import remaining

pytestmark = pytest.mark.cluster
CLIENT = str(REPO / "tests" / "harness" / "kafka_client.py")


def in_host(namespace: str, *argv: str) -> str:
    proc = subprocess.run(
        ["ip", "netns", "exec", namespace, sys.executable, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_up_produce_read_everywhere_status_down(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    up = faultline("cluster", "up", "--run-dir", str(run_dir), check=True)
    prefix = json.loads((run_dir / "state.json").read_text())["prefix"]
    try:
        assert "ready in" in up.stdout
        # Every node JVM maps the class-data archive of its role that `make setup` built.
        processes = json.loads((run_dir / "state.json").read_text())["processes"]
        assert sorted(processes) == sorted(f"az{i}-node/{r}" for i in (1, 2, 3) for r in ("broker", "zookeeper"))
        for name, info in processes.items():
            jsa = archive(DEFAULT_VERSION, name.split("/")[1])
            assert jsa.exists(), f"{jsa} missing: run 'make setup'"
            assert str(jsa) in Path(f"/proc/{info['pid']}/maps").read_text(), f"{name} does not map {jsa}"
        second = faultline("cluster", "up", "--run-dir", str(tmp_path / "second"))
        assert (
            second.returncode == 3
            and prefix in second.stderr
            and len(second.stderr.strip().splitlines()) == 1
        )
        assert not (tmp_path / "second").exists()

        status = json.loads(faultline("cluster", "status", "--json", check=True).stdout)
        bootstrap = status["bootstrap_servers"]
        acked = json.loads(
            in_host(f"{prefix}-az1-client", CLIENT, "produce", bootstrap, "faultline", "1000", "v-")
        )
        assert len(acked) == 1000
        for az in ("az1", "az2", "az3"):
            seen = json.loads(
                in_host(f"{prefix}-{az}-client", CLIENT, "consume", bootstrap, "faultline", "3")
            )
            assert sorted(seen) == sorted(acked), f"{az} read {len(seen)} of {len(acked)}"

        zk = zk_snapshot(status["zookeeper_connect"], "faultline")
        assert [b["alive"] for b in status["brokers"]] == [True, True, True]
        assert sorted(z["mode"] for z in status["zookeeper"]) == ["follower", "follower", "leader"]
        for broker in status["brokers"]:
            assert broker["controller"] == zk["controller"]
            leaders = {p["partition"]: p["leader"] for p in broker["partitions"]}
            assert leaders == {p: s["leader"] for p, s in zk["partitions"].items()}
            assert all(sorted(p["isr"]) == [0, 1, 2] for p in broker["partitions"])
    finally:
        down = faultline("cluster", "down")
    assert down.returncode == 0, down.stderr
    assert remaining(prefix) == []
    assert faultline("cluster", "status").returncode == 3
