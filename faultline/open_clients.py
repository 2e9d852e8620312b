"""The TCP connections this process holds to a network: what FaultlineCluster checks before its network goes.

A Kafka client (librdkafka) made inside a `with FaultlineCluster()` block and still open when the block ends
keeps its connections to the brokers' and proxies' addresses, and reconnects to them once they are gone. With
the cluster's network removed, those addresses are no longer on this machine, and its reconnects would follow
the machine's default route off it. `connections_to` lists such connections: every socket this process holds
(its /proc/self/fd entries) whose TCP peer (/proc/self/net/tcp: IPv4) is inside the network, in any state but
LISTEN. Linux only (elsewhere: none found).
Must never: read another process's sockets, or close or signal anything.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import struct
from pathlib import Path

PROC_SELF = Path("/proc/self")
LISTEN = "0A"  # /proc/net/tcp's state column (include/net/tcp_states.h)


def _socket_inodes(proc: Path) -> set[str]:
    inodes = set()
    try:
        fds = list((proc / "fd").iterdir())
    except OSError:
        return set()
    for fd in fds:
        try:
            target = os.readlink(fd)
        except OSError:  # closed since the listing
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    return inodes


def _peer(column: str) -> tuple[str, int]:
    """/proc/net/tcp's `rem_address` (the address's 32 bits as the kernel holds them, in hex; the port) as text."""
    address, port = column.split(":")
    return socket.inet_ntoa(struct.pack("=I", int(address, 16))), int(port, 16)


def connections_to(network: str, proc: Path = PROC_SELF) -> list[str]:
    """`address:port` of each TCP connection of this process whose peer lies in `network`, sorted."""
    net = ipaddress.IPv4Network(network)
    inodes = _socket_inodes(proc)
    try:
        lines = (proc / "net" / "tcp").read_text().splitlines()[1:]
    except OSError:
        return []
    found = []
    for line in lines:
        fields = line.split()
        if len(fields) < 10 or fields[3] == LISTEN or fields[9] not in inodes:
            continue
        address, port = _peer(fields[2])
        if ipaddress.IPv4Address(address) in net:
            found.append((ipaddress.IPv4Address(address), port))
    return [f"{address}:{port}" for address, port in sorted(found)]
