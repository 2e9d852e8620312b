"""The spec against a cluster faultline did not make (an inventory with `provision: false`): what it may not do there.

faultline installs and configures nothing on such a cluster's hosts and touches
no topic, group or setting but its own topic's. So a spec is refused, one line
naming the key, for: a fault with no command in the inventory (a process fault
runs the node host's `commands`, `testbed.existing_spec`; in a Docker inventory every action has docker's own
call, refused where it would act on a broker and its ZooKeeper at once: one container for both), a fault that needs
faultline's own processes on the hosts (power cuts, degraded links, the
request-holding proxy) or that leaves state in the cluster (a stray
transaction), more topics than its own (`extra_topics`, transformers) and
consumer groups (they would commit offsets on the cluster). Keys that configure
the brokers are not refused: the cluster's own configuration holds, and the
preflight screen (harness.preflight) names the keys it does not apply.
Must never: start, create or connect to anything (it reads the inventory file).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.spec_consumers import ConsumerGroup
from harness.spec_types import fail
from nemesis.registry import fault_kind
from nemesis.schedule import Schedule
from testbed.docker_inventory import DockerInventory, load_any_inventory
from testbed.inventory import Inventory
from testbed.kafka.config import ClusterSettings

# The inventory commands each process fault runs: its action, then its undo.
ACTIONS_OF = {"kill": ("kill", "start"), "graceful-stop": ("stop", "start"), "pause": ("pause", "resume")}
# Cluster keys that configure brokers, ZooKeeper or the JVMs: on a cluster of the user's, its own values hold.
NOT_APPLIED = ("replica_lag_time_max_ms", "zookeeper_session_timeout_ms",
               "broker_heap_mb", "zookeeper_heap_mb", "controller", "broker_overrides", "zookeeper_force_sync",
               "kraft_controllers")
WHY = "with provision: false (a cluster of yours, inventory {path})"


def existing_inventory(inventory: str | None) -> Inventory | DockerInventory | None:
    """The run's inventory when it says `provision: false`; None otherwise (and when the file is not there yet:
    provisioning refuses it in its own line)."""
    if inventory is None or not Path(inventory).is_file():
        return None
    loaded = load_any_inventory(inventory)
    return None if loaded.provision else loaded


def check_existing(schedule: Schedule, cluster: ClusterSettings,
                   consumers: Sequence[ConsumerGroup], transformers: Sequence[object]) -> None:
    """Refuse what a run may not do to a cluster of the user's (see the module docstring)."""
    if cluster.provision:
        return
    inventory = load_any_inventory(str(cluster.inventory))
    why = WHY.format(path=inventory.path)
    if cluster.extra_topics:
        raise fail("cluster.extra_topics", f"{why} faultline makes and deletes only its own topic")
    if transformers:
        raise fail("workloads.transformers", f"{why} faultline uses only its own topic and no consumer group")
    for i, group in enumerate(consumers):
        if group.mode != "assign":
            raise fail(f"workloads.consumers[{i}].mode", f"{group.mode}: {why} consumer groups would commit offsets "
                        f"on your cluster; use mode: assign")
    for i, fault in schedule.faults():
        record = fault_kind(fault.fault)
        if record.powers_off:
            raise fail(f"nemesis[{i}].fault", f"{fault.fault}: {why} a power cut needs faultline's own processes "
                        f"and filesystems on the node hosts")
        if record.category == "link":
            raise fail(f"nemesis[{i}].fault", f"{fault.fault}: {why} a degraded link needs faultline's own delay "
                        f"process and qdiscs on the hosts")
        if record.category == "client":
            raise fail(f"nemesis[{i}].fault", f"{fault.fault}: {why} it would leave a hanging transaction in "
                        f"your cluster")
        if record.category == "process" and isinstance(inventory, Inventory):
            _check_commands(i, fault.fault, fault.role, inventory, why)
        elif record.category == "process" and isinstance(inventory, DockerInventory):
            _check_containers(i, fault.fault, fault.role, inventory, why)


def _check_commands(i: int, name: str, role: str, inventory: Inventory, why: str) -> None:
    roles = ("broker", "zookeeper") if role == "both" else (role,)
    for host in (h for h in inventory.hosts if h.role == "node"):
        for r in roles:
            for action in ACTIONS_OF.get(name, ()):
                if host.command(r, action) is None:
                    raise fail(f"nemesis[{i}].fault", f"{name} (role {r}): {why} it runs the inventory's "
                                f"commands.{r}.{action} on each node host, and {host.entry} has none")


def _check_containers(i: int, name: str, role: str, inventory: DockerInventory, why: str) -> None:
    """Docker's call on a container that holds both a broker and its ZooKeeper (or KRaft controller) acts on both:
    refused unless the inventory gives the role's command line for it."""
    roles = ("broker", "zookeeper") if role == "both" else (role,)
    for node in inventory.nodes:
        for r in roles:
            for action in ACTIONS_OF.get(name, ()):
                if node.zookeeper == node.broker and node.command(r, action) is None:
                    raise fail(f"nemesis[{i}].fault", f"{name} (role {r}): {why} {node.entry}'s broker and "
                                f"zookeeper share the container {node.broker}, and docker's {action} would act on "
                                f"both: name a zookeeper container or commands.{r}.{action}")


def not_applied(resolved_cluster: dict[str, Any]) -> list[str]:
    """The spec's cluster keys a cluster of the user's does not take (its own configuration holds)."""
    return [key for key in NOT_APPLIED if key in resolved_cluster]
