"""Test specs: YAML in, a validated `Spec` out, or a SpecError naming the key's path.

Everything a spec says is checked here, before anything starts. First every
key's type and bounds, wherever it appears (top level, each configuration,
each configuration's overrides), against the one list of keys in
`harness.spec_keys`; then keys against each other (replicas against nodes,
AZs against the cluster) and each client's settings by librdkafka itself
(`workloads.settings_check`). A spec may name several `configurations`; each
is the base spec with its overrides merged in, validated as a whole, and a
file is only accepted if every configuration is.

Must never: start, create or connect to anything.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from harness.expectation import Expectation, check_names, parse_expect
from harness.spec_checks import (
    check_faults_can,
    check_log_dirs,
    check_metadata_can,
    check_migrations,
    check_runtime_can,
    check_upgrades,
    check_version_can,
    powers_off,
    shifts_clocks,
)
from harness.spec_clients import clients_of
from harness.spec_consumers import ConsumerGroup, parse_consumers
from harness.spec_existing import check_existing, existing_inventory
from harness.spec_groups import check_group_protocols, check_group_targets
from harness.spec_keys import CLUSTER, PRODUCER, SPEC
from harness.spec_quorum import check_quorum_changes
from harness.spec_sets import SpecSet, apply_sets
from harness.spec_targets import check_proxies, check_workload_targets
from harness.spec_transformers import TransformerGroup, parse_transformers
from harness.spec_types import fail
from nemesis.schedule import Schedule, parse_schedule
from testbed.dist.versions import check_metadata, default_metadata, release
from testbed.errors import DistributionError, SpecError, yaml_problem
from testbed.kafka.config import DOWNGRADE_SNAPSHOT_INTERVAL_MS, ClusterSettings
from testbed.runtime.kinds import default_network, inventory_kind, kind
from workloads.settings import canonical, normalize_acks
from workloads.settings_check import ClientRole, SettingRefused, check_settings, check_transactional

AZ_PREFIX = "az"
_PRODUCER_DEFAULTS = {"acks": "all", "enable.idempotence": False}
_TXN_DEFAULTS = {"acks": "all", "enable.idempotence": True}


@dataclass(frozen=True)
class ProducerGroup:
    azs: tuple[str, ...]
    per_az: int
    rate: float
    value_bytes: int
    settings: dict[str, Any]
    transactional: bool = False
    txn_size: int = 10
    txn_abort_share: float = 0.0
    transaction_timeout_ms: int = 10000
    fenced: Literal["renew", "exit"] = "renew"
    topic: str | None = None  # None: the cluster's topic
    proxy: bool = False  # behind a request-holding proxy of its own (hold-request)


@dataclass(frozen=True)
class Spec:
    name: str
    configuration: str | None
    seed: int
    duration_s: float
    settle_timeout_s: float
    drain_timeout_s: float
    cluster: ClusterSettings
    producers: tuple[ProducerGroup, ...]
    consumers: tuple[ConsumerGroup, ...]
    nemesis: Schedule
    checker: str
    expect: Expectation
    raw: dict[str, Any] = field(repr=False, default_factory=dict)
    client: str | None = None  # clients.confluent_kafka: the client under test (None: the harness's own)
    transformers: tuple[TransformerGroup, ...] = ()

    @property
    def transactional(self) -> bool:
        """Whether any producer or transformer writes transactions (the drain then reads at both isolation levels)."""
        return any(g.transactional for g in self.producers) or any(t.transactional for t in self.transformers)

    @property
    def run_name(self) -> str:
        return self.name if self.configuration is None else f"{self.name}/{self.configuration}"



def _azs(where: str, raw: dict[str, Any], nodes: int) -> tuple[str, ...]:
    value = raw.get("azs", [f"{AZ_PREFIX}{i}" for i in range(1, nodes + 1)])
    value = [value] if isinstance(value, str) else value
    valid = {f"{AZ_PREFIX}{i}" for i in range(1, nodes + 1)}
    for i, az in enumerate(value):
        if az not in valid:
            raise fail(f"{where}.azs[{i}]", f"unknown AZ {az!r} (this cluster has {', '.join(sorted(valid))})")
    return tuple(value)


def _assignment(where: str, raw: dict[str, Any], nodes: int) -> tuple[tuple[int, ...], ...] | None:
    """The replica assignment, which fixes the partition count and replication factor (a given one must agree)."""
    assignment = raw.get("replica_assignment")
    if assignment is None:
        return None
    for i, replicas in enumerate(assignment):
        if len(set(replicas)) != len(replicas) or max(replicas) >= nodes or len(replicas) != len(assignment[0]):
            raise fail(f"{where}.replica_assignment[{i}]",
                        f"must list distinct broker ids in 0..{nodes - 1}, as many as every other partition")
    for key, fixed in (("partitions", len(assignment)), ("replication_factor", len(assignment[0]))):
        if key in raw and raw[key] != fixed:
            raise fail(f"{where}.{key}", f"{raw[key]} disagrees with replica_assignment, which gives {fixed}")
    return tuple(tuple(r) for r in assignment)


def parse_cluster(raw: dict[str, Any] | None) -> ClusterSettings:
    where, raw, v = "cluster", raw or {}, functools.partial(CLUSTER.value, raw or {})
    nodes = v("nodes")
    inventory, known_hosts = raw.get("inventory"), raw.get("known_hosts")
    runtime = raw.get("runtime", inventory_kind(inventory) if inventory is not None else v("runtime"))
    hosts = kind(runtime)
    if hosts.needs_inventory != (inventory is not None):
        raise fail(f"{where}.inventory", f"the {runtime} runtime needs an inventory (--inventory FILE), and only it "
                    f"uses one" if hosts.needs_inventory else
                    f"an inventory names {inventory_kind(str(inventory))} hosts, but the runtime is {runtime}")
    assignment = _assignment(where, raw, nodes)
    rf = len(assignment[0]) if assignment else v("replication_factor")
    if rf > nodes:
        raise fail(f"{where}.replication_factor", f"{rf} is more than the {nodes} nodes")
    if v("min_insync_replicas") > rf:
        raise fail(f"{where}.min_insync_replicas", f"{v('min_insync_replicas')} is more than the replication "
                    f"factor {rf}: every acks=all write would be refused")
    if v("controller") is not None and v("controller") >= nodes:
        raise fail(f"{where}.controller", f"no broker {v('controller')} in a cluster of {nodes} nodes")
    try:
        row = release(v("kafka_version"))  # the version table's one line for a version faultline cannot run
    except DistributionError as exc:
        raise fail(f"{where}.kafka_version", str(exc).removeprefix(f"kafka_version {v('kafka_version')}: ")) from None
    metadata = raw.get("metadata") or default_metadata(v("kafka_version"))
    try:
        check_metadata(v("kafka_version"), metadata)
    except DistributionError as exc:
        raise fail(f"{where}.{'metadata' if 'metadata' in raw else 'kafka_version'}", str(exc)) from None
    if hosts.node_javas is not None and row.java not in hosts.node_javas:
        raise fail(f"{where}.kafka_version", f"Kafka {v('kafka_version')} runs on Java {row.java}, which the "
                    f"{runtime} runtime's nodes do not have (use --runtime netns)")
    return ClusterSettings(
        nodes=nodes, runtime=runtime, kafka_version=v("kafka_version"), metadata=metadata,
        kraft_controllers=v("kraft_controllers"), kraft_quorum=v("kraft_quorum"),
        network=raw.get("network", default_network(runtime)), topic=v("topic"),
        extra_topics=tuple(raw.get("extra_topics") or ()),
        partitions=len(assignment) if assignment else v("partitions"), replication_factor=rf,
        min_insync_replicas=v("min_insync_replicas"), unclean_leader_election=v("unclean_leader_election"),
        replica_lag_time_max_ms=v("replica_lag_time_max_ms"),
        zookeeper_session_timeout_ms=v("zookeeper_session_timeout_ms"),
        broker_heap_mb=v("broker_heap_mb"), zookeeper_heap_mb=v("zookeeper_heap_mb"),
        replica_assignment=assignment, controller=v("controller"),
        broker_overrides={str(k): str(x).lower() if isinstance(x, bool) else str(x)
                          for k, x in (raw.get("broker_overrides") or {}).items()},
        flush_messages=v("flush_messages"), flush_ms=v("flush_ms"), log_dirs=v("log_dirs"),
        zookeeper_force_sync=v("zookeeper_force_sync"), lose_unsynced_writes=v("lose_unsynced_writes"),
        inventory=inventory, known_hosts=known_hosts, provision=existing_inventory(inventory) is None,
    )


def client_settings(where: str, role: ClientRole, raw: dict[str, Any] | None,
                    transaction_timeout_ms: int | None = None) -> dict[str, Any]:
    """A producer's or consumer's librdkafka settings, checked by librdkafka (producers: acks and
    idempotence made explicit, acks as all/0/1). A transactional producer (`transaction_timeout_ms` given)
    is checked with a transactional.id and gets its transaction.timeout.ms."""
    settings = dict(raw or {})
    if role == "producer":
        given = canonical(settings)
        defaults = _TXN_DEFAULTS if transaction_timeout_ms is not None else _PRODUCER_DEFAULTS
        settings = {**{k: d for k, d in defaults.items() if k not in given}, **settings}
    try:
        if transaction_timeout_ms is not None:
            _check_transactional(settings)
        check_settings(role, settings)
        if transaction_timeout_ms is not None:
            settings["transaction.timeout.ms"] = transaction_timeout_ms
            check_transactional(settings)
    except SettingRefused as exc:
        raise fail(f"{where}.{exc.key}" if exc.key else where, exc.problem) from None
    if "acks" in settings:
        settings["acks"] = normalize_acks(settings["acks"])
    return settings


def _check_transactional(settings: dict[str, Any]) -> None:
    """What librdkafka refuses of a transactional producer, said before it does (its words follow)."""
    given = canonical(settings)
    if "transactional.id" in given:
        raise SettingRefused("transactional.id", "set by the workload (`<run prefix>-<process>`): say "
                             "transactional: true")
    if "transaction.timeout.ms" in given:
        raise SettingRefused("transaction.timeout.ms", "set it with the producer key transaction_timeout_ms")
    if normalize_acks(given.get("acks", "all")) != "all":
        raise SettingRefused("acks", f"a transactional producer needs acks all, got {given['acks']!r} "
                             "(librdkafka refuses transactional.id without idempotence, and idempotence "
                             "without acks all)")
    if str(given.get("enable.idempotence", True)).strip().lower() in ("false", "0"):
        raise SettingRefused("enable.idempotence", "a transactional producer is idempotent: librdkafka refuses "
                             "transactional.id with enable.idempotence false")


_TXN_ONLY = ("txn_size", "txn_abort_share", "transaction_timeout_ms", "fenced")


def _producer_group(where: str, p: dict[str, Any], nodes: int) -> ProducerGroup:
    v = functools.partial(PRODUCER.value, p)
    transactional = bool(v("transactional"))
    for key in _TXN_ONLY:
        if key in p and not transactional:
            raise fail(f"{where}.{key}", "only for a transactional producer (transactional: true)")
    return ProducerGroup(
        azs=_azs(where, p, nodes), per_az=v("per_az"), rate=float(v("rate")), value_bytes=v("value_bytes"),
        settings=client_settings(f"{where}.settings", "producer", p.get("settings"),
                                 v("transaction_timeout_ms") if transactional else None),
        transactional=transactional, txn_size=v("txn_size"), txn_abort_share=float(v("txn_abort_share")),
        transaction_timeout_ms=v("transaction_timeout_ms"), fenced=v("fenced"), topic=p.get("topic"),
        proxy=bool(v("proxy")))


def parse_workloads(raw: dict[str, Any] | None, nodes: int) -> tuple[tuple[ProducerGroup, ...], tuple[ConsumerGroup, ...]]:
    raw = raw or {}
    producers = []
    for i, p in enumerate(raw.get("producers") or []):
        producers.append(_producer_group(f"workloads.producers[{i}]", p, nodes))
    consumers = parse_consumers(raw, nodes, _azs, client_settings)
    if not producers:
        raise fail("workloads.producers", "a run needs at least one producer")
    return tuple(producers), tuple(consumers)


def merge(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """Deep-merge `overrides` into a copy of `base` (mappings merge; anything else replaces)."""
    out = copy.deepcopy(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def parse_spec(raw: Any, configuration: str | None = None, sets: tuple[SpecSet, ...] = ()) -> Spec:
    """The spec (or one of its configurations), every key of every configuration type-checked first; `sets` (the
    CLI's --set, applied to `raw` already where they reach) win over the configuration's overrides too, and must
    reach what they name in the spec that runs (harness.spec_sets)."""
    SPEC.check("", raw)
    configurations = raw.get("configurations") or {}
    resolved, expect_raw = raw, raw.get("expect")
    if configuration is not None:
        if configuration not in configurations:
            raise fail("configurations", f"no configuration {configuration!r} "
                        f"(known: {', '.join(configurations) or 'none'})")
        conf = configurations[configuration] or {}
        resolved = merge(raw, conf.get("overrides") or {})
        if "expect" in conf:  # the configuration's own expectations: in the resolved spec a run folder keeps
            resolved, expect_raw = {**resolved, "expect": conf["expect"]}, conf["expect"]
    try:
        if sets:
            resolved = apply_sets(resolved, sets)
            SPEC.check("", resolved)
        return _resolved_spec(resolved, configuration, expect_raw)
    except SpecError as exc:
        if configuration is None:
            raise
        raise SpecError(f"configurations.{configuration}: {exc}") from None


def _resolved_spec(resolved: dict[str, Any], configuration: str | None, expect_raw: Any) -> Spec:
    v = functools.partial(SPEC.value, resolved)
    cluster = parse_cluster(resolved.get("cluster"))
    producers, consumers = parse_workloads(resolved.get("workloads"), cluster.nodes)
    transformers = parse_transformers(resolved.get("workloads"), cluster, [g.topic for g in producers], _azs)
    check_version_can(producers, cluster.kafka_version)
    nemesis = parse_schedule("nemesis", resolved.get("nemesis") or [])  # the nemesis owns its vocabulary
    check_existing(nemesis, cluster, consumers, transformers)  # first: on a cluster of yours, its reason is the one
    check_runtime_can(nemesis, cluster.runtime, cluster.lose_unsynced_writes)
    check_faults_can(nemesis, cluster)
    if powers_off(nemesis):
        cluster = dataclasses.replace(cluster, power_offs=True)
    if shifts_clocks(nemesis):
        cluster = dataclasses.replace(cluster, shifted_clocks=shifts_clocks(nemesis))
    check_metadata_can(resolved, nemesis, cluster)
    check_quorum_changes(nemesis, cluster)
    upgrades = check_upgrades(nemesis, cluster)
    check_migrations(nemesis, cluster)
    if upgrades:
        cluster = dataclasses.replace(cluster, upgrade_versions=upgrades)
    if cluster.kraft and any(f.fault == "rolling-downgrade" for _, f in nemesis.faults()):
        cluster = dataclasses.replace(cluster, metadata_snapshot_interval_ms=DOWNGRADE_SNAPSHOT_INTERVAL_MS)
    check_log_dirs(nemesis, cluster)
    check_workload_targets(nemesis, producers)
    check_group_protocols(consumers, cluster.kafka_version)
    check_group_targets(nemesis, consumers)
    cluster = check_proxies(nemesis, producers, cluster)
    cluster, client = clients_of(resolved.get("clients"), nemesis, cluster)
    expect = parse_expect(expect_raw, metadata=cluster.metadata)
    check_names(expect, nemesis, cluster.nodes)
    return Spec(
        name=resolved["name"], configuration=configuration, seed=v("seed"), duration_s=float(v("duration_s")),
        settle_timeout_s=float(v("settle_timeout_s")), drain_timeout_s=float(v("drain_timeout_s")),
        cluster=cluster, producers=producers, consumers=consumers, nemesis=nemesis,
        checker=v("checker"), expect=expect, raw=resolved, client=client,
        transformers=transformers)


def configurations_of(raw: dict[str, Any]) -> list[str | None]:
    names = list((raw.get("configurations") or {}).keys())
    return names or [None]


def load_spec_file(path: Path) -> dict[str, Any]:
    """Read a spec file; a missing file or broken YAML is a SpecError naming the file and line."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise SpecError(f"{path}: cannot read: {exc.strerror}") from exc
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SpecError(yaml_problem(path, exc)) from exc
    if not isinstance(raw, dict):
        raise SpecError(f"{path}: a spec must be a YAML mapping")
    return raw


def load_specs(path: Path, only: str | Sequence[str] | None = None, runtime: str | None = None,
               inventory: Path | None = None, known_hosts: Path | None = None,
               kafka_version: str | None = None, metadata: str | None = None,
               sets: tuple[SpecSet, ...] = ()) -> list[Spec]:
    """Every configuration of the spec file (or those `only` names, in the file's order), validated, file name in each
    error. `runtime`, `inventory`, `known_hosts`, `kafka_version` and `metadata` (the CLI's flags) replace the spec's (an
    inventory alone means its kind: docker-existing for a Docker one, else ssh); `sets` (--set KEY=VALUE, harness.spec_sets) replace any key of the spec and
    of each configuration's overrides, list entries included, and are named in an error the file alone has not.
    Spec paths are relative to its folder."""
    raw = load_spec_file(path)
    for key in ("inventory", "known_hosts"):
        given = (raw.get("cluster") or {}).get(key) if isinstance(raw.get("cluster"), dict) else None
        if isinstance(given, str):
            raw = merge(raw, {"cluster": {key: str((path.parent / given).absolute())}})
    if inventory is not None:
        raw = merge(raw, {"cluster": {"inventory": str(inventory.absolute()),
                                      **({"runtime": inventory_kind(inventory)} if runtime is None else {})}})
    if known_hosts is not None:
        raw = merge(raw, {"cluster": {"known_hosts": str(known_hosts.absolute())}})
    flags = {k: v for k, v in {"runtime": runtime, "kafka_version": kafka_version, "metadata": metadata}.items() if v}
    if flags:
        raw = merge(raw, {"cluster": flags})
    wanted = None if only is None else [only] if isinstance(only, str) else list(only)
    try:
        return _configurations(apply_sets(raw, sets, strict=False), wanted, sets)
    except SpecError as exc:
        if sets:
            try:
                _configurations(raw, wanted, ())
            except SpecError:
                pass
            else:
                raise SpecError(f"--set: {exc}") from exc
        raise SpecError(f"{path}: {exc}") from exc


def _configurations(raw: dict[str, Any], wanted: list[str] | None, sets: tuple[SpecSet, ...]) -> list[Spec]:
    for name in wanted or ():  # refused here if it does not exist; every configuration is checked all the same
        parse_spec(raw, name, sets)
    specs = [parse_spec(raw, name, sets) for name in configurations_of(raw)]
    return [s for s in specs if wanted is None or s.configuration in wanted]
