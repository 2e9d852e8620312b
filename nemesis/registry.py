"""The fault registry: one record per fault kind, and everything else about fault kinds read from it.

A record says a kind's name, its category, what it does, the spec keys it
takes (and which are required), the node roles and targets it accepts, the
runtime abilities it needs, its implementation and its words in the report.
Validation (`nemesis.spec.parse_fault`), the JSON Schema and docs/spec.md's
fault table (`nemesis.fault_schema`, `harness.spec_schema`), the runtime
checks (`harness.spec_checks`), the report's sentences (`report.faultwords`)
and the nemesis' dispatch (`fault_for`) all read these records; the names a
kind's journal rows carry are its name and its `journaled_as`.

Adding a fault of an existing category is its record here and its logic (a
shape function in `nemesis.faults` for a partition, an action for a process
fault, a `Fault` of its own for a workload or client fault). A new key needs
its JSON shape in `nemesis.fault_schema.FAULT_KEYS` and, unless it is a
degraded-link value, its reading in `nemesis.spec.parse_fault`.

Must never: hold a kind's logic, or be imported by an implementation (they sit below it).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from nemesis import fault_words, faults, operation_spec
from nemesis.clock_faults import CLOCK_JUMP, CLOCK_SKEW, CLOCK_STROBE
from nemesis.controller_membership import ADD_CONTROLLER, REMOVE_CONTROLLER
from nemesis.disk_faults import DISK_FAULT
from nemesis.fault_base import Fault
from nemesis.fault_spec import Category, FaultSpec, TargetRole
from nemesis.fault_words import Words
from nemesis.links import needs_shaper
from nemesis.migrate import FAULT as MIGRATE_FAULT
from nemesis.migrate import ZK_TO_KRAFT
from nemesis.operations import ROLLING_RESTART
from nemesis.reassign import REASSIGN
from nemesis.stray import STRAY_FAULT
from nemesis.upgrade import ROLLING_DOWNGRADE, ROLLING_UPGRADE
from nemesis.workload_faults import (
    HoldRequest,
    PauseWorkload,
    ReplaceWorkload,
    UpgradeClient,
    parse_client_upgrade,
)
from testbed.errors import SpecError
from testbed.journal_names import POWER_CUT, POWER_OFF, STRAY_PRODUCE
from testbed.runtime.kinds import Ability

# What each category's faults act on, for docs/spec.md.
CATEGORIES: Mapping[Category, str] = MappingProxyType({
    "partition": "cut links between hosts (firewall rules on every host at once)",
    "process": "signal the nodes' Kafka processes (kill, stop, pause, power)",
    "link": "degrade links between hosts (loss, delay, bandwidth), each value per direction",
    "workload": "act on a workload process of the spec (a producer)",
    "client": "the nemesis as a Kafka client of its own",
    "disk": "make the nodes' disks fail or slow down under a path of their data (their unsyncfs mounts)",
    "clock": "move the wall clock of the nodes' Kafka processes (their monotonic clocks and the host's stay true)",
    "operation": "an operator's action that runs on its own from its start while the schedule goes on; its stop "
                 "waits for it to end",
})


@dataclass(frozen=True)
class Need:
    """A runtime ability a fault needs, and when: given its spec and whether a power-off must drop unsynced writes
    (`cluster.lose_unsynced_writes`). A spec whose runtime lacks it is refused at validation."""

    ability: Ability
    when: Callable[[FaultSpec, bool], bool] = lambda spec, lose_unsynced: True


@dataclass(frozen=True)
class FaultKind:
    """One fault kind. `keys` are the spec keys it takes besides `fault` and `partition` (every kind takes
    `partition`); `values` are a degraded-link kind's value keys with their defaults (None: required)."""

    name: str
    category: Category
    doc: str  # what it does, for docs/spec.md
    implementation: Fault
    keys: tuple[str, ...] = ()
    required: tuple[str, ...] = ()
    roles: tuple[TargetRole, ...] = ()  # the `role` values it takes, when it takes `role` (default broker)
    single_target: bool = False  # `target` is one selector, not a list
    values: Mapping[str, float | None] = field(default_factory=dict)
    needs: tuple[Need, ...] = ()
    words: Words | None = None  # its sentence in the report, from its journal row's targets
    journaled_as: tuple[str, ...] = ()  # names its journal rows carry besides its own
    powers_off: bool = False  # cuts a node's power: the cluster is made ready for power cuts
    processes: tuple[str, ...] = ("producer",)  # a workload kind: the roles of the `process` it may name
    outcome: str | None = None  # a client kind: its start row's `detail` key holding its request's outcome
    # (`status`, `error_code`, `error`), which a scenario's `expect.faults` holds to an error code
    options: Callable[[str, Mapping[str, Any]], dict[str, Any]] | None = None  # an operation: reads its own keys
    since: tuple[int, ...] | None = None  # the first Kafka version that can do it (older ones refused at validation)

    @property
    def spec_keys(self) -> tuple[str, ...]:
        """Every key a spec of this kind may have besides `fault`."""
        return ("partition", *self.keys, *self.values)

    @property
    def journal_names(self) -> tuple[str, ...]:
        return (self.name, *self.journaled_as)


ROLES: tuple[TargetRole, ...] = ("broker", "zookeeper")
LINK_KEYS = ("between", "target", "ends")
SHAPED = Need(Ability.SHAPE_LINKS, lambda spec, _: spec.degrade is not None and needs_shaper(spec.degrade))


def _partition(name: str, shape: faults.PartitionShape, doc: str, words: Words, keys: tuple[str, ...],
               required: tuple[str, ...] = (), single_target: bool = False) -> FaultKind:
    return FaultKind(name, "partition", doc, faults.PartitionFault(shape), (*keys, "scope"), required,
                     single_target=single_target, words=words)


def _link(name: str, doc: str, values: dict[str, float | None]) -> FaultKind:
    return FaultKind(name, "link", doc, faults.LINK, LINK_KEYS, values=MappingProxyType(values), needs=(SHAPED,))


_KINDS: tuple[FaultKind, ...] = (
    _partition("isolate-az", faults.isolate_az, "cut every link between the target's AZ (its node and client "
               "hosts) and the other AZs", fault_words.isolated, ("target",), ("target",), single_target=True),
    _partition("cut-link", faults.cut_link, "cut the links `between` two targets, both ways or `one_way` (only "
               "packets from the first to the second); `ends: az` cuts every host of each AZ, `ends: node` only "
               "the node hosts", fault_words.link_cut, ("between", "one_way", "ends"), ("between",)),
    _partition("split", faults.split, "cut the AZs of `minority` (fewer than half the AZs) off from the rest",
               fault_words.split, ("minority",), ("minority",)),
    _partition("bridge", faults.bridge, "two halves that cannot hear each other, and a `middle` AZ that hears "
               "both (default: the plan's middle AZ)", fault_words.bridged, ("middle",)),
    _partition("majorities-ring", faults.majorities_ring, "every AZ hears a majority, but each a different one",
               fault_words.ring, ()),
    FaultKind("kill", "process", "SIGKILL the target's broker (or `role: zookeeper`), every target at once; its "
              "data stays; the stop starts it again", faults.ProcessFault(faults.kill), ("target", "role"),
              ("target",), ROLES, words=fault_words.processes("SIGKILL to", ", restarted when it stops")),
    FaultKind(POWER_OFF, "process", "every process of each target node dies at one instant (on the docker "
              "runtime, the container), and where the runtime keeps data on unsyncfs every write not fsynced is "
              f"dropped: journaled as `{POWER_CUT}`; the stop powers it on",
              faults.ProcessFault(faults.power_off, every_process=True), ("target",), ("target",),
              needs=(Need(Ability.LOSE_UNSYNCED, lambda spec, lose_unsynced: lose_unsynced),),
              words=fault_words.processes("power cut to", ": every process died at once, restarted when it stops"),
              journaled_as=(POWER_CUT,), powers_off=True),
    FaultKind("pause", "process", "SIGSTOP the broker (`role: zookeeper` or `both`); the stop sends SIGCONT",
              faults.ProcessFault(faults.pause, undo_resumes=True), ("target", "role"), ("target",),
              (*ROLES, "both"), words=fault_words.processes("SIGSTOP to", ", SIGCONT when it stops")),
    FaultKind("graceful-stop", "process", "SIGTERM the broker (or its ZooKeeper server) and wait for it to exit; "
              "the stop starts it again", faults.ProcessFault(faults.graceful_stop), ("target", "role"),
              ("target",), ROLES, words=fault_words.processes("clean shutdown of", ", restarted when it stops")),
    _link("lossy-link", "drop packets on the links `between` two targets, or between `target` and every other "
          "host, with probability `loss` (0 <= p < 1)", {"loss": None}),
    _link("slow-link", "delay packets on those links by `delay_ms` (one way), `jitter_ms` more at random (never "
          "reordered)", {"delay_ms": None, "jitter_ms": 0.0}),
    _link("throttle-link", "cap those links' bandwidth at `rate_kbit` kilobits per second",
          {"rate_kbit": None}),
    FaultKind("pause-workload", "workload", "SIGSTOP the workload process `process` (a producer of the spec, "
              "`producer-az1-0`, or a consumer without a kill schedule, `consumer-az1-0`: a group member paused past "
              "its session timeout comes back a zombie); the stop sends SIGCONT", PauseWorkload(), ("process",),
              ("process",), processes=("producer", "consumer")),
    FaultKind("replace-workload", "workload", "start a second process with `process`'s configuration and "
              "transactional.id (`<process>-r1`, its own journal and values), whose init_transactions() fences "
              "the first; it runs to the end of the run (the stop does nothing). `process` must be a "
              "transactional producer", ReplaceWorkload(), ("process",), ("process",)),
    FaultKind("upgrade-client", "workload", "stop `process` (a producer, or a consumer without a kill schedule) "
              "cleanly (SIGTERM: a producer flushes, a group member leaves its group) and start its configuration "
              "again as `<process>-u1` on confluent-kafka `to_version` (its venv made before the run; on ssh by each "
              "client host at bring-up), "
              "as an application rolled onto a new client; it runs to the end (the stop does nothing)",
              UpgradeClient(), ("process", "to_version"), ("process", "to_version"),
              processes=("producer", "consumer"), options=parse_client_upgrade),
    FaultKind("hold-request", "workload", "the request-holding proxy of `process` (a producer with `proxy: true`) "
              "holds its next `api` request, and everything after it on that connection, until the stop; then "
              "forwards it late on the same connection (with `release_before`: just before the client's next "
              "request of that kind). Starts once a request was caught", HoldRequest(),
              ("process", "api", "release_before"), ("process",)),
    FaultKind(STRAY_PRODUCE, "client", "send one transactional record to the leader of `partition` under a fresh "
              "transactional.id whose coordinator was never told of the partition (KAFKA-12671's hanging "
              "transaction); the stop does nothing: no marker will ever close it", STRAY_FAULT,
              outcome="stray"),
    # -- operations (issue 39): keep this block together
    FaultKind("rolling-restart", "operation", "restart every broker in turn: a clean shutdown (SIGTERM), a start, "
              "then before the next either a wait until every partition's ISR is full again (`wait: isr`, at most "
              "`wait_s`, past which the roll stops there) or a fixed pause (`wait: <seconds>`); the controller's "
              "broker `controller_at` last (default), first or a position; each broker's step an `info` row. The "
              "stop waits for the roll to end", ROLLING_RESTART, operation_spec.ROLL_KEYS,
              words=fault_words.rolled, options=operation_spec.parse_roll),
    FaultKind("rolling-upgrade", "operation", "`rolling-restart`'s roll with each broker started on Kafka "
              "`to_version` (later than the brokers'). ZooKeeper mode: `inter.broker.protocol.version` (below 2.4 "
              "also `log.message.format.version`) pinned to the old version as the upgrade notes prescribe; with "
              "`bump` (default) a second roll bumps the protocol to the new version's; ZooKeeper stays on its "
              "version. KRaft: the controllers' roll (the active one last), then the brokers'; with `bump` the "
              "finalized `metadata.version` then raised to the new release's level (`kafka-features upgrade`, "
              "journaled). Each step's `info` row names the version, protocol, role and roll. The stop waits for "
              "every roll", ROLLING_UPGRADE, operation_spec.UPGRADE_KEYS, ("to_version",), words=fault_words.upgraded,
              options=operation_spec.parse_upgrade),
    FaultKind("rolling-downgrade", "operation", "`rolling-restart`'s roll with each broker started on the older "
              "Kafka `to_version`, where the notes allow it. ZooKeeper mode: the protocol (and format) in force kept, "
              "refused unless pinned at or below the older version (a `rolling-upgrade` with `bump: false`, or "
              "`cluster.broker_overrides`). KRaft: the finalized `metadata.version` first lowered to the older "
              "release's level where above it (refused where a level between changed the metadata's form, or onto a "
              "release that does not know the level the nodes were formatted at) and every node's metadata log then "
              "waited for to hold a snapshot past it (the cluster snapshots every 5 s: an older release replays the "
              "log after its newest snapshot), then the brokers' roll, then the controllers'. The stop waits for every roll", ROLLING_DOWNGRADE, operation_spec.DOWNGRADE_KEYS,
              ("to_version",), words=fault_words.upgraded, options=operation_spec.parse_downgrade),
    FaultKind("reassign", "operation", "move `partitions` of `topic` (`test`: the topic under test, "
              "`__consumer_offsets`, `__transaction_state`) to the brokers `replicas` through the admin API "
              "(AlterPartitionReassignments, Kafka 2.4 on) once the metadata lists them all, with a replication "
              "throttle of `throttle_kbit` while it runs; its progress `info` rows until done. The stop waits for it (`wait_s`), then cancels it (journaled)",
              REASSIGN, operation_spec.REASSIGN_KEYS, ("replicas",), words=fault_words.reassigned,
              options=operation_spec.parse_reassign, since=(2, 4)),
    FaultKind(MIGRATE_FAULT, "operation", "migrate a ZooKeeper cluster to KRaft (KIP-866, Kafka 3.4 to 3.9) as 3.9's "
              "notes prescribe: a KRaft controller per node formatted with ZooKeeper's cluster id and started in "
              "migration mode; a roll with the migration enabled on each broker (`rolling-restart`'s keys); a wait "
              "(at most `wait_s`) for the active controller's \"Completed migration of metadata\"; a roll into "
              "KRaft brokers; each controller restarted without the migration. Each phase and step an `info` row "
              "naming what each node's broker and controller run. The stop waits for it", ZK_TO_KRAFT,
              operation_spec.ROLL_KEYS, words=fault_words.migrated, options=operation_spec.parse_roll,
              since=(3, 4)),
)
# -- disk faults (nemesis.disk_faults): one rule on each target node's unsyncfs mount, start to stop --------------
DISK_NEEDS = (Need(Ability.DISK_FAULTS),)  # and the data on unsyncfs: harness.spec_checks.check_runtime_can
DISK_KEYS = ("target", "path", "log_dir")
_KINDS += (
    FaultKind("disk-error", "disk", "EIO on the `ops` (write, fsync, read) of the files under `path` of each "
              "target node, each call with `probability` (default every call); the stop ends it", DISK_FAULT,
              (*DISK_KEYS, "ops", "probability"), ("target",), needs=DISK_NEEDS,
              words=fault_words.disk("EIO on", "")),
    FaultKind("disk-full", "disk", "ENOSPC on a write that would grow the files under `path` of each target "
              "node more than `free_bytes` past what they held at the start; the stop gives the space back",
              DISK_FAULT, (*DISK_KEYS, "free_bytes"), ("target",), needs=DISK_NEEDS,
              words=fault_words.disk("disk full under", "")),
    FaultKind("slow-disk", "disk", "every fsync under `path` of each target node waits `fsync_delay_ms` plus a "
              "uniform 0..`fsync_jitter_ms` (with `delay_writes`, every write too); the stop ends it", DISK_FAULT,
              (*DISK_KEYS, "fsync_delay_ms", "fsync_jitter_ms", "delay_writes"), ("target", "fsync_delay_ms"),
              needs=DISK_NEEDS, words=fault_words.disk("slow fsync on", "")),
)
# -- clock faults (nemesis.clock_faults): each hit process's clock offset file, which libfaketime re-reads ----------
CLOCK_NEEDS = (Need(Ability.SHIFT_CLOCKS),)
CLOCK_KEYS = ("target", "role", "offset_ms")
_KINDS += (
    FaultKind("clock-skew", "clock", "the wall clock of each target's broker (`role: zookeeper` or `both`) reads "
              "`offset_ms` off true time (negative: behind) from the start; the stop puts it back", CLOCK_SKEW,
              CLOCK_KEYS, ("target", "offset_ms"), (*ROLES, "both"), needs=CLOCK_NEEDS,
              words=fault_words.clock("clock of", "skewed by", ", back to true time when it stops")),
    FaultKind("clock-jump", "clock", "the wall clock of each target's broker (`role: zookeeper` or `both`) steps "
              "by `offset_ms` (negative: back) at the start and stays there; the stop changes nothing (a later jump "
              "steps it again, heal-all puts it back)", CLOCK_JUMP, CLOCK_KEYS, ("target", "offset_ms"),
              (*ROLES, "both"), needs=CLOCK_NEEDS, words=fault_words.clock("clock of", "stepped by", "")),
    FaultKind("clock-strobe", "clock", "the wall clock of each target's broker (`role: zookeeper` or `both`) jumps "
              "by `offset_ms` and back, `rate` times a second (at most 0.5), from the start; the stop leaves it back "
              "where it was", CLOCK_STROBE, (*CLOCK_KEYS, "rate"), ("target", "offset_ms", "rate"),
              (*ROLES, "both"), needs=CLOCK_NEEDS,
              words=fault_words.clock("clock of", "strobed by", ", on and off until it stops")),
)
# -- KRaft controller membership (nemesis.controller_membership, KIP-853): a dynamic quorum's voters changed --------
_KINDS += (
    FaultKind("remove-controller", "operation", "remove the `target` node's KRaft controller (`controller`: the "
              "active one) from a dynamic quorum's voters (`cluster.kraft_quorum: dynamic`, RemoveRaftVoter to the "
              "active controller; a removed leader resigns), its process stopped `shutdown` after (default), before "
              "or never; `info` rows with the voter set before and after. The stop waits for it",
              REMOVE_CONTROLLER, operation_spec.REMOVE_CONTROLLER_KEYS, ("target",), single_target=True,
              words=fault_words.controller_removed, options=operation_spec.parse_membership, since=(3, 9)),
    FaultKind("add-controller", "operation", "make the `target` node's KRaft controller (default: the one node "
              "whose controller is not a voter) a new voter of a dynamic quorum: its metadata directory formatted "
              "afresh (a new directory id), started as an observer and, once caught up, added (AddRaftVoter); `info` "
              "rows with the voter set before and after. The stop waits for it", ADD_CONTROLLER,
              operation_spec.ADD_CONTROLLER_KEYS, single_target=True, words=fault_words.controller_added,
              options=operation_spec.parse_membership, since=(3, 9)),
)
_BY_NAME: dict[str, FaultKind] = {kind.name: kind for kind in _KINDS}  # the registry: read it at call time


def fault_kinds() -> tuple[FaultKind, ...]:
    """Every kind, in the registry's order (the docs' and the schema's)."""
    return tuple(_BY_NAME.values())


def fault_names() -> tuple[str, ...]:
    return tuple(_BY_NAME)


def fault_kind(name: str) -> FaultKind:
    """The record of the kind called `name`; SpecError naming the known ones if there is none."""
    try:
        return _BY_NAME[name]
    except (KeyError, TypeError):
        raise SpecError(f"unknown fault {name!r}; expected one of {', '.join(_BY_NAME)}") from None


def of_category(category: Category) -> tuple[str, ...]:
    """The names of the kinds of `category`, in the registry's order."""
    return tuple(kind.name for kind in _BY_NAME.values() if kind.category == category)


def journal_names() -> tuple[str, ...]:
    """Every name the nemesis table's `fault` column may carry for a fault kind's rows."""
    return tuple(name for kind in _BY_NAME.values() for name in kind.journal_names)


def fault_for(spec: FaultSpec) -> Fault:
    """The implementation that starts and stops `spec`."""
    return fault_kind(spec.fault).implementation


@contextlib.contextmanager
def registered(kind: FaultKind) -> Iterator[FaultKind]:
    """The registry with `kind` in it for the block (a test's, an experiment's); ValueError if its name is taken."""
    if kind.name in _BY_NAME:
        raise ValueError(f"a fault kind named {kind.name} is already registered")
    _BY_NAME[kind.name] = kind
    try:
        yield kind
    finally:
        del _BY_NAME[kind.name]
