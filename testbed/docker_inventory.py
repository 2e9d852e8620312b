"""A Docker inventory: the containers of a Kafka cluster of the user's (always `provision: false`), per AZ.

    daemon: unix:///var/run/docker.sock # the Docker daemon they run on (default: DOCKER_HOST, else this socket);
                                        # a unix socket on this machine: fault rules go in through /proc
    compose_project: shop               # optional: `broker`/`zookeeper` below name services of this compose
                                        # project (found by the com.docker.compose.project/service labels)
    network: shop_default               # optional: the network the brokers share, when they share several
    ports: [9092, 2181, 2888, 3888]       # the cluster's TCP ports; a partition drops these and nothing else
    nodes:
      - az: az1
        broker: kafka-1                   # the container (or service) of az1's broker, listening on :9092
        zookeeper: zookeeper-1            # its ZooKeeper or KRaft controller (default: the broker's container;
                                          # another shares the broker's network namespace, either way round)
        commands:                         # optional, per role and action: a command line run inside that role's
          broker: {pause: "kill -STOP 1"} # container (docker exec, sh -c); default: docker's own stop, start,
                                          # kill, pause and unpause of the role's container

Shares `testbed.existing_spec` with the ssh inventory (roles, actions, command lines, ports). Every error is one
line naming the file and the entry. Pure: parsing only (the containers are found by `testbed.runtime.docker_foreign`).
Must never: accept an AZ twice, a container name that Docker would not take, or a daemon that is not a URL.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from testbed.errors import UsageError
from testbed.existing_spec import ROLES, Commands, parse_commands, parse_ports
from testbed.inventory import AZ_RE, SSH_KEYS, Inventory, parse_inventory, read_inventory_file

TOP_KEYS = {"daemon", "compose_project", "network", "ports", "nodes", "provision"}
NODE_KEYS = {"az", "broker", "zookeeper", "commands"}
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")  # what Docker takes as a container, service or network name
# What each action is when the inventory gives no command line: the daemon's own call on the role's container.
DOCKER_ACTIONS = {"stop": "docker stop", "start": "docker start", "kill": "docker kill", "pause": "docker pause",
                  "resume": "docker unpause"}


@dataclass(frozen=True)
class DockerNode:
    """One AZ's node: the containers (or compose services) of its broker and its ZooKeeper/controller."""

    entry: str  # how errors name it: "nodes[0] (az1)"
    az: str
    broker: str
    zookeeper: str  # the broker's container when the inventory names none
    commands: Commands = ()

    @property
    def name(self) -> str:
        """The plan's host name (az1-node, ...)."""
        return f"{self.az}-node"

    def container(self, role: str) -> str:
        """The container (or service) of `role` (broker, zookeeper)."""
        return self.broker if role == "broker" else self.zookeeper

    def command(self, role: str, action: str) -> str | None:
        """The inventory's command line for `action` of `role` (run inside its container); None: docker's own."""
        return next((line for r, a, line in self.commands if r == role and a == action), None)

    def says(self, role: str, action: str) -> str:
        """What `action` of `role` runs, in words: the command line, or docker's call on the container."""
        line = self.command(role, action)
        return f"docker exec {self.container(role)} sh -c {line!r}" if line else \
            f"{DOCKER_ACTIONS[action]} {self.container(role)}"


@dataclass(frozen=True)
class DockerInventory:
    path: Path
    nodes: tuple[DockerNode, ...]
    ports: tuple[int, ...]
    host: str | None = None  # `daemon`, the daemon's URL; None: DOCKER_HOST, else the default socket
    compose_project: str | None = None
    network: str | None = None
    provision: bool = False  # always: the containers are the user's

    def node(self, name: str) -> DockerNode:
        return next(n for n in self.nodes if n.name == name)

    def azs(self) -> list[str]:
        return sorted(n.az for n in self.nodes)

    def check_nodes(self, nodes: int) -> None:
        """UsageError unless az1..az`nodes` each have a node."""
        have = self.azs()
        for i in range(1, nodes + 1):
            if f"az{i}" not in have:
                raise UsageError(f"inventory {self.path}: the cluster needs {nodes} AZs (az1..az{nodes}), but nodes "
                                 f"names no az{i} (AZs named: {', '.join(have) or 'none'})")


def is_docker_inventory(path: str | Path) -> bool:
    """Whether the inventory file at `path` is a Docker one (it lists `nodes`, an ssh one `hosts`); False when
    unreadable."""
    try:
        raw = yaml.safe_load(Path(path).expanduser().read_text())
    except (OSError, yaml.YAMLError):
        return False
    return isinstance(raw, dict) and "nodes" in raw


def load_any_inventory(path: str | Path) -> Inventory | DockerInventory:
    """The inventory at `path`, read once: a Docker one (it lists `nodes`), else an ssh one (a file that cannot be
    read, or is no mapping, is refused as an ssh inventory: in one line naming it)."""
    where, raw = read_inventory_file(path, SSH_KEYS)
    return _parse(where, raw) if "nodes" in raw else parse_inventory(where, raw)


def load_docker_inventory(path: str | Path) -> DockerInventory:
    """Read and validate a Docker inventory; UsageError (one line naming the file and the entry) on any fault."""
    return _parse(*read_inventory_file(path, "'nodes' (and 'daemon', 'ports')"))


def _parse(path: Path, raw: dict[str, Any]) -> DockerInventory:
    def fail(where: str, what: str) -> UsageError:
        return UsageError(f"inventory {path}: {where}: {what}")

    unknown = sorted(set(raw) - TOP_KEYS)
    if unknown:
        raise fail(unknown[0], f"unknown key in a Docker inventory (known: {', '.join(sorted(TOP_KEYS))})")
    if raw.get("provision", False) is not False:
        raise fail("provision", "an inventory of `nodes` names containers of yours: only provision: false "
                                "(faultline makes a cluster of its own in containers with --runtime docker and no "
                                "inventory)")
    host = raw.get("daemon")
    if host is not None and (not isinstance(host, str) or "://" not in host):
        raise fail("daemon", f"{host!r} must be a Docker daemon's URL such as unix:///var/run/docker.sock")
    for key in ("compose_project", "network"):
        value = raw.get(key)
        if value is not None and (not isinstance(value, str) or not NAME_RE.match(value)):
            raise fail(key, f"{value!r} is not a Docker name")
    entries = raw.get("nodes")
    if not isinstance(entries, list) or not entries:
        raise fail("nodes", "must be a non-empty list of AZs (az, broker, zookeeper, commands)")
    nodes: list[DockerNode] = []
    for i, entry in enumerate(entries):
        node = _node(path, i, entry)
        if any(n.az == node.az for n in nodes):
            raise fail(node.entry, f"{node.az} is named twice (one node per AZ)")
        nodes.append(node)
    ports = parse_ports(raw.get("ports"), lambda what: fail("ports", what))
    return DockerInventory(path, tuple(sorted(nodes, key=lambda n: n.az)), ports, host, raw.get("compose_project"),
                           raw.get("network"))


def _node(path: Path, i: int, entry: Any) -> DockerNode:
    label = f"nodes[{i}]" + (f" ({entry['az']})" if isinstance(entry, dict) and isinstance(entry.get("az"), str)
                             else "")

    def fail(what: str) -> UsageError:
        return UsageError(f"inventory {path}: {label}: {what}")

    if not isinstance(entry, dict):
        raise fail("must be a mapping (az, broker, zookeeper, commands)")
    unknown = sorted(set(entry) - NODE_KEYS)
    if unknown:
        raise fail(f"unknown key {unknown[0]!r} (known: {', '.join(sorted(NODE_KEYS))})")
    az = entry.get("az")
    if not isinstance(az, str) or not AZ_RE.match(az):
        raise fail(f"az: {az!r} must be az1..az9")
    names = {}
    for role in ROLES:
        value = entry.get(role, entry.get("broker") if role == "zookeeper" else None)
        if not isinstance(value, str) or not NAME_RE.match(value):
            raise fail(f"{role}: {value!r} must name a container (or a service of docker.compose_project)")
        names[role] = value
    commands = parse_commands(entry.get("commands"), lambda what: fail(f"commands: {what}"))
    return DockerNode(label, az, names["broker"], names["zookeeper"], commands)

