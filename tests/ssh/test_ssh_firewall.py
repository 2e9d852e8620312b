"""Every partition shape over SSH: the cut pairs cannot talk, the others can, and the harness reaches every host."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from nemesis.firewall import apply_grudge, heal, reset
from nemesis.shapes import Grudge, bridge, cut_link, is_cut, isolate_az, majorities_ring, split_minority
from testbed.inventory import load_inventory
from testbed.runtime.base import new_prefix
from testbed.runtime.ssh import SshRuntime, on_hosts
from testbed.sshbed import SshTestBed
from testbed.state import RunState

pytestmark = [pytest.mark.docker, pytest.mark.cluster]
# Can this host open a TCP connection to the peer's sshd within a second? (bash's /dev/tcp, no extra tools)
REACH = "timeout 1 bash -c 'exec 3<>/dev/tcp/{}/22' && echo yes || echo no"


def test_every_partition_shape_cuts_its_pairs_and_never_the_harness(testbed: SshTestBed, tmp_path: Path) -> None:
    prefix = new_prefix()
    inventory = load_inventory(testbed.inventory)
    plan = inventory.plan(3)
    state = RunState.create(tmp_path, prefix, runtime="ssh", settings={
        "inventory": str(testbed.inventory), "known_hosts": str(testbed.known_hosts), "kafka_version": "2.7.2"})
    runtime = SshRuntime(prefix, plan, state)
    shapes: dict[str, Grudge] = {
        "isolate-az": isolate_az(plan, "az1"), "bridge": bridge(plan), "majorities-ring": majorities_ring(plan),
        "cut-link one way": cut_link(plan, "az2", "az3", one_way=True),
        "split-minority": split_minority(plan, ["az3"]),
    }
    try:
        for shape, grudge in shapes.items():
            apply_grudge(runtime, grudge)
            # The harness still commands every host, over its (kept) connection and over a new one.
            assert set(on_hosts(list(plan.hosts), lambda h: runtime.execute(h, ["true"]).returncode).values()) == {0}
            runtime.conn(plan.hosts[0]).close()
            assert runtime.execute(plan.hosts[0], ["true"]).returncode == 0, shape
            for sender in ("az1-node", "az2-client", "az3-node"):
                for receiver in ("az1-client", "az2-node", "az3-client"):
                    if sender[:3] == receiver[:3]:
                        continue
                    said = runtime.execute(plan.host(sender), ["sh", "-c", REACH.format(
                        plan.host(receiver).address)], timeout=10).stdout.strip()
                    # A TCP connection needs both directions: any cut between the two breaks it.
                    cut = is_cut(grudge, sender, receiver) or is_cut(grudge, receiver, sender)
                    assert said == ("no" if cut else "yes"), (shape, sender, receiver, said)
        heal(runtime)
        host = plan.host("az1-node")
        assert runtime.execute(host, ["sh", "-c", REACH.format(plan.host("az2-node").address)]).stdout.strip() == "yes"
        assert f"{prefix}-in" in testbed.exec(host.address, "iptables -S")
    finally:
        reset(runtime)
        runtime.destroy()
    time.sleep(0.1)
    for address in testbed.containers:
        assert prefix not in testbed.exec(address, "iptables -S"), address
