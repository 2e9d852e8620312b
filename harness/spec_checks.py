"""The spec's checks of one part against another that the key list cannot make: the broker version against
the producers, the runtime against the faults, the metadata mode (KRaft) against the story and its faults.

Must never: start, create or connect to anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from harness.spec_types import fail
from nemesis.fault_spec import FaultSpec
from nemesis.registry import fault_kind
from nemesis.schedule import Schedule
from testbed.dist.metadata_versions import Level, downgrade_problem, release_level
from testbed.dist.versions import (
    FORMAT_KEY,
    PROTOCOL_KEY,
    parse,
    protocol_order,
    protocol_version,
    release,
    upgrade_pins,
)
from testbed.errors import DistributionError
from testbed.kafka.config import ClusterSettings
from testbed.runtime.kinds import Ability, RuntimeKind, can, kind
from workloads.settings import canonical

if TYPE_CHECKING:
    from harness.spec import ProducerGroup

ROLLS = ("rolling-upgrade", "rolling-downgrade")  # the faults that roll the brokers onto another version


def check_version_can(producers: Sequence[ProducerGroup], kafka_version: str) -> None:
    """Refuse what the spec's broker version cannot take: idempotent or transactional producers before 0.11
    (librdkafka refuses idempotence against such a broker; KIP-98 came with 0.11)."""
    if release(kafka_version).idempotence:
        return
    for i, group in enumerate(producers):
        given = canonical(group.settings)
        for key, on in (("enable.idempotence", str(given.get("enable.idempotence", False)).lower() == "true"),
                        ("transactional.id", "transactional.id" in given)):
            if on:
                raise fail(f"workloads.producers[{i}].settings.{key}", f"Kafka {kafka_version} has no idempotent "
                            f"or transactional producers (they came with 0.11, KIP-98): drop it or choose 0.11 on")


def check_metadata_can(resolved: dict[str, Any], schedule: Schedule, cluster: ClusterSettings) -> None:
    """Refuse on KRaft a ZooKeeper-only story (its `zookeeper_only` reason), and, with combined KRaft nodes, a
    fault on a node's ZooKeeper/controller process apart (there is none)."""
    if not cluster.kraft:
        return
    if resolved.get("zookeeper_only"):
        raise fail("zookeeper_only", f"a ZooKeeper-only story, refused on KRaft (Kafka {cluster.kafka_version}, "
                    f"metadata kraft): {resolved['zookeeper_only']}")
    if cluster.quorum_role is not None:
        return
    for i, fault in schedule.faults():
        if fault.role == "zookeeper":
            raise fail(f"nemesis[{i}].role", "zookeeper: combined KRaft nodes (kraft_controllers combined) have "
                        "no controller process apart from the broker; use kraft_controllers separate")


def check_faults_can(schedule: Schedule, cluster: ClusterSettings) -> None:
    """Refuse a fault the spec's Kafka version cannot do (its record's `since`: a reassignment needs KIP-455's
    admin API, 2.4 on), and a reassignment to a broker the cluster does not have."""
    for i, fault in schedule.faults():
        since = fault_kind(fault.fault).since
        if since is not None and parse(cluster.kafka_version) < since:
            raise fail(f"nemesis[{i}].fault", f"{fault.fault} needs Kafka {'.'.join(map(str, since))} or later; "
                        f"this spec runs {cluster.kafka_version}")
        unknown = [b for b in fault.options.get("replicas", ()) if b >= cluster.nodes]
        if unknown:
            raise fail(f"nemesis[{i}].replicas", f"no broker {', '.join(map(str, unknown))} in a cluster of "
                        f"{cluster.nodes} (brokers 0 to {cluster.nodes - 1})")


def check_upgrades(schedule: Schedule, cluster: ClusterSettings) -> tuple[str, ...]:
    """Refuse a `rolling-upgrade` or `rolling-downgrade` the cluster cannot do, taken in the schedule's order from the
    version, protocol and metadata.version in force: a version the table has no row for, not later (earlier) than the
    brokers' then, without the cluster's metadata mode, a ZooKeeper-mode downgrade while the protocol or message
    format in force is above the older version's, a KRaft downgrade across a metadata.version Kafka will not lower,
    a runtime whose nodes cannot run a second version or that version's Java. Returns the versions the run rolls to
    (their jars are fetched before anything starts)."""
    hosts, versions = kind(cluster.runtime), []
    rolls = [(i, fault) for i, fault in schedule.faults() if fault.fault in ROLLS]
    if not rolls:  # a cluster that never rolls needs no metadata.version table (4.4.0's levels are not in it)
        return ()
    running = cluster.kafka_version
    pins = _pins_in_force(cluster.broker_overrides, running)
    try:
        metadata = release_level(running) if cluster.kraft else None
    except DistributionError as exc:
        raise fail(f"nemesis[{rolls[0][0]}].fault", str(exc)) from None
    for i, fault in rolls:
        down, where, to = fault.fault == "rolling-downgrade", f"nemesis[{i}].to_version", fault.options["to_version"]
        try:
            row = release(to)
            level = release_level(to) if cluster.kraft else None
        except DistributionError as exc:
            raise fail(where, str(exc).removeprefix(f"kafka_version {to}: ")) from None
        if parse(to) == parse(running):
            raise fail(where, f"{to} is the version the brokers run then: a {fault.fault} needs another")
        if (parse(to) < parse(running)) != down:
            raise fail(where, f"{to} is not {'older' if down else 'later'} than the brokers' {running} then (use "
                       f"rolling-{'upgrade' if down else 'downgrade'} for that way)")
        mode = "kraft" if cluster.kraft else "zookeeper"
        if mode not in row.metadata_modes:
            raise fail(where, f"Kafka {to} runs only on KRaft: a ZooKeeper-mode cluster cannot roll onto it (3.9 is "
                       f"the last version with ZooKeeper)" if mode == "zookeeper" else f"Kafka {to} has no "
                       f"production KRaft (from 3.3, KIP-833): a KRaft cluster cannot roll onto it")
        if hosts.no_second_version is not None:
            raise fail(f"nemesis[{i}].fault", f"{fault.fault} on the {hosts.name} runtime is not built: "
                       f"{hosts.no_second_version} (use --runtime netns)")
        if cluster.kraft and hosts.no_kraft_roll is not None:
            raise fail(f"nemesis[{i}].fault", f"{fault.fault} on KRaft on the {hosts.name} runtime is not built: "
                       f"{hosts.no_kraft_roll} (use --runtime netns)")
        if hosts.node_javas is not None and row.java not in hosts.node_javas:
            raise fail(where, f"Kafka {to} runs on Java {row.java}, which the {hosts.name} runtime's nodes do not have")
        if metadata is not None and level is not None:
            formatted = release_level(cluster.kafka_version)
            if down and formatted.level > level.level:
                raise fail(where, f"a KRaft downgrade to {to} on nodes formatted by Kafka {cluster.kafka_version}: "
                           f"their bootstrap.checkpoint holds metadata.version {formatted.name}, which every start "
                           f"reads and Kafka {to} does not know (\"No MetadataVersion with metadata version "
                           f"{formatted.level}\"); start the cluster on {to} or older and roll up and back")
            metadata = _kraft_metadata(where, running, to, metadata, level, down, fault.options.get("bump", True))
        else:
            pins = _zookeeper_pins(where, running, to, pins, down, fault.options.get("bump", True))
        running = to
        versions.append(to)
    return tuple(dict.fromkeys(versions))


def check_migrations(schedule: Schedule, cluster: ClusterSettings) -> None:
    """Refuse a `zk-to-kraft` the cluster cannot do (its `since`, 3.4, is `check_faults_can`'s): a KRaft cluster
    (nothing to migrate), a runtime whose nodes cannot host the controllers, several log directories before 3.7
    (Kafka refuses a JBOD migration below that protocol), a second migration, or one beside a rolling upgrade or
    downgrade (the migration restarts the brokers on the cluster's version; the notes advise against both at once)."""
    hosts = kind(cluster.runtime)
    mine = [i for i, fault in schedule.faults() if fault.fault == "zk-to-kraft"]
    for i in mine:
        where = f"nemesis[{i}].fault"
        if cluster.kraft:
            raise fail(where, f"zk-to-kraft: this spec's cluster is KRaft already (Kafka {cluster.kafka_version}, "
                       f"metadata kraft; 4.0 on has no ZooKeeper mode): nothing to migrate (use metadata: zookeeper, "
                       f"Kafka 3.4 to 3.9)")
        if hosts.no_migration is not None:
            raise fail(where, f"zk-to-kraft on the {hosts.name} runtime: {hosts.no_migration} (use --runtime netns)")
        if cluster.log_dirs > 1 and parse(cluster.kafka_version) < (3, 7):
            raise fail(where, f"zk-to-kraft with {cluster.log_dirs} log directories needs Kafka 3.7 or later (JBOD "
                       f"migration); this spec runs {cluster.kafka_version}")
        if i != mine[0]:
            raise fail(where, f"a second zk-to-kraft: the cluster migrates once (nemesis[{mine[0]}])")
        roll = next(((j, f.fault) for j, f in schedule.faults() if f.fault in ROLLS), None)
        if roll is not None:
            raise fail(where, f"zk-to-kraft beside a {roll[1]} (nemesis[{roll[0]}]) is not built: the "
                       f"migration restarts the brokers on the cluster's {cluster.kafka_version}")


def _pins_in_force(overrides: dict[str, str], version: str) -> dict[str, str]:
    """The inter-broker protocol and message format a ZooKeeper-mode broker of `version` runs: the spec's pins, or
    its version's own (the format key is ignored from a 3.0 protocol on: 3.0 stands for any later one)."""
    own = protocol_version(version)
    return {PROTOCOL_KEY: overrides.get(PROTOCOL_KEY, own),
            FORMAT_KEY: overrides.get(FORMAT_KEY, own if parse(version) < (3, 0) else "3.0")}


def _zookeeper_pins(where: str, running: str, to: str, pins: dict[str, str], down: bool, bump: bool) -> dict[str, str]:
    """The pins in force after a roll from `running` to `to`; a downgrade refused while they are above `to`'s
    (Kafka's upgrade notes: a downgrade is possible only while the protocol and format are still pinned)."""
    if down:
        above = [f"{k} {v}" for k, v in pins.items() if protocol_order(v) > protocol_order(protocol_version(to))]
        if above:
            raise fail(where, f"a downgrade from {running} to {to} with {' and '.join(above)} in force: Kafka allows "
                       f"a downgrade only while the protocol and message format are pinned at or below the older "
                       f"version's {protocol_version(to)} (a rolling-upgrade with bump: false before it)")
        return pins
    if bump:
        return _pins_in_force({}, to)
    return {**pins, **upgrade_pins(running)}


def _kraft_metadata(where: str, running: str, to: str, metadata: Level, level: Level, down: bool,
                    bump: bool) -> Level:
    """The finalized metadata.version after a KRaft roll from `running` to `to`; a downgrade refused while the level
    in force is above `to`'s and Kafka will not lower it (testbed.dist.metadata_versions). Where it will, the roll
    lowers it and waits for every node's snapshot past the lowering first (testbed.kafka.snapshots), since `to`'s
    processes would replay the raised level from the metadata log."""
    if not down:
        return level if bump else metadata
    if metadata.level <= level.level:
        return metadata
    problem = downgrade_problem(metadata, level)
    if problem is None:
        return level
    raise fail(where, f"a KRaft downgrade from {running} to {to} needs metadata.version at {level.name} or below: "
               f"{problem}")


def powers_off(schedule: Schedule) -> bool:
    """Whether the nemesis may power a node off (a `power-off` event, or random chaos that can draw one)."""
    return any(fault_kind(f.fault).powers_off for _, f in schedule.faults())


def shifts_clocks(schedule: Schedule) -> tuple[str, ...]:
    """The roles whose clocks the nemesis may shift (its `clock` faults', `both` as both): `broker`, `zookeeper`."""
    roles = {r for _, f in schedule.faults() if f.category == "clock"
             for r in (("broker", "zookeeper") if f.role == "both" else (f.role,))}
    return tuple(sorted(roles))


def check_runtime_can(schedule: Schedule, runtime: str, lose_unsynced: bool) -> None:
    """Refuse a fault the spec's runtime cannot apply: each ability its record needs (`nemesis.registry`), e.g.
    delays and bandwidths need link shaping (a `LinkShaper`); a power-off that is to drop unsynced writes
    (`cluster.lose_unsynced_writes`, the default) needs a runtime that drops them (`LosesUnsyncedWrites`), or the
    verdict would be more optimistic than a real power cut's."""
    record = kind(runtime)
    for i, fault in schedule.faults():
        if fault.category == "disk" and not lose_unsynced:
            raise fail(f"nemesis[{i}].fault", f"{fault.fault} acts on the nodes' unsyncfs mounts, and "
                       f"cluster.lose_unsynced_writes: false keeps their data off them (set it true)")
        for need in fault_kind(fault.fault).needs:
            if need.when(fault, lose_unsynced) and not record.can(need.ability):
                raise fail(f"nemesis[{i}].fault", _refusal(fault, need.ability, record))


def _refusal(fault: FaultSpec, ability: Ability, record: RuntimeKind) -> str:
    """Why the runtime cannot apply `fault`, and what to do instead."""
    others = " or ".join(can(ability))
    if ability is Ability.LOSE_UNSYNCED:
        return (f"{fault.fault} with cluster.lose_unsynced_writes: true needs a runtime that drops unsynced writes; "
                f"the {record.name} runtime cannot: {record.power_off_note} (set cluster.lose_unsynced_writes: false "
                f"to run it as a kill of the node's processes, or use --runtime {others})")
    if ability is Ability.DISK_FAULTS:
        return (f"{fault.fault} needs a runtime whose nodes' data is on unsyncfs mounts it can steer; the "
                f"{record.name} runtime cannot (use --runtime {others})")
    if ability is Ability.SHIFT_CLOCKS:
        return (f"{fault.fault} needs a runtime that can shift a process's clock (libfaketime preloaded into the "
                f"nodes' JVMs); the {record.name} runtime cannot: {record.no_clock_shifts} (use --runtime {others})")
    if ability is Ability.SHAPE_LINKS:
        return (f"{fault.fault} needs a runtime that can delay and throttle links; the {record.name} runtime cannot "
                f"(use --runtime {others})")
    return f"{fault.fault} needs a runtime with {ability.value}; the {record.name} runtime cannot (use --runtime {others})"


def check_log_dirs(schedule: Schedule, cluster: ClusterSettings) -> None:
    """Refuse a disk fault's `log_dir` that the brokers do not have (`cluster.log_dirs`)."""
    for i, fault in schedule.faults():
        if fault.disk is not None and fault.disk.log_dir is not None and fault.disk.log_dir >= cluster.log_dirs:
            raise fail(f"nemesis[{i}].log_dir", f"{fault.disk.log_dir}: the brokers have {cluster.log_dirs} log "
                       f"director{'y' if cluster.log_dirs == 1 else 'ies'} (cluster.log_dirs), numbered from 0")
