"""Hosts an ssh run cannot use are refused before anything starts: one line naming the host and the cause, exit 3."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import paramiko
import pytest

from testbed.sshbed import SshTestBed
from tests.conftest import faultline

pytestmark = [pytest.mark.docker, pytest.mark.cluster]
NOWHERE = "198.19.0.190"  # on the test bed's network, but no host answers there


def entries(bed: SshTestBed) -> list[dict[str, Any]]:
    return [{"address": a, "az": az, "role": role} for a, (az, role) in bed.roles.items()]


def with_host(bed: SshTestBed, which_az: str, which_role: str, **changes: Any) -> list[dict[str, Any]]:
    return [{**e, **changes} if (e["az"], e["role"]) == (which_az, which_role) else e for e in entries(bed)]


def traces(bed: SshTestBed) -> list[str]:
    """Anything of a run on any host: run directories, processes with a run prefix."""
    found = []
    for address in bed.containers:
        found += bed.exec(address, "ls /var/lib/faultline/runs 2>/dev/null || true").split()
        found += bed.exec(address, "grep -l FAULTLINE_RUN /proc/[0-9]*/environ 2>/dev/null || true").split()
    return found


@pytest.fixture(scope="module")
def no_java_host(testbed: SshTestBed) -> str:
    """One more host, whose java was removed."""
    address = "198.19.0.160"
    testbed.add_host(address, "az2", "node")
    testbed.roles.pop(address)  # not part of the good inventory
    testbed.exec(address, "rm -f \"$(readlink -f /usr/bin/java)\" /usr/bin/java")
    return address


@pytest.fixture(scope="module")
def no_tc_host(testbed: SshTestBed) -> str:
    """One more host, whose tc (iproute2) was removed: it cannot slow or throttle a link."""
    address = "198.19.0.161"
    testbed.add_host(address, "az3", "client")
    testbed.roles.pop(address)
    testbed.exec(address, "rm -f /usr/sbin/tc /sbin/tc /usr/bin/tc /bin/tc")
    return address


@pytest.fixture(scope="module")
def no_fuse_host(testbed: SshTestBed) -> str:
    """One more node host, without /dev/fuse or SYS_ADMIN: it cannot run unsyncfs."""
    address = "198.19.0.162"
    testbed.add_host(address, "az2", "node", fuse=False)
    testbed.roles.pop(address)
    testbed.known_hosts.write_text(testbed.known_hosts.read_text() + testbed.host_keys(address))
    return address


@pytest.mark.catalogue  # `make test-docker`: the refusal line is also checked without a bed (test_ssh_power_fake)
def test_a_power_cut_on_a_node_host_without_fuse_or_power_command_is_refused(
        testbed: SshTestBed, no_fuse_host: str, tmp_path: Path) -> None:
    inventory = testbed.write_inventory(tmp_path / "inventory.yaml", with_host(testbed, "az2", "node",
                                                                              address=no_fuse_host))
    before = traces(testbed)
    proc = faultline("run", "scenarios/power-cut-cluster.yaml", "--configuration", "default-flush", "--inventory",
                     str(inventory), "--known-hosts", str(testbed.known_hosts), "--results",
                     str(tmp_path / "results"), timeout=120)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert len(lines) == 1 and str(inventory) in lines[0], proc.stderr
    assert f"({no_fuse_host}) root@{no_fuse_host}:22 (az2-node): a power-off cannot drop its unsynced writes: no " \
           f"usable /dev/fuse" in lines[0] and "no power_off/power_on command" in lines[0], lines[0]
    assert not (tmp_path / "results").exists() and traces(testbed) == before


def test_bad_hosts_are_refused_in_one_line_and_nothing_starts(testbed: SshTestBed, no_java_host: str,
                                                              no_tc_host: str, tmp_path: Path) -> None:
    other_key = tmp_path / "other_key"
    paramiko.RSAKey.generate(2048).write_private_key_file(str(other_key))
    az1_node = next(a for a, r in testbed.roles.items() if r == ("az1", "node"))
    az2_node = next(a for a, r in testbed.roles.items() if r == ("az2", "node"))
    az3_node = next(a for a, r in testbed.roles.items() if r == ("az3", "node"))
    # A known_hosts file in which az1's node has az2's keys.
    wrong_keys = tmp_path / "wrong_known_hosts"
    wrong_keys.write_text(testbed.known_hosts.read_text().replace(f"{az2_node} ", "x ").replace(
        f"{az1_node} ", f"{az2_node} ").replace("x ", f"{az1_node} "))
    cases: list[tuple[list[dict[str, Any]], Path, str]] = [
        (with_host(testbed, "az3", "client", address=NOWHERE), testbed.known_hosts,
         f"({NOWHERE}) root@{NOWHERE}:22: unreachable"),
        (with_host(testbed, "az2", "client", key_file=str(other_key)), testbed.known_hosts,
         f"the host refused key {other_key} for user root"),
        (entries(testbed), wrong_keys, "its host key does not match the one on file"),
        (with_host(testbed, "az2", "node", address=no_java_host), testbed.known_hosts,
         f"({no_java_host}) root@{no_java_host}:22 (az2-node): no java on the host"),
        (with_host(testbed, "az3", "client", address=no_tc_host), testbed.known_hosts,
         f"({no_tc_host}) root@{no_tc_host}:22 (az3-client): no tc on the host (install iproute2"),
        (with_host(testbed, "az3", "node", az="az1"), testbed.known_hosts,
         f"({az3_node}): hosts[0] ({az1_node}) is already the node of az1"),
    ]
    testbed.known_hosts.write_text(testbed.known_hosts.read_text() + testbed.host_keys(no_java_host)
                                   + testbed.host_keys(no_tc_host))
    before = traces(testbed)
    for i, (hosts, known_hosts, says) in enumerate(cases):
        inventory = testbed.write_inventory(tmp_path / f"inventory-{i}.yaml", hosts)
        proc = faultline("run", "scenarios/smoke.yaml", "--inventory", str(inventory), "--known-hosts",
                         str(known_hosts), "--results", str(tmp_path / f"results-{i}"), timeout=120)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 3, proc.stdout + proc.stderr
        assert len(lines) == 1 and says in lines[0] and str(inventory) in lines[0], (says, proc.stderr)
        assert not (tmp_path / f"results-{i}").exists()
        assert traces(testbed) == before
