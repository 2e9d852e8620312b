"""What an inventory with `provision: false` says of a cluster faultline did not make: its process commands and ports.

    provision: false
    ports: [9092, 2181, 2888, 3888]        # the cluster's TCP ports; a partition drops these and nothing else
    hosts:
      - address: 10.0.1.11
        az: az1
        role: node
        commands:                          # run on the host over SSH (through `sudo -n` with sudo: true)
          broker: {stop: "systemctl stop kafka", start: "systemctl start kafka",
                   kill: "systemctl kill -s KILL kafka", pause: "systemctl kill -s STOP kafka",
                   resume: "systemctl kill -s CONT kafka"}
          zookeeper: {kill: "systemctl kill -s KILL zookeeper", start: "systemctl start zookeeper"}

A process fault runs the commands its action needs (`ACTIONS_OF`); one whose
commands an inventory lacks is refused at validation. Pure: parsing only.
Must never: accept a command that is not a non-empty string, or a port outside 1..65535.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

ROLES = ("broker", "zookeeper")  # the processes of a node host a command may act on (KRaft: its controller)
ACTIONS = ("stop", "start", "kill", "pause", "resume")
# A node's ports when the inventory names none: the broker listener, ZooKeeper's client, peer and election ports
# and a KRaft controller's listener (what faultline's own clients and the nemesis's views talk to).
DEFAULT_PORTS = (9092, 2181, 2888, 3888, 9093)
Commands = tuple[tuple[str, str, str], ...]  # (role, action, command line)


def parse_commands(raw: Any, fail: Callable[[str], Exception]) -> Commands:
    """A node host's `commands` mapping (role -> action -> command line) as sorted triples; `fail(what)` on a bad one."""
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        raise fail(f"must map a role ({', '.join(ROLES)}) to its actions ({', '.join(ACTIONS)})")
    out: list[tuple[str, str, str]] = []
    for role, actions in raw.items():
        if role not in ROLES:
            raise fail(f"unknown role {role!r} (known: {', '.join(ROLES)})")
        if not isinstance(actions, dict):
            raise fail(f"{role}: must map actions ({', '.join(ACTIONS)}) to command lines")
        for action, line in actions.items():
            if action not in ACTIONS:
                raise fail(f"{role}.{action}: unknown action (known: {', '.join(ACTIONS)})")
            if not isinstance(line, str) or not line.strip():
                raise fail(f"{role}.{action}: {line!r} must be a command line (run with sh -c on the host)")
            out.append((str(role), str(action), line))
    return tuple(sorted(out))


def parse_ports(raw: Any, fail: Callable[[str], Exception]) -> tuple[int, ...]:
    """The cluster's ports (default `DEFAULT_PORTS`), sorted and distinct."""
    if raw is None:
        return tuple(sorted(DEFAULT_PORTS))
    if not isinstance(raw, list) or not raw:
        raise fail(f"{raw!r} must be a non-empty list of TCP ports")
    for port in raw:
        if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
            raise fail(f"{port!r} is not a TCP port")
    return tuple(sorted(set(raw)))
