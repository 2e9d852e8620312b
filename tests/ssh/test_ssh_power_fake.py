"""Power-offs on ssh hosts without SSH: the inventory's power commands, the FUSE check and the preflight's one-line
refusal of a node host that can neither run unsyncfs nor be powered off by a command."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from testbed.addressing import Host
from testbed.errors import RuntimeFailure, UsageError
from testbed.inventory import load_inventory
from testbed.runtime import ssh_power, ssh_preflight, unsynced
from testbed.runtime.ssh_conn import HostKeys
from testbed.runtime.ssh_unsynced import binary_needs, detach_command, fit_problem

FIT = "cap 00000000a82435fb\nfuse yes\nfs yes\nmachine x86_64\nlibc glibc 2.36\n"  # a docker root with SYS_ADMIN


def inventory(tmp_path: Path, **node1: Any) -> Path:
    (tmp_path / "id").write_text("not read here\n")
    hosts = [{"address": f"10.0.{i}.{11 if role == 'node' else 21}", "az": f"az{i}", "role": role}
             for i in (1, 2, 3) for role in ("node", "client")]
    hosts[0].update(node1)
    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump({"control": "10.0.0.5", "key_file": "id", "hosts": hosts}))
    return path


def test_power_commands_are_read_per_node_host_both_or_neither(tmp_path: Path) -> None:
    inv = load_inventory(inventory(tmp_path, power_off="ipmitool off", power_on="ipmitool on", power_timeout_s=30))
    node = inv.host("az1-node")
    assert (node.power_off, node.power_on, node.power_timeout_s) == ("ipmitool off", "ipmitool on", 30.0)
    assert inv.host("az2-node").power_off is None and inv.host("az2-node").power_timeout_s == 120.0
    for bad, says in (({"power_off": "x"}, "hosts[0] (10.0.1.11): power_on: missing (power_off and power_on "
                                           "come together)"),
                      ({"power_off": "x", "power_on": " "}, "hosts[0] (10.0.1.11): power_on: ' ' must be a command"),
                      ({"power_off": "x", "power_on": "y", "role": "client", "az": "az4"},
                       "power_off: only node hosts are powered off"),
                      ({"power_timeout_s": 0}, "power_timeout_s: 0 must be a number of seconds above 0")):
        path = inventory(tmp_path, **bad)
        with pytest.raises(UsageError) as exc:
            load_inventory(path)
        assert str(exc.value).startswith(f"inventory {path}: ") and says in str(exc.value), str(exc.value)


def test_each_node_host_gets_a_command_unsyncfs_or_processes_only(tmp_path: Path) -> None:
    inv = load_inventory(inventory(tmp_path, power_off="off", power_on="on"))
    with_command, without = inv.host("az1-node"), inv.host("az2-node")
    assert ssh_power.choose(with_command, lose_unsynced=True, power_offs=True, fuse=False) == "command"
    assert ssh_power.choose(without, lose_unsynced=True, power_offs=True, fuse=True) == "unsyncfs"
    assert ssh_power.choose(without, lose_unsynced=True, power_offs=False, fuse=True) == "processes"
    assert ssh_power.choose(with_command, lose_unsynced=False, power_offs=True, fuse=True) == "processes"


def test_power_commands_run_here_with_the_hosts_names_and_fail_in_one_line(tmp_path: Path) -> None:
    out = tmp_path / "env.txt"
    inv = load_inventory(inventory(tmp_path, power_off=f"echo $FAULTLINE_HOST $FAULTLINE_ADDRESS $FAULTLINE_PREFIX "
                                                        f"> {out}", power_on="echo no bmc >&2; exit 7",
                                   power_timeout_s=1))
    node = inv.host("az1-node")
    ssh_power.run_command(node, "power_off", "fl123456")
    assert out.read_text().split() == ["az1-node", "10.0.1.11", "fl123456"]
    with pytest.raises(RuntimeFailure, match=r"^az1-node: power_on command .*exit 7.* exited 7: no bmc$"):
        ssh_power.run_command(node, "power_on", "fl123456")
    slow = load_inventory(inventory(tmp_path, power_off="sleep 5", power_on="true", power_timeout_s=0.2))
    with pytest.raises(RuntimeFailure, match=r"^az1-node: power_off command 'sleep 5' did not finish within 0.2 s$"):
        ssh_power.run_command(slow.host("az1-node"), "power_off", "fl123456")
    with pytest.raises(RuntimeFailure, match="names no power_off command"):
        ssh_power.run_command(inv.host("az2-node"), "power_off", "fl123456")


def test_the_binary_fits_a_host_of_its_arch_and_a_new_enough_glibc() -> None:
    needs = ("x86_64", (2, 34))
    assert fit_problem("x86_64", "glibc 2.36", needs) is None
    assert fit_problem("aarch64", "glibc 2.36", needs) == \
        "it is aarch64, and this machine's build/bin/unsyncfs is built for x86_64"
    assert fit_problem("x86_64", "glibc 2.31", needs) == "its glibc is 2.31, and build/bin/unsyncfs needs 2.34 or newer"
    assert "needs glibc" in str(fit_problem("x86_64", "", needs))
    try:
        machine, glibc = binary_needs()
    except RuntimeFailure:
        pytest.skip("no build/bin/unsyncfs here (make setup)")
    assert machine in ("x86_64", "aarch64") and glibc >= (2, 2)


class CannedConn:
    """Answers the FUSE probe with `probe`, and every other command with success."""

    def __init__(self, probe: str) -> None:
        self.probe = probe

    def run(self, command: str, **kwargs: Any) -> tuple[int, bytes, bytes]:
        if command == ssh_power.PROBE:
            return 0, self.probe.encode(), b""
        if command == ssh_preflight.CAPS:
            return 0, b"00000000a82435fb\n", b""
        return 0, b"", b""


@pytest.mark.parametrize(("probe", "says"), [
    (FIT, None),
    (FIT.replace("fuse yes", "fuse no"), "no usable /dev/fuse (a container needs --device /dev/fuse)"),
    (FIT.replace("fs yes", "fs no"), "its kernel has no fuse filesystem"),
    (FIT.replace("a82435fb", "a80435fb"), "no CAP_SYS_ADMIN for its root"),
    (FIT.replace("x86_64", "riscv64"), "build/bin/unsyncfs cannot run there: it is riscv64"),
])
def test_fuse_problems_are_named(probe: str, says: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ssh_power, "binary_needs", lambda: ("x86_64", (2, 34)))
    problem = ssh_power.fuse_problem(CannedConn(probe))  # type: ignore[arg-type]
    assert problem == says if says is None else says in str(problem)


class FakeSsh(CannedConn):
    """`SshConnection` for the preflight: every host connects, has everything, and answers the probe with NO_FUSE."""

    def __init__(self, entry: Any, keys: Any) -> None:
        super().__init__(FIT.replace("fuse yes", "fuse no"))
        self.host = entry

    def connect(self) -> None:
        pass

    def close(self) -> None:
        pass


def test_a_node_host_without_fuse_or_power_command_is_refused_before_a_power_cut_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ssh_preflight, "SshConnection", FakeSsh)
    monkeypatch.setattr(ssh_power, "binary_needs", lambda: ("x86_64", (2, 34)))
    path = inventory(tmp_path, power_off="off", power_on="on")  # az1's node has a command, az2's and az3's do not
    inv = load_inventory(path)
    plan = inv.plan(3)
    keys = HostKeys(None, None)
    ssh_preflight.check_hosts(plan, inv, keys)  # no power cuts asked: fine
    with pytest.raises(UsageError) as exc:
        ssh_preflight.check_hosts(plan, inv, keys, power_cuts=True)
    line = str(exc.value)
    assert "\n" not in line and line.startswith(f"inventory {path}: hosts[2] (10.0.2.11) root@10.0.2.11:22 (az2-node): "
                                                f"a power-off cannot drop its unsynced writes: no usable /dev/fuse")
    assert "the inventory names no power_off/power_on command for it" in line and "(and 1 more host" in line
    client = Host("az1-client", "client", "az1", 1, "10.0.1.21")
    assert ssh_preflight.check_host(client, inv, keys, power_cuts=True) is None  # clients are never powered off


@pytest.mark.fuse
def test_the_detach_script_unmounts_a_cut_filesystem_of_the_prefix_only(tmp_path: Path) -> None:
    """What a power-off runs on the host after the SIGKILL, here on this machine: the dead mount of the run's
    prefix is detached (its unsynced file gone), another prefix's live mount is left alone."""
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    cut = unsynced.mount(ours, "fl0dead0-az1-node-kafka-data", {}, tmp_path / "ours.log")
    kept = unsynced.mount(theirs, "fl0a11e0-az1-node-kafka-data", {}, tmp_path / "theirs.log")
    try:
        (ours / "unsynced").write_text("gone at the cut")
        unsynced.signal_cut([cut])
        assert cut.child is not None and cut.child.wait(10) == -9
        done = subprocess.run(["sh", "-c", detach_command("^fl0dead0-")], capture_output=True, text=True, timeout=30)
        assert done.returncode == 0 and done.stdout.split() == [str(ours)], done
        assert str(ours) not in unsynced.mounted() and str(theirs) in unsynced.mounted()
        assert list(ours.iterdir()) == []
    finally:
        unsynced.unmount([kept])
        unsynced.detach([ours])
