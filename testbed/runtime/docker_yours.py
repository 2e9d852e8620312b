"""The user's containers of a Docker inventory as their daemon describes them (read-only): each found by name or by
its compose labels, the container whose network namespace it runs in, and which of docker's own calls on it
would act on more than the role it is for.

A node's ZooKeeper (or KRaft controller) may run in the broker's container, or in a container of its own that
shares the broker's network namespace, or the broker in the ZooKeeper's (`network_mode: container:<other>`,
compose's `service:<other>`), so that the node has one address. Docker's stop or kill of the container whose
namespace the other role runs in takes that namespace down, and the other role's network with it; its start
makes a new namespace, which the other container does not join. `native_refusal` says so, in one line.
Must never: create, start, stop, change or remove a container or network (it reads them).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import docker
import docker.errors

from testbed.docker_inventory import DockerInventory, DockerNode
from testbed.errors import UsageError
from testbed.runtime.docker_api import docker_client

TEARS_DOWN = ("stop", "kill")  # docker's calls after which a container's network namespace is gone


def daemon(inventory: DockerInventory) -> docker.DockerClient:
    """A client of the inventory's daemon (else DOCKER_HOST, else the default socket)."""
    return docker_client(inventory.host)


def find(client: docker.DockerClient, inventory: DockerInventory, name: str) -> Any:
    """The container the inventory calls `name` (with compose_project: the one container of that service)."""
    where = f"inventory {inventory.path}"
    if inventory.compose_project is None:
        try:
            return client.containers.get(name)
        except docker.errors.NotFound:
            raise UsageError(f"{where}: no container {name!r} on the Docker daemon") from None
    found = client.containers.list(all=True, filters={"label": [
        f"com.docker.compose.project={inventory.compose_project}", f"com.docker.compose.service={name}"]})
    if len(found) != 1:
        raise UsageError(f"{where}: compose project {inventory.compose_project} has {len(found)} containers of "
                         f"service {name!r} (one per AZ's role: name the containers instead)")
    return client.containers.get(found[0].id)  # a listing's attributes are not the whole inspect


def net_owner(client: docker.DockerClient, container: Any) -> Any:
    """The container whose network namespace `container` runs in: itself, or the one its network mode
    `container:<id>` names."""
    mode = container.attrs["HostConfig"].get("NetworkMode") or ""
    if not mode.startswith("container:"):
        return container
    try:
        return client.containers.get(mode.split(":", 1)[1])
    except docker.errors.NotFound:
        raise UsageError(f"container {container.name} runs in the network namespace of {mode.split(':', 1)[1]}, "
                         f"which is not on the Docker daemon") from None


def native_refusal(client: docker.DockerClient, inventory: DockerInventory, node: DockerNode, role: str,
                   action: str) -> str | None:
    """Why docker's own `action` on the container of `role` may not run (None: it may, or the inventory gives a
    command line): a stop or kill of a container whose network namespace the node's other role runs in would cut
    that role off as well (the namespace goes with the container; its start makes a new one, which the other
    container does not join). Read-only."""
    if action not in TEARS_DOWN or node.command(role, action) is not None:
        return None
    other = "zookeeper" if role == "broker" else "broker"
    mine = find(client, inventory, node.container(role))
    theirs = find(client, inventory, node.container(other))
    if mine.id == theirs.id or net_owner(client, theirs).id != mine.id:
        return None  # one container for both: refused by the spec (harness.spec_existing)
    return (f"inventory {inventory.path}: {node.entry}: docker {action} {mine.name} ({role}) would take down the "
            f"network of {theirs.name} ({other}), which runs in its network namespace: give commands.{role}.{action}, "
            f"or run the {role} in the {other}'s namespace instead")


def check_native_calls(inventory: DockerInventory, nodes: int, calls: Iterable[tuple[str, str]]) -> None:
    """UsageError (one line naming the file and the node) for the first of `calls` ((role, action) pairs, what the
    spec's process faults run) that `native_refusal` refuses on one of the run's nodes. Read-only."""
    wanted = sorted(set(calls))
    if not wanted:
        return
    client = daemon(inventory)
    for node in (n for n in inventory.nodes if int(n.az[2:]) <= nodes):
        for role, action in wanted:
            why = native_refusal(client, inventory, node, role, action)
            if why is not None:
                raise UsageError(why)
