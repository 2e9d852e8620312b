"""Slowed and throttled links over SSH on the test bed: the host's own tc and delay process do what they do on netns,
the harness's commands are never slowed, and teardown and `clean --inventory` leave nothing of them.
Then slow-az over SSH with its netns expectations."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml

from nemesis.firewall import Firewall, reset
from nemesis.links import Degradation, degrade_link
from testbed.inventory import load_inventory
from testbed.runtime import ssh_install
from testbed.runtime.base import new_prefix
from testbed.runtime.ssh import SshRuntime, on_hosts
from testbed.sshbed import SshTestBed
from testbed.state import RunState
from tests.conftest import REPO, faultline

pytestmark = [pytest.mark.docker, pytest.mark.cluster, pytest.mark.catalogue]  # `make test-docker`, not `make test` (~3.5 min)
# The median time, in ms, of five TCP connects to ADDRESS's sshd: SYN and SYN-ACK, one round trip. (Not ping: its
# reply is timestamped on arrival, before the receiver's INPUT rules hold it, so it would see one direction only.)
CONNECT = ("import socket, statistics, time\ndef once():\n    t = time.monotonic()\n"
           "    socket.create_connection(('{address}', 22), timeout=5).close()\n    return (time.monotonic() - t) * 1000\n"
           "print(statistics.median(once() for _ in range(5)))")


# Listens on 9999 for one connection, reads it to the end, closes it (run detached on the receiver by the test bed).
SINK = ("setsid python3 -c \"import socket; s = socket.create_server(('', 9999)); c, _ = s.accept(); "
        "[None for _ in iter(lambda: c.recv(65536), b'')]\" > /dev/null 2>&1 < /dev/null & sleep 0.5")
# Sends 500 kB to the sink at {address} and prints how long until the sink had it all (and closed).
SEND = ("import socket, time; s = socket.create_connection(('{address}', 9999)); t = time.monotonic(); "
        "s.sendall(b'x' * 500000); s.shutdown(socket.SHUT_WR); s.recv(1); print(time.monotonic() - t)")


def runs_processes(bed: SshTestBed, address: str, prefix: str) -> str:
    return bed.exec(address, f"grep -l FAULTLINE_RUN={prefix} /proc/[0-9]*/environ 2>/dev/null || true").strip()


def test_slow_and_throttled_links_over_ssh_spare_the_harness_and_leave_nothing(testbed: SshTestBed,
                                                                              tmp_path: Path) -> None:
    prefix = new_prefix()
    plan = load_inventory(testbed.inventory).plan(3)
    state = RunState.create(tmp_path, prefix, runtime="ssh", settings={
        "inventory": str(testbed.inventory), "known_hosts": str(testbed.known_hosts), "kafka_version": "2.7.2"})
    runtime = SshRuntime(prefix, plan, state)
    sender, receiver = plan.host("az1-node"), plan.host("az2-node")

    def rtt() -> float:
        out = runtime.execute(sender, ["python3", "-c", CONNECT.format(address=receiver.address)], timeout=30)
        return float(out.stdout.strip())

    def transfer_s() -> float:
        testbed.exec(receiver.address, SINK)
        out = runtime.execute(sender, ["python3", "-c", SEND.format(address=receiver.address)], timeout=60)
        return float(out.stdout.strip())

    def harness_round_trip() -> float:
        times = []
        for _ in range(5):
            started = time.monotonic()
            runtime.execute(receiver, ["true"])
            times.append(time.monotonic() - started)
        return min(times)

    firewall = Firewall(runtime)
    try:
        on_hosts(list(plan.hosts), lambda h: ssh_install.put_code(runtime.conn(h), runtime.run_root))
        firewall.prepare()
        plain, plain_transfer = rtt(), transfer_s()
        firewall.add_links("slow", degrade_link(plan, "az1", "az2", Degradation(delay_ms=100),
                                                Degradation(delay_ms=100)))
        slowed = rtt()
        assert slowed > plain + 180, (plain, slowed)  # 100 ms each way, held by az2's and az1's delay processes
        assert harness_round_trip() < 0.15, "the harness's own packets are never queued"
        assert runs_processes(testbed, receiver.address, prefix), "a delay process runs as the run's"
        firewall.remove("slow")
        firewall.add_links("narrow", degrade_link(plan, "az1", "az2", Degradation(rate_kbit=1000), Degradation()))
        qdiscs = testbed.exec(sender.address, "tc qdisc show dev eth0")
        assert "qdisc htb fa17: root" in qdiscs, qdiscs
        assert testbed.exec(sender.address, f"ls /var/lib/faultline/runs/{prefix}/tc").split() == ["eth0"]
        throttled = transfer_s()  # 500 kB at 1000 kbit/s: 4 s
        assert plain_transfer < 1.0 and 3.0 < throttled < 8.0, (plain_transfer, throttled)
        assert harness_round_trip() < 0.15
        firewall.remove("narrow")
        assert "fa17" not in testbed.exec(sender.address, "tc qdisc show dev eth0")
        assert not runs_processes(testbed, receiver.address, prefix), "no delay process once healed"
        assert rtt() < plain + 50

        # A harness that dies with links shaped leaves its qdisc and delay processes; clean --inventory takes them.
        firewall.add_links("both", degrade_link(plan, "az1", "az2", Degradation(delay_ms=50, rate_kbit=500),
                                                Degradation(delay_ms=50)))
        assert "fa17" in testbed.exec(sender.address, "tc qdisc show dev eth0")
        proc = faultline("clean", "--inventory", str(testbed.inventory), "--known-hosts", str(testbed.known_hosts),
                         timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "az1-node: qdisc on eth0" in proc.stdout, proc.stdout
        for address in testbed.containers:
            assert "fa17" not in testbed.exec(address, "tc qdisc show"), address
            assert not runs_processes(testbed, address, prefix), address
    finally:
        reset(runtime)
        runtime.destroy()


def test_slow_az_over_ssh_keeps_its_netns_expectations(testbed: SshTestBed, tmp_path: Path) -> None:
    proc = faultline("run", str(REPO / "scenarios" / "slow-az.yaml"), "--inventory", str(testbed.inventory),
                     "--known-hosts", str(testbed.known_hosts), "--results", str(tmp_path), timeout=1200)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    spec = yaml.safe_load((REPO / "scenarios" / "slow-az.yaml").read_text())
    (top,) = [p for p in (tmp_path / "slow-az").iterdir() if p.name != "latest"]
    for configuration in spec["configurations"]:
        verdict = json.loads((top / configuration / "verdict.json").read_text())
        assert verdict["expectation"]["passed"] is True, (configuration, verdict["expectation"], verdict["counts"])
        assert "delaying links" not in (top / configuration / "harness.log").read_text()
    for address in testbed.containers:
        assert "fa17" not in testbed.exec(address, "tc qdisc show"), address
        assert testbed.exec(address, "ls /var/lib/faultline/runs 2>/dev/null || true").split() == [], address
