"""The screen a run prints before it touches anything: what it will do to each host, its commands and its topic.

`screen(path, specs)` is one spec file's: for a cluster faultline makes, where
its hosts come from and what runs on them; for a cluster of the user's (an
inventory with `provision: false`) each host with what it gets (nothing
installed on a node host; the fault rules and the ports they cut; the
inventory's commands the faults may run; the client hosts' venv and
processes), the topic made and deleted, and the spec's keys the cluster does
not take. `harness run --dry-run` prints it and stops (exit 0); a run against a
cluster of the user's prints it before it starts.
For a Docker inventory it also refuses (UsageError, one line) a process fault whose docker call would act on
more than its role (`testbed.runtime.docker_yours.native_refusal`), so a run or a dry run stops before anything.
Must never: connect to, create or change anything (it reads the specs and the inventory; for a Docker
inventory, its containers' addresses and network modes from their daemon, read only).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from harness.spec import Spec
from harness.spec_existing import ACTIONS_OF, not_applied
from nemesis.registry import fault_kind
from nemesis.schedule import RandomChaos, StartEvent
from nemesis.shapes import SCOPE_PORTS
from testbed.addressing import Host
from testbed.docker_inventory import DockerInventory, load_any_inventory
from testbed.inventory import Inventory
from testbed.kafka.existing_learn import topic_configs
from testbed.lifecycle import plan_of


def screen(path: Path, specs: Sequence[Spec]) -> str:
    """The screen for one spec file's configurations (see the module docstring)."""
    first = specs[0]
    names = ", ".join(s.configuration for s in specs if s.configuration is not None)
    names = f" ({names})" if names else ""
    faults = _faults(specs)
    if first.cluster.provision:
        plan = plan_of(first.cluster)
        lines = [f"{path}: {first.name}{names} on a cluster faultline makes ({first.cluster.runtime} runtime, Kafka "
                 f"{first.cluster.kafka_version}, {first.cluster.metadata}), removed at the end:"]
        lines += [f"  {h.name} {h.address}: " + ("its metadata quorum member and broker" if h.role == "node" else
                                                  "the AZ's clients") for h in plan.hosts]
        lines.append("  faults: " + ("; ".join(faults) or "none"))
        return "\n".join(lines)
    inventory = load_any_inventory(str(first.cluster.inventory))
    return "\n".join(_existing(path, specs, names, faults, inventory))


def _faults(specs: Sequence[Spec]) -> list[str]:
    """Each distinct fault of the configurations, as `name (target) at N s`."""
    said: list[str] = []
    for spec in specs:
        for item in spec.nemesis.items:
            if isinstance(item, StartEvent):
                f = item.fault
                text = (f"{f.fault}" + (f" ({', '.join(f.targets)})" if f.targets else "")
                        + (f" scope {f.scope}" if f.scope != "all" else "") + f" at {item.at:g} s")
            elif isinstance(item, RandomChaos):
                text = f"random chaos drawing {', '.join(sorted({f.fault for f in item.faults}))}"
            else:
                continue
            if text not in said:
                said.append(text)
    return said


def _existing(path: Path, specs: Sequence[Spec], names: str, faults: list[str],
              inventory: Inventory | DockerInventory) -> list[str]:
    first = specs[0]
    s = first.cluster
    plan = plan_of(s)  # a Docker inventory's: the containers' addresses, as the daemon says (read-only)
    ports = ", ".join(plan.cut_ports)
    partitions = any(fault_kind(f.fault).category == "partition" for spec in specs for _, f in spec.nemesis.faults())
    process = sorted({(f.fault, f.role) for spec in specs for _, f in spec.nemesis.faults()
                      if fault_kind(f.fault).category == "process"})
    layout = (f"replicas {[list(r) for r in s.replica_assignment]}" if s.replica_assignment is not None
              else f"{s.partitions} partitions, replication factor {s.replication_factor}")
    settings = ", ".join(f"{k} {v}" for k, v in topic_configs(s).items())
    docker = isinstance(inventory, DockerInventory)
    if isinstance(inventory, DockerInventory):  # docker's own calls that would cut another role off: refused here
        from testbed.runtime.docker_yours import check_native_calls

        check_native_calls(inventory, s.nodes, [(r, a) for name, role in process for r in _roles(role)
                                                for a in ACTIONS_OF.get(name, ())])
    hosts = "containers" if docker else "hosts"
    lines = [
        f"{path}: {first.name}{names} against a cluster of yours (inventory {inventory.path}, provision: false).",
        f"faultline installs, configures and restarts nothing on the node {hosts}; per configuration it:",
        f"  learns the brokers, controller, racks and log directories from the brokers at "
        f"{', '.join(f'{n.address}:9092' for n in plan.nodes)} (Metadata, DescribeConfigs: read only)",
        f"  makes one topic, faultline-<run prefix> ({layout}; {settings}), and deletes it at the end; no other "
        f"topic, consumer group or setting is touched",
    ]
    skipped = sorted({k for spec in specs for k in not_applied(spec.raw.get("cluster") or {})})
    if skipped:
        lines.append(f"  does not apply (your cluster's own values hold): {', '.join('cluster.' + k for k in skipped)}")
    lines.append("  faults: " + ("; ".join(faults) or "none"))
    where = " of each container's network namespace (written from this machine)" if docker else ""
    rules = (f"R = while a partition lasts, DROP rules for TCP ports {ports} to and from the cut hosts, in the run's "
             f"chains <run prefix>-in/-out hooked first in INPUT/OUTPUT{where} ({plan.control} accepted first), removed at "
             f"the end and by `sudo python -m harness clean --inventory {inventory.path.name}`; a cut of scope kafka "
             f"drops {', '.join(SCOPE_PORTS['kafka'])}, of scope zookeeper {', '.join(SCOPE_PORTS['zookeeper'])}")
    lines.append(f"per host ({rules if partitions else 'no partition: no fault rules'}):")
    width = max(len(h.name) for h in plan.hosts)
    for host in plan.hosts:
        does = ["R"] if partitions else []
        if isinstance(inventory, DockerInventory):
            does += _container_lines(host, inventory, process, first.cluster.runtime)
        elif host.role == "node":
            entry = inventory.host(host.name)
            does.append("nothing installed")
            for name, role in process:
                for r in _roles(role):
                    runs = [f"{a} `{entry.command(r, a)}`" for a in ACTIONS_OF.get(name, ())]
                    does.append(f"{name} of its {r}: {', '.join(runs)}")
        else:
            does.append(f"faultline's code and a venv under {inventory.root}; the AZ's producers and consumers, the "
                        f"observer of broker {host.index - 1}, the final drain")
        lines.append(f"  {host.name:<{width}} {host.address:<15} {'; '.join(does)}")
    return lines


def _roles(role: str) -> tuple[str, ...]:
    """The inventory's roles a process fault's `role` acts on."""
    return ("broker", "zookeeper") if role == "both" else (role,)


def _container_lines(host: Host, inventory: DockerInventory, process: Sequence[tuple[str, str]],
                     runtime: str) -> list[str]:
    """What a Docker inventory's host gets: a node's containers nothing but R and the faults' docker calls, a
    client faultline's own container."""
    if host.role == "client":
        return [f"faultline's container <run prefix>-{host.name} (faultline/client, on the brokers' network), "
                f"removed at the end: the AZ's producers and consumers, the observer of broker {host.index - 1}, "
                f"the final drain"]
    node = inventory.node(host.name)
    said = node.broker if node.zookeeper == node.broker else f"{node.broker} (broker), {node.zookeeper} (zookeeper)"
    does = [f"your container {said}: nothing installed or run in it"]
    for name, role in process:
        for r in _roles(role):
            does.append(f"{name} of its {r}: " + ", ".join(f"{a} `{node.says(r, a)}`" for a in ACTIONS_OF.get(name, ())))
    return does
