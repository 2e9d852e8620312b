"""The ssh runtime's inventory: a YAML file naming real hosts, validated like a spec, turned into an address plan.

    control: 10.0.0.5              # the harness's address as the hosts see it (exempt from every fault)
    user: root                     # defaults for every host (each host may override them)
    key_file: ~/.ssh/faultline     # or `agent: true` (the keys of SSH_AUTH_SOCK)
    port: 22
    sudo: false                    # true: root commands (iptables, mkdir of root) go through `sudo -n`
    root: /var/lib/faultline       # where faultline keeps its files on every host
    power_timeout_s: 120           # bounds each power command, and the wait for sshd after power_on
    provision: true                # false: the node hosts run a Kafka cluster of yours (testbed.existing)
    hosts:
      - {address: 10.0.1.11, az: az1, role: node}     # ZooKeeper server + broker of az1
      - {address: 10.0.1.21, az: az1, role: client}   # az1's producers and consumers
      - {address: 10.0.2.11, az: az2, role: node, ssh_address: 203.0.113.7, port: 2222}
      - {address: 10.0.3.11, az: az3, role: node,      # a real power cut (run here, on the harness's machine)
         power_off: "ipmitool -H bmc3 chassis power off", power_on: "ipmitool -H bmc3 chassis power on"}
      ...

`address` is the host's address on the cluster's network (what Kafka binds to
and fault rules name); `ssh_address` (default: `address`) is where the
harness's SSH connection goes. `power_off`/`power_on` (a node host's, both or
neither) are command lines the harness runs on its own machine to cut and
restore that host's power (testbed.runtime.ssh_power). With `provision: false`
the node hosts run a cluster faultline did not make: it installs nothing on
them, each may name `commands` (per role, the command lines that stop, start,
kill, pause and resume its process, run on the host over SSH) and the top may
name `ports`, the cluster's TCP ports a partition cuts (testbed.existing_spec).
Every error is one line naming the file and the entry. Pure besides reading the file and checking that key files exist.
Must never: accept an inventory that gives an AZ two nodes, an address twice,
or a key file that cannot be read.
"""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from testbed.addressing import AddressPlan, Host
from testbed.errors import UsageError, yaml_problem
from testbed.existing_spec import Commands, parse_commands, parse_ports

TOP_KEYS = {"control", "user", "key_file", "agent", "port", "sudo", "root", "power_timeout_s", "hosts", "provision",
            "ports"}
HOST_KEYS = {"address", "ssh_address", "az", "role", "user", "key_file", "agent", "port", "sudo", "power_off",
             "power_on", "power_timeout_s", "commands"}
ROLES = ("node", "client")
AZ_RE = re.compile(r"^az([1-9])$")
DEFAULT_ROOT = "/var/lib/faultline"
DEFAULT_POWER_TIMEOUT_S = 120.0
SSH_KEYS = "'control' and 'hosts'"  # what an ssh inventory's mapping must hold, as its errors say


@dataclass(frozen=True)
class SshHost:
    """One inventory entry: how to reach the host and what it is in the cluster."""

    entry: str  # how errors name it: "hosts[2] (10.0.1.11)"
    address: str
    ssh_address: str
    port: int
    user: str
    key_file: str | None  # None: the SSH agent's keys
    sudo: bool
    az: str
    role: str
    power_off: str | None = None  # command lines run on the harness's machine (testbed.runtime.ssh_power)
    power_on: str | None = None
    power_timeout_s: float = DEFAULT_POWER_TIMEOUT_S
    commands: Commands = ()  # provision: false: (role, action, command line) run on the host (testbed.existing_spec)

    def command(self, role: str, action: str) -> str | None:
        """The inventory's command line for `action` (stop, start, kill, pause, resume) of the host's `role`."""
        return next((line for r, a, line in self.commands if r == role and a == action), None)

    @property
    def name(self) -> str:
        """The plan's host name: az1-node, az1-client, ..."""
        return f"{self.az}-{self.role}"

    @property
    def target(self) -> str:
        return f"{self.user}@{self.ssh_address}:{self.port}"


@dataclass(frozen=True)
class Inventory:
    path: Path
    control: str
    root: str
    hosts: tuple[SshHost, ...]
    provision: bool = True  # False: the node hosts run a cluster of the user's; faultline installs nothing there
    ports: tuple[int, ...] = ()  # provision: false: the cluster's TCP ports, the only ones a partition cuts

    def azs(self) -> list[str]:
        return sorted({h.az for h in self.hosts if h.role == "node"})

    def host(self, name: str) -> SshHost:
        return next(h for h in self.hosts if h.name == name)

    def plan(self, nodes: int) -> AddressPlan:
        """The address plan of a cluster of `nodes` AZs (az1..azN) on these hosts; UsageError if one is missing."""
        have = self.azs()
        for i in range(1, nodes + 1):
            for role in ROLES:
                if not any(h.az == f"az{i}" and h.role == role for h in self.hosts):
                    raise UsageError(f"{self.path}: the cluster needs {nodes} AZs (az1..az{nodes}), each with a node "
                                     f"and a client host, but no {role} host is in az{i} (AZs with a node: "
                                     f"{', '.join(have) or 'none'})")
        hosts = [Host(h.name, h.role, h.az, int(h.az[2:]), h.address) for h in self.hosts
                 if int(h.az[2:]) <= nodes]
        hosts.sort(key=lambda h: (h.index, ROLES.index(h.role)))
        return AddressPlan(f"inventory {self.path}", self.control, 32, tuple(hosts),
                           cut_ports=() if self.provision else tuple(str(p) for p in self.ports))


def read_inventory_file(path: str | Path, keys: str) -> tuple[Path, dict[str, Any]]:
    """An inventory file's absolute path and its YAML mapping (ssh or Docker alike); UsageError in one line naming the
    file when it cannot be read, is not YAML, or is not a mapping (``keys``: what the mapping must hold, said then)."""
    path = Path(path).expanduser().absolute()
    try:
        raw = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise UsageError(f"inventory {path}: cannot read it ({exc.strerror or exc})") from exc
    except yaml.YAMLError as exc:
        raise UsageError(f"inventory {yaml_problem(path, exc)}") from exc
    if not isinstance(raw, dict):
        raise UsageError(f"inventory {path}: must be a YAML mapping with {keys}")
    return path, raw


def load_inventory(path: str | Path) -> Inventory:
    """Read and validate an inventory file; UsageError (one line naming the file and the entry) on any fault."""
    return parse_inventory(*read_inventory_file(path, SSH_KEYS))


def parse_inventory(path: Path, raw: dict[str, Any]) -> Inventory:
    """Validate an ssh inventory's mapping, read from `path` (errors name it)."""
    def fail(where: str, what: str) -> UsageError:
        return UsageError(f"inventory {path}: {where}: {what}")

    unknown = sorted(set(raw) - TOP_KEYS)
    if unknown:
        raise fail(unknown[0], f"unknown key (known: {', '.join(sorted(TOP_KEYS))})")
    control = _address(raw.get("control"), lambda what: fail("control", what))
    root = raw.get("root", DEFAULT_ROOT)
    if not isinstance(root, str) or not root.startswith("/") or root.rstrip("/") in ("", "/"):
        raise fail("root", f"{root!r} must be an absolute directory other than /")
    entries = raw.get("hosts")
    if not isinstance(entries, list) or not entries:
        raise fail("hosts", "must be a non-empty list of hosts")
    hosts: list[SshHost] = []
    for i, entry in enumerate(entries):
        host = _host(path, raw, i, entry)
        for other in hosts:
            if other.address == host.address:
                raise UsageError(f"inventory {path}: {host.entry}: address {host.address} is also {other.entry}'s")
            if other.name == host.name:
                raise UsageError(f"inventory {path}: {host.entry}: {other.entry} is already the {host.role} of "
                                 f"{host.az} (one node and one client host per AZ)")
        if host.address == control:
            raise fail(host.entry, f"address {host.address} is the control address")
        hosts.append(host)
    provision = raw.get("provision", True)
    if not isinstance(provision, bool):
        raise fail("provision", f"{provision!r} must be true (faultline makes the cluster) or false (yours)")
    if provision and "ports" in raw:
        raise fail("ports", "only with provision: false (the ports of a cluster of yours that partitions cut)")
    if provision and any(h.commands for h in hosts):
        entry = next(h for h in hosts if h.commands).entry
        raise fail(entry, "commands: only with provision: false (a provisioned cluster's processes are faultline's)")
    ports = () if provision else parse_ports(raw.get("ports"), lambda what: fail("ports", what))
    return Inventory(path, control, root.rstrip("/"), tuple(hosts), provision, ports)


def _host(path: Path, top: dict[str, Any], i: int, entry: Any) -> SshHost:
    label = f"hosts[{i}]"
    if isinstance(entry, dict) and isinstance(entry.get("address"), str):
        label += f" ({entry['address']})"

    def fail(what: str) -> UsageError:
        return UsageError(f"inventory {path}: {label}: {what}")

    if not isinstance(entry, dict):
        raise fail("must be a mapping (address, az, role, ...)")
    unknown = sorted(set(entry) - HOST_KEYS)
    if unknown:
        raise fail(f"unknown key {unknown[0]!r} (known: {', '.join(sorted(HOST_KEYS))})")

    def get(key: str, default: Any = None) -> Any:
        return entry.get(key, top.get(key, default))

    address = _address(entry.get("address"), lambda what: fail(f"address: {what}"))
    ssh_address = entry.get("ssh_address", address)
    if not isinstance(ssh_address, str) or not ssh_address:
        raise fail("ssh_address: must be a host name or address")
    az, role = entry.get("az"), entry.get("role")
    if not isinstance(az, str) or not AZ_RE.match(az):
        raise fail(f"az: {az!r} must be az1..az9")
    if role not in ROLES:
        raise fail(f"role: {role!r} must be 'node' (ZooKeeper + broker) or 'client' (the AZ's workloads)")
    port = get("port", 22)
    if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
        raise fail(f"port: {port!r} is not a TCP port")
    user = get("user", "root")
    if not isinstance(user, str) or not user:
        raise fail("user: must be a user name")
    sudo = get("sudo", False)
    if not isinstance(sudo, bool):
        raise fail(f"sudo: {sudo!r} must be true or false")
    power_off, power_on = (_power(entry, key, fail) for key in ("power_off", "power_on"))
    if (power_off is None) != (power_on is None):
        raise fail(f"{'power_on' if power_on is None else 'power_off'}: missing (power_off and power_on come together)")
    if power_off is not None and role != "node":
        raise fail("power_off: only node hosts are powered off (this is a client host)")
    timeout = get("power_timeout_s", DEFAULT_POWER_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise fail(f"power_timeout_s: {timeout!r} must be a number of seconds above 0")
    if "commands" in entry and role != "node":
        raise fail("commands: only node hosts run the cluster's processes (this is a client host)")
    commands = parse_commands(entry.get("commands"), lambda what: fail(f"commands: {what}"))
    return SshHost(label, address, ssh_address, port, user, _key_file(path, get, fail), sudo, az, role,
                   power_off, power_on, float(timeout), commands)


def _power(entry: dict[str, Any], key: str, fail: Any) -> str | None:
    value = entry.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise fail(f"{key}: {value!r} must be a command line (run with sh -c on the harness's machine)")
    return value


def _key_file(path: Path, get: Any, fail: Any) -> str | None:
    key_file, agent = get("key_file"), get("agent", False)
    if not isinstance(agent, bool):
        raise fail(f"agent: {agent!r} must be true or false")
    if agent:
        if not os.environ.get("SSH_AUTH_SOCK"):
            raise fail("agent: true, but SSH_AUTH_SOCK is not set (no agent to ask)")
        return None
    if not isinstance(key_file, str) or not key_file:
        raise fail("needs key_file (a private key) or agent: true")
    key = Path(key_file).expanduser()
    key = key if key.is_absolute() else path.parent / key
    if not key.is_file() or not os.access(key, os.R_OK):
        raise fail(f"key_file {key}: no readable file there")
    return str(key)


def _address(value: Any, fail: Any) -> str:
    try:
        return str(ipaddress.IPv4Address(value))
    except (ValueError, TypeError) as exc:
        raise fail(f"{value!r} is not an IPv4 address") from exc
