"""Bad input: one line on stderr, exit status 3, and nothing on the machine changes."""

from __future__ import annotations

import ipaddress
import json
import subprocess
import sys
from pathlib import Path

import pytest

from testbed.lifecycle import ROOT_NEEDED
from tests.conftest import REPO, faultline

pytestmark = pytest.mark.cluster  # needs root, and the machine must be free of clusters


def machine_snapshot() -> tuple[str, str]:
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    return ns, "\n".join(sorted(line.split(":")[1] for line in links.splitlines()))


def a_network_in_use() -> str:
    routes = json.loads(
        subprocess.run(["ip", "-j", "-4", "route", "show"], capture_output=True, text=True).stdout
    )
    dst = next(r["dst"] for r in routes if r.get("dst") not in (None, "default"))
    net = ipaddress.IPv4Network(dst, strict=False)
    return str(net if net.prefixlen <= 24 else net.supernet(new_prefix=24))


@pytest.mark.parametrize(
    "args, says",
    [
        (["cluster", "up", "--frobnicate"], "unrecognized arguments: --frobnicate"),
        (["cluster", "up", "--nodes", "2"], "at least 3 nodes"),
        (["cluster", "up", "--network", "NETWORK-IN-USE"], "overlaps"),
        (["cluster", "up", "--kafka-version", "0.0.1"], "faultline runs Kafka from 0.10.2 to 4.x"),
        (["cluster", "up", "--kafka-version", "3.2.3", "--metadata", "kraft"], "Kafka 3.2.3 has no production KRaft"),
        (["cluster", "up", "--kafka-version", "4.1.1", "--metadata", "zookeeper"], "Kafka 4.1.1 runs only on KRaft"),
        (["cluster", "up", "--kafka-version", "2.7.99"], "neither cached"),
        (["cluster", "up", "--nodes", "three"], "invalid int value"),
        (["cluster", "up", "--controller", "3"], "--controller 3: no broker 3 in a cluster of 3 nodes"),
        (["cluster", "frob"], "invalid choice"),
        (["cluster", "up", "--runtime", "vmware"], "argument --runtime: invalid choice: 'vmware'"),
        (["run", "scenarios/smoke.yaml", "--runtime", "vmware"], "argument --runtime: invalid choice: 'vmware'"),
        (["run", "scenarios/smoke.yaml", "--set", "settle_timeout_s"], "--set settle_timeout_s: expected KEY=VALUE"),
        (["run", "scenarios/smoke.yaml", "--set", "settle_timeout=45"], "--set: settle_timeout: unknown key"),
        (["run", "scenarios/smoke.yaml", "--set", "cluster.partitions=many"], "--set: cluster.partitions:"),
    ],
)
def test_bad_input_is_refused_without_changes(tmp_path: Path, args: list[str], says: str) -> None:
    args = [a.replace("NETWORK-IN-USE", a_network_in_use()) for a in args]
    before = machine_snapshot()
    proc = (
        faultline(*args, "--run-dir", str(tmp_path / "run"))
        if args[:2] == ["cluster", "up"]
        else faultline(*args)
    )
    assert proc.returncode == 3, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], proc.stderr
    assert machine_snapshot() == before
    assert not (tmp_path / "run").exists()


def test_not_root_is_refused(tmp_path: Path) -> None:
    before = machine_snapshot()
    proc = subprocess.run(
        [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            sys.executable,
            "-m",
            "harness",
            "cluster",
            "up",
            "--run-dir",
            str(tmp_path / "run"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.strip().splitlines() == [f"faultline: {ROOT_NEEDED}"]
    assert machine_snapshot() == before
    assert not (tmp_path / "run").exists()
