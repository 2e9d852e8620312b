"""The address plan: which host of a run gets which address on the run's network.

Pure data (each runtime checks the plan against what its hosts live on). Hosts per AZ i (1-based): a node (one
ZooKeeper server, one broker with id i-1) at .10+i and a client host at .20+i;
the control plane (the harness) at .1 on the bridge.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from testbed.errors import UsageError

# The runtimes' default networks, owned here (testbed.runtime.kinds' records and the Docker network range read them):
# netns lays a run out on DEFAULT_NETWORK; a docker run's network, and every network this project creates on a
# Docker daemon, lies inside DOCKER_NETWORK.
DEFAULT_NETWORK = "198.18.0.0/24"
DOCKER_NETWORK = "198.19.0.0/24"
MAX_NODES = 9


@dataclass(frozen=True)
class Host:
    """One host of the cluster: a node or an AZ's client host."""

    name: str  # e.g. "az1-node", "az2-client"
    role: str  # "node" or "client"
    az: str  # "az1".."azN"
    index: int  # 1-based AZ number
    address: str

    @property
    def broker_id(self) -> int:
        return self.index - 1

    @property
    def tag(self) -> str:
        """Short tag used in interface names (15-character limit): n1, c1, ..."""
        return f"{self.role[0]}{self.index}"


@dataclass(frozen=True)
class AddressPlan:
    network: str
    control: str
    prefixlen: int
    hosts: tuple[Host, ...]
    # The TCP ports a cut of every packet (scope `all`) drops, iptables' spelling ("9092", "2888:3888"); () every
    # packet. An inventory of a cluster faultline did not make (provision: false) names its cluster's ports.
    cut_ports: tuple[str, ...] = ()

    @property
    def nodes(self) -> tuple[Host, ...]:
        return tuple(h for h in self.hosts if h.role == "node")

    @property
    def clients(self) -> tuple[Host, ...]:
        return tuple(h for h in self.hosts if h.role == "client")

    def host(self, name: str) -> Host:
        for h in self.hosts:
            if h.name == name:
                return h
        raise KeyError(name)

    def node_of_az(self, az: str) -> Host:
        return next(h for h in self.nodes if h.az == az)

    def client_of_az(self, az: str) -> Host:
        return next(h for h in self.clients if h.az == az)

    def to_json(self) -> dict[str, object]:
        return {"network": self.network, "nodes": len(self.nodes)}


def make_plan(network: str = DEFAULT_NETWORK, nodes: int = 3) -> AddressPlan:
    """Lay out `nodes` AZs on `network`; raises UsageError for a plan that cannot work."""
    if nodes < 3:
        raise UsageError(f"--nodes {nodes}: a cluster needs at least 3 nodes (one per AZ, a ZooKeeper quorum)")
    if nodes > MAX_NODES:
        raise UsageError(f"--nodes {nodes}: at most {MAX_NODES} nodes are supported")
    try:
        net = ipaddress.IPv4Network(network, strict=True)
    except ValueError as exc:
        raise UsageError(f"--network {network}: not an IPv4 network ({exc})") from exc
    if net.num_addresses < 64:
        raise UsageError(f"--network {network}: too small, need at least a /26")
    base = net.network_address
    hosts: list[Host] = []
    for i in range(1, nodes + 1):
        hosts.append(Host(f"az{i}-node", "node", f"az{i}", i, str(base + 10 + i)))
        hosts.append(Host(f"az{i}-client", "client", f"az{i}", i, str(base + 20 + i)))
    return AddressPlan(str(net), str(base + 1), net.prefixlen, tuple(hosts))
