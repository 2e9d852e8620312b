"""Test specs: YAML in, a validated `Spec` out, or a SpecError naming the key's path.

Everything a spec says is checked here, before anything starts: unknown keys,
bad values, and client settings Kafka or librdkafka would refuse. A spec may
name several `configurations`; each is the base spec with its overrides
merged in, validated as a whole.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from checkers.anomalies import ANOMALIES
from harness.facts import OBSERVED_FACTS
from nemesis.schedule import Schedule, parse_schedule
from testbed.errors import SpecError
from testbed.kafka.config import ClusterSettings
from testbed.runtime.factory import DEFAULT_NETWORKS, RUNTIMES

AZ_PREFIX = "az"
PRODUCER_SETTINGS: dict[str, type | tuple[type, ...]] = {
    "acks": (str, int), "enable.idempotence": bool, "retries": int,
    "max.in.flight.requests.per.connection": int, "delivery.timeout.ms": int,
    "request.timeout.ms": int, "linger.ms": int, "batch.size": int, "message.timeout.ms": int,
    "retry.backoff.ms": int, "compression.type": str,
}
CONSUMER_MODES = ("assign", "group")
COMMIT_MODES = ("auto", "sync")
TOP_KEYS = {"name", "description", "seed", "duration_s", "settle_timeout_s", "drain_timeout_s", "cluster",
            "workloads", "nemesis", "configurations", "checker", "expect", "notes"}
CLUSTER_KEYS = {"nodes", "runtime", "kafka_version", "network", "topic", "partitions", "replication_factor",
                "min_insync_replicas", "unclean_leader_election", "replica_lag_time_max_ms",
                "zookeeper_session_timeout_ms", "replica_assignment", "broker_overrides", "controller",
                "broker_heap_mb", "zookeeper_heap_mb", "inventory", "known_hosts"}
PRODUCER_KEYS = {"azs", "per_az", "rate", "value_bytes", "settings"}
CONSUMER_KEYS = {"azs", "per_az", "mode", "group", "commit"}
EXPECT_KEYS = {"absent", "present", "valid", "observed"}


@dataclass(frozen=True)
class ProducerGroup:
    azs: tuple[str, ...]
    per_az: int
    rate: float
    value_bytes: int
    settings: dict[str, Any]


@dataclass(frozen=True)
class ConsumerGroup:
    azs: tuple[str, ...]
    per_az: int
    mode: str
    group: str | None
    commit: str


@dataclass(frozen=True)
class Expectation:
    absent: tuple[str, ...] = ()
    present: tuple[str, ...] = ()
    valid: bool | None = None
    observed: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.absent or self.present or self.observed or self.valid is not None)


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

    @property
    def run_name(self) -> str:
        return self.name if self.configuration is None else f"{self.name}/{self.configuration}"


def _fail(path: str, problem: str) -> SpecError:
    return SpecError(f"{path}: {problem}")


def _check_keys(where: str, raw: Any, allowed: set[str]) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise _fail(where, f"must be a mapping, got {type(raw).__name__}")
    for key in raw:
        if key not in allowed:
            raise _fail(f"{where}.{key}", f"unknown key (allowed: {', '.join(sorted(allowed))})")
    return raw


def _get(raw: dict[str, Any], where: str, key: str, kind: type | tuple[type, ...], default: Any,
         low: float | None = None, high: float | None = None) -> Any:
    value = raw.get(key, default)
    path = f"{where}.{key}"
    kinds = kind if isinstance(kind, tuple) else (kind,)
    is_bool = isinstance(value, bool)
    fits = value is not None and isinstance(value, kinds) and (bool in kinds or not is_bool)
    if not fits:
        names = " or ".join(k.__name__ for k in kinds)
        raise _fail(path, f"must be {names}, got {value!r}")
    if low is not None and value < low:
        raise _fail(path, f"must be >= {low}, got {value!r}")
    if high is not None and value > high:
        raise _fail(path, f"must be <= {high}, got {value!r}")
    return value


def _azs(where: str, raw: dict[str, Any], nodes: int) -> tuple[str, ...]:
    value = raw.get("azs", [f"{AZ_PREFIX}{i}" for i in range(1, nodes + 1)])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value:
        raise _fail(f"{where}.azs", "must be a non-empty list of AZ names like az1")
    valid = {f"{AZ_PREFIX}{i}" for i in range(1, nodes + 1)}
    for i, az in enumerate(value):
        if az not in valid:
            raise _fail(f"{where}.azs[{i}]", f"unknown AZ {az!r} (this cluster has {', '.join(sorted(valid))})")
    return tuple(value)


def parse_cluster(raw: Any) -> ClusterSettings:
    where = "cluster"
    raw = _check_keys(where, raw or {}, CLUSTER_KEYS)
    d = ClusterSettings()
    nodes = _get(raw, where, "nodes", int, d.nodes, 3, 9)
    rf = _get(raw, where, "replication_factor", int, d.replication_factor, 1, nodes)
    assignment = raw.get("replica_assignment")
    if assignment is not None:
        if not isinstance(assignment, list) or not assignment:
            raise _fail(f"{where}.replica_assignment", "must be a list (one list of broker ids per partition)")
        for i, replicas in enumerate(assignment):
            ok = isinstance(replicas, list) and replicas and len(set(replicas)) == len(replicas) and all(
                isinstance(b, int) and 0 <= b < nodes for b in replicas)
            if not ok or len(replicas) != len(assignment[0]):
                raise _fail(f"{where}.replica_assignment[{i}]",
                            f"must list distinct broker ids in 0..{nodes - 1}, as many as every other partition")
        assignment = tuple(tuple(r) for r in assignment)
    overrides = raw.get("broker_overrides", {})
    if not isinstance(overrides, dict):
        raise _fail(f"{where}.broker_overrides", "must be a mapping of server.properties keys to values")
    inventory = _get(raw, where, "inventory", str, None) if raw.get("inventory") is not None else None
    known_hosts = _get(raw, where, "known_hosts", str, None) if raw.get("known_hosts") is not None else None
    runtime = _get(raw, where, "runtime", str, "ssh" if inventory else d.runtime)
    if runtime not in RUNTIMES:
        raise _fail(f"{where}.runtime", f"unknown runtime {runtime!r} (known: {', '.join(RUNTIMES)})")
    if (runtime == "ssh") != (inventory is not None):
        raise _fail(f"{where}.inventory", "the ssh runtime needs an inventory (--inventory FILE), and only it uses one"
                    if runtime == "ssh" else f"an inventory names ssh hosts, but the runtime is {runtime}")
    settings = ClusterSettings(
        nodes=nodes,
        runtime=runtime,
        kafka_version=str(_get(raw, where, "kafka_version", str, d.kafka_version)),
        network=_get(raw, where, "network", str, DEFAULT_NETWORKS.get(runtime, d.network)),
        topic=_get(raw, where, "topic", str, d.topic),
        partitions=len(assignment) if assignment else _get(raw, where, "partitions", int, d.partitions, 1, 64),
        replication_factor=len(assignment[0]) if assignment else rf,
        min_insync_replicas=_get(raw, where, "min_insync_replicas", int, d.min_insync_replicas, 1, nodes),
        unclean_leader_election=_get(raw, where, "unclean_leader_election", bool, d.unclean_leader_election),
        replica_lag_time_max_ms=_get(raw, where, "replica_lag_time_max_ms", int, d.replica_lag_time_max_ms, 500),
        zookeeper_session_timeout_ms=_get(raw, where, "zookeeper_session_timeout_ms", int,
                                          d.zookeeper_session_timeout_ms, 2000),
        broker_heap_mb=_get(raw, where, "broker_heap_mb", int, d.broker_heap_mb, 128),
        zookeeper_heap_mb=_get(raw, where, "zookeeper_heap_mb", int, d.zookeeper_heap_mb, 64),
        replica_assignment=assignment,
        controller=_get(raw, where, "controller", int, None, 0, nodes - 1) if "controller" in raw else None,
        broker_overrides={str(k): str(v) for k, v in overrides.items()},
        inventory=inventory,
        known_hosts=known_hosts,
    )
    if settings.min_insync_replicas > settings.replication_factor:
        raise _fail(f"{where}.min_insync_replicas", f"{settings.min_insync_replicas} is more than the replication "
                    f"factor {settings.replication_factor}: every acks=all write would be refused")
    return settings


def parse_producer_settings(where: str, raw: Any) -> dict[str, Any]:
    raw = _check_keys(where, raw or {}, set(PRODUCER_SETTINGS))
    settings = {"acks": "all", "enable.idempotence": False, **raw}
    for key, kind in PRODUCER_SETTINGS.items():
        if key in settings:
            _get(settings, where, key, kind, None, 0 if kind is int else None)
    acks = str(settings["acks"]).lower()
    if acks not in ("0", "1", "all", "-1"):
        raise _fail(f"{where}.acks", f"must be 0, 1, all or -1, got {settings['acks']!r}")
    settings["acks"] = "all" if acks == "-1" else acks
    if settings["enable.idempotence"]:
        if settings["acks"] != "all":
            raise _fail(f"{where}.acks", f"enable.idempotence requires acks=all, got acks={settings['acks']}")
        if settings.get("max.in.flight.requests.per.connection", 5) > 5:
            raise _fail(f"{where}.max.in.flight.requests.per.connection",
                        "enable.idempotence requires at most 5 requests in flight")
        if settings.get("retries", 1) == 0:
            raise _fail(f"{where}.retries", "enable.idempotence requires retries > 0")
    return settings


def parse_workloads(raw: Any, nodes: int) -> tuple[tuple[ProducerGroup, ...], tuple[ConsumerGroup, ...]]:
    raw = _check_keys("workloads", raw or {}, {"producers", "consumers"})
    producers = []
    for i, p in enumerate(raw.get("producers", [])):
        where = f"workloads.producers[{i}]"
        p = _check_keys(where, p, PRODUCER_KEYS)
        producers.append(ProducerGroup(
            azs=_azs(where, p, nodes), per_az=_get(p, where, "per_az", int, 1, 1, 16),
            rate=float(_get(p, where, "rate", (int, float), 200, 0)),
            value_bytes=_get(p, where, "value_bytes", int, 0, 0, 1_000_000),
            settings=parse_producer_settings(f"{where}.settings", p.get("settings"))))
    consumers = []
    for i, c in enumerate(raw.get("consumers", [])):
        where = f"workloads.consumers[{i}]"
        c = _check_keys(where, c, CONSUMER_KEYS)
        mode = _get(c, where, "mode", str, "assign")
        if mode not in CONSUMER_MODES:
            raise _fail(f"{where}.mode", f"must be one of {', '.join(CONSUMER_MODES)}, got {mode!r}")
        commit = _get(c, where, "commit", str, "auto")
        if commit not in COMMIT_MODES:
            raise _fail(f"{where}.commit", f"must be one of {', '.join(COMMIT_MODES)}, got {commit!r}")
        group = c.get("group", f"faultline-g{i}" if mode == "group" else None)
        if mode == "assign" and "group" in c:
            raise _fail(f"{where}.group", "only a group consumer (mode: group) has a group")
        consumers.append(ConsumerGroup(azs=_azs(where, c, nodes), per_az=_get(c, where, "per_az", int, 1, 1, 16),
                                       mode=mode, group=group, commit=commit))
    if not producers:
        raise _fail("workloads.producers", "a run needs at least one producer")
    return tuple(producers), tuple(consumers)


def parse_expect(where: str, raw: Any) -> Expectation:
    raw = _check_keys(where, raw or {}, EXPECT_KEYS)
    lists = {}
    for key in ("absent", "present"):
        names = raw.get(key, [])
        if names == "all":
            names = list(ANOMALIES)
        if not isinstance(names, list):
            raise _fail(f"{where}.{key}", "must be a list of anomaly names (or 'all')")
        for j, name in enumerate(names):
            if name not in ANOMALIES:
                raise _fail(f"{where}.{key}[{j}]", f"unknown anomaly {name!r} (known: {', '.join(ANOMALIES)})")
        lists[key] = tuple(names)
    valid = raw.get("valid")
    if valid is not None and not isinstance(valid, bool):
        raise _fail(f"{where}.valid", "must be true or false")
    observed = raw.get("observed", [])
    if not isinstance(observed, list):
        raise _fail(f"{where}.observed", "must be a list of facts")
    for j, fact in enumerate(observed):
        if fact not in OBSERVED_FACTS:
            raise _fail(f"{where}.observed[{j}]", f"unknown fact {fact!r} (known: {', '.join(OBSERVED_FACTS)})")
    return Expectation(lists["absent"], lists["present"], valid, tuple(observed))


def merge(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """Deep-merge `overrides` into a copy of `base` (mappings merge; anything else replaces)."""
    out = copy.deepcopy(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def parse_spec(raw: Any, configuration: str | None = None) -> Spec:
    raw = _check_keys("spec", raw, TOP_KEYS)
    name = raw.get("name")
    if not isinstance(name, str) or not name.replace("-", "").replace("_", "").isalnum():
        raise _fail("name", f"must be an identifier like isolate-az-leader, got {name!r}")
    configurations = raw.get("configurations") or {}
    _check_keys("configurations", configurations, set(configurations))
    resolved = dict(raw)
    expect_raw = raw.get("expect")
    if configuration is not None:
        if configuration not in configurations:
            raise _fail("configurations", f"no configuration {configuration!r} "
                        f"(known: {', '.join(configurations) or 'none'})")
        conf = _check_keys(f"configurations.{configuration}", configurations[configuration] or {},
                           {"overrides", "expect", "description"})
        overrides = conf.get("overrides") or {}
        _check_keys(f"configurations.{configuration}.overrides", overrides, TOP_KEYS - {"configurations", "name"})
        resolved = merge(raw, overrides)
        expect_raw = conf.get("expect", expect_raw)
    cluster = parse_cluster(resolved.get("cluster"))
    producers, consumers = parse_workloads(resolved.get("workloads"), cluster.nodes)
    nemesis = parse_schedule("nemesis", resolved.get("nemesis") or [])  # the nemesis owns its vocabulary
    checker = _get(resolved, "spec", "checker", str, "spark")
    if checker not in ("spark", "pandas"):
        raise _fail("checker", f"must be spark or pandas, got {checker!r}")
    spec = Spec(
        name=name, configuration=configuration,
        seed=_get(resolved, "spec", "seed", int, 0),
        duration_s=float(_get(resolved, "spec", "duration_s", (int, float), 20, 1, 3600)),
        settle_timeout_s=float(_get(resolved, "spec", "settle_timeout_s", (int, float), 120, 1)),
        drain_timeout_s=float(_get(resolved, "spec", "drain_timeout_s", (int, float), 90, 1)),
        cluster=cluster, producers=producers, consumers=consumers, nemesis=nemesis, checker=checker,
        expect=parse_expect(f"configurations.{configuration}.expect" if configuration else "expect", expect_raw),
        raw=resolved)
    return spec


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
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise SpecError(f"{where}: not valid YAML: {getattr(exc, 'problem', exc)}") from exc
    if not isinstance(raw, dict):
        raise SpecError(f"{path}: a spec must be a YAML mapping")
    return raw


def load_specs(path: Path, only: str | None = None, runtime: str | None = None, inventory: Path | None = None,
               known_hosts: Path | None = None) -> list[Spec]:
    """Every configuration of the spec file (or just `only`), validated, file name in each error.

    `runtime`, `inventory` and `known_hosts` (the CLI's flags) replace the spec's; an inventory alone means
    the ssh runtime. Paths in the spec are relative to its folder."""
    raw = load_spec_file(path)
    for key in ("inventory", "known_hosts"):
        given = (raw.get("cluster") or {}).get(key) if isinstance(raw.get("cluster"), dict) else None
        if isinstance(given, str):
            raw = merge(raw, {"cluster": {key: str((path.parent / given).absolute())}})
    if inventory is not None:
        raw = merge(raw, {"cluster": {"inventory": str(inventory.absolute()),
                                      **({"runtime": "ssh"} if runtime is None else {})}})
    if known_hosts is not None:
        raw = merge(raw, {"cluster": {"known_hosts": str(known_hosts.absolute())}})
    if runtime is not None:
        raw = merge(raw, {"cluster": {"runtime": runtime}})
    try:
        names = [only] if only is not None else configurations_of(raw)
        return [parse_spec(raw, name) for name in names]
    except SpecError as exc:
        raise SpecError(f"{path}: {exc}") from exc
