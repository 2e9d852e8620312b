"""The configuration a workload process starts with: one JSON object, validated before anything connects.

Unknown keys are refused (a typo must not silently become a default), and
every error names the key. Keys per role:

- every role: ``process``, ``role``, ``az`` (string or null), ``journal``
  (absolute path), ``topic``, ``bootstrap`` (not needed by an observer);
  optional ``journal_enabled`` (default true; false only for benchmarks) and
  ``fsync_interval_s`` (default 0.5, at most 1.0).
- producer: ``partitions``, optional ``rate`` (sends per second, 0 = as fast
  as possible; default 0), ``value_prefix`` (default ``<process>-``),
  ``value_size`` (pad the op id with zeros so values have this many bytes),
  ``key`` (``none``, ``value`` or ``cycle:N``), ``batch_size`` (most sends per
  journal batch, default 500), ``kafka`` (librdkafka producer settings);
  transactional (contract v2): ``transactional_id`` (stable across the
  process's restarts, so a new instance fences its zombie), ``txn_size``
  (sends per transaction, default 10), ``txn_abort_share`` (the share of
  transactions deliberately aborted, 0..1, default 0); ``proxy`` (optional:
  ``{"listen": {"<loopback port>": "<broker ip>:<PROXIED port>", ...},
  "control": path, "events": path}``, the request-holding proxy this process
  runs for itself, workloads/holdproxy.py; its ``bootstrap`` then names the
  loopback ports).
- consumer: ``mode`` (``assign`` or ``group``), ``group``, ``commit`` (``before``, ``after``, ``auto``
  or ``none``, default ``auto``) and ``processing_ms`` (between a poll and its journal line, default 0)
  in group mode (contract v3); optional ``partitions`` (default: asked from the cluster), ``poll_batch``
  (default 500), ``kafka``, and a transformer's ``kill_every_s``, ``kill_first_s``, ``restart_delay_s``.
- drain: optional ``partitions``, ``timeout_s`` (default 60), ``kafka``, ``groups`` (whose committed offsets it
  reads after its drain, contract v3).
- observer: ``broker_id``, ``broker_address`` (``host:port``), optional ``interval_s`` (default 1.0),
  ``extra_topics`` (further topics it asks about); KRaft: ``controller_port`` (its node's KRaft controller, asked
  with DescribeQuorum for the controller) and ``controller_id_base`` (controller node id minus broker id).
- transformer (consume-transform-produce, workloads/transformer.py): ``topic``
  is its output; ``input_topic`` (required, not the output), ``group``,
  ``mode`` (``exactly-once``: input offsets committed in the transaction, needs
  ``transactional_id``; ``at-least-once``: committed after the outputs were
  acknowledged, no ``transactional_id``), ``partitions`` (of the output), optional
  ``batch`` (most inputs per transaction, default 20), ``kafka`` (producer
  settings), ``kill_every_s`` (SIGKILL its instance this often, 0 = never), ``kill_first_s`` (the first kill,
  default `kill_every_s`), ``restart_delay_s`` (default 1.0).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from checkers.schema import COMMIT_MODES  # a group consumer's `commit` (contract v3's processes.commit)

AIM_LIMIT_S = 10.0  # see Supervised

WorkloadRole = Literal["producer", "consumer", "drain", "observer", "transformer"]
ROLES: tuple[WorkloadRole, ...] = ("producer", "consumer", "drain", "observer", "transformer")
TRANSFORMER_MODES = ("exactly-once", "at-least-once")
CommitMode = Literal["before", "after", "auto", "none"]
KafkaValue = str | int | float | bool

# Settings a workload derives itself; passing them through `kafka` would contradict its other keys.
_ALWAYS_RESERVED = ("bootstrap.servers", "metadata.broker.list")
RESERVED_SETTINGS: dict[str, tuple[str, ...]] = {
    "producer": (*_ALWAYS_RESERVED, "transactional.id"),
    "transformer": (*_ALWAYS_RESERVED, "transactional.id"),
    "consumer": (*_ALWAYS_RESERVED, "group.id", "enable.auto.commit", "enable.auto.offset.store"),
    "drain": (*_ALWAYS_RESERVED, "group.id", "enable.auto.commit", "enable.auto.offset.store",
              "enable.partition.eof"),
}


class ConfigError(ValueError):
    """A workload config that cannot run; the message names the key."""


@dataclass(frozen=True, kw_only=True)
class WorkloadConfig:
    """What every role has."""

    process: str
    role: WorkloadRole
    az: str | None
    journal: Path
    topic: str
    bootstrap: str
    journal_enabled: bool = True
    fsync_interval_s: float = 0.5


@dataclass(frozen=True, kw_only=True)
class ProducerConfig(WorkloadConfig):
    partitions: int
    rate: float = 0.0
    value_prefix: str
    value_size: int | None = None
    key: str = "none"
    batch_size: int = 500
    kafka: dict[str, KafkaValue] = field(default_factory=dict)
    transactional_id: str | None = None
    txn_size: int = 10
    txn_abort_share: float = 0.0
    fenced: Literal["renew", "exit"] = "renew"  # once fenced: a new instance, or end the process (exits.FENCED)
    proxy: dict[str, Any] | None = None  # the request-holding proxy it runs (hold-request faults), or None


@dataclass(frozen=True, kw_only=True)
class Supervised:
    """A process the supervisor (workloads/supervisor.py) runs as instances, SIGKILLing one on schedule; a due kill
    of a consumer with processing time waits for that time, at most AIM_LIMIT_S."""
    kill_every_s: float = 0.0
    kill_first_s: float = 0.0
    restart_delay_s: float = 1.0


@dataclass(frozen=True, kw_only=True)
class ConsumerConfig(Supervised, WorkloadConfig):
    mode: Literal["assign", "group"]
    group: str | None = None
    commit: CommitMode | None = None
    processing_ms: int = 0
    partitions: int | None = None
    poll_batch: int = 500
    kafka: dict[str, KafkaValue] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class DrainConfig(WorkloadConfig):
    partitions: int | None = None
    timeout_s: float = 60.0
    kafka: dict[str, KafkaValue] = field(default_factory=dict)
    groups: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class ObserverConfig(WorkloadConfig):
    broker_id: int
    broker_host: str
    broker_port: int
    interval_s: float = 1.0
    controller_port: int | None = None  # KRaft: the node's controller listener (DescribeQuorum)
    controller_id_base: int = 0  # KRaft: a controller's node id minus its node's broker id
    extra_topics: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class TransformerConfig(Supervised, WorkloadConfig):
    input_topic: str
    group: str
    mode: Literal["exactly-once", "at-least-once"]
    partitions: int
    batch: int = 20
    transactional_id: str | None = None
    kafka: dict[str, KafkaValue] = field(default_factory=dict)


AnyConfig = ProducerConfig | ConsumerConfig | DrainConfig | ObserverConfig | TransformerConfig
_MISSING = object()


class _Keys:
    """Typed access to the raw JSON object, remembering which keys were read."""

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw
        self.read: set[str] = set()

    def take(self, key: str, default: Any = _MISSING) -> Any:
        self.read.add(key)
        if key not in self.raw:
            if default is _MISSING:
                raise ConfigError(f"{key}: required")
            return default
        return self.raw[key]

    def string(self, key: str, default: Any = _MISSING, nullable: bool = False) -> Any:
        value = self.take(key, default)
        if value is None and nullable:
            return None
        if not isinstance(value, str) or not value:
            raise ConfigError(f"{key}: must be a non-empty string, got {value!r}")
        return value

    def integer(self, key: str, default: Any = _MISSING, minimum: int = 0) -> Any:
        value = self.take(key, default)
        if value is None and default is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ConfigError(f"{key}: must be an integer >= {minimum}, got {value!r}")
        return value

    def number(self, key: str, default: Any = _MISSING, minimum: float = 0.0,
               maximum: float | None = None) -> float:
        value = self.take(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float) or value < minimum \
                or (maximum is not None and value > maximum):
            bound = f" and <= {maximum}" if maximum is not None else ""
            raise ConfigError(f"{key}: must be a number >= {minimum}{bound}, got {value!r}")
        return float(value)

    def boolean(self, key: str, default: Any = _MISSING) -> bool:
        value = self.take(key, default)
        if not isinstance(value, bool):
            raise ConfigError(f"{key}: must be true or false, got {value!r}")
        return value

    def choice(self, key: str, choices: tuple[str, ...], default: Any = _MISSING) -> Any:
        value = self.take(key, default)
        if value not in choices:
            raise ConfigError(f"{key}: must be one of {', '.join(choices)}, got {value!r}")
        return value

    def unknown(self) -> list[str]:
        return sorted(set(self.raw) - self.read)


def _kafka_settings(keys: _Keys, role: str) -> dict[str, KafkaValue]:
    value = keys.take("kafka", {})
    if not isinstance(value, dict):
        raise ConfigError(f"kafka: must be an object of librdkafka settings, got {value!r}")
    for name, setting in value.items():
        if isinstance(setting, dict | list) or setting is None:
            raise ConfigError(f"kafka.{name}: must be a string, number or boolean, got {setting!r}")
        if name in RESERVED_SETTINGS[role]:
            raise ConfigError(f"kafka.{name}: set by the workload itself; use the workload's own keys")
    return dict(value)


def _key_strategy(keys: _Keys) -> str:
    value = keys.string("key", "none")
    if value in ("none", "value"):
        return str(value)
    prefix, _, count = value.partition(":")
    if prefix == "cycle" and count.isdigit() and int(count) > 0:
        return str(value)
    raise ConfigError(f"key: must be none, value or cycle:N (N > 0), got {value!r}")


def _common(keys: _Keys, role: WorkloadRole) -> dict[str, Any]:
    journal = Path(keys.string("journal"))
    if not journal.is_absolute():
        raise ConfigError(f"journal: must be an absolute path, got {str(journal)!r}")
    return {
        "process": keys.string("process"),
        "role": role,
        "az": keys.string("az", None, nullable=True),
        "journal": journal,
        "topic": keys.string("topic"),
        # An observer asks its own broker directly; it may be given the bootstrap list but ignores it.
        "bootstrap": str(keys.take("bootstrap", "") or "") if role == "observer" else keys.string("bootstrap"),
        "journal_enabled": keys.boolean("journal_enabled", True),
        "fsync_interval_s": keys.number("fsync_interval_s", 0.5, minimum=0.01, maximum=1.0),
    }


def _producer(keys: _Keys, common: dict[str, Any]) -> ProducerConfig:
    prefix = keys.string("value_prefix", f"{common['process']}-")
    if json.dumps(prefix)[1:-1] != prefix:
        raise ConfigError(f"value_prefix: must be plain printable ASCII without quotes or backslashes, got {prefix!r}")
    size = keys.integer("value_size", None, minimum=1)
    if size is not None and size < len(prefix) + 9:
        raise ConfigError(f"value_size: {size} leaves fewer than 9 digits for the op id after {prefix!r}")
    return ProducerConfig(**common, partitions=keys.integer("partitions", minimum=1),
                          rate=keys.number("rate", 0.0), value_prefix=prefix, value_size=size,
                          key=_key_strategy(keys), batch_size=keys.integer("batch_size", 500, minimum=1),
                          kafka=_kafka_settings(keys, "producer"),
                          transactional_id=keys.string("transactional_id", None, nullable=True),
                          txn_size=keys.integer("txn_size", 10, minimum=1),
                          txn_abort_share=keys.number("txn_abort_share", 0.0, maximum=1.0),
                          fenced=keys.choice("fenced", ("renew", "exit"), "renew"), proxy=_proxy(keys))


def _proxy(keys: _Keys) -> dict[str, Any] | None:
    value = keys.take("proxy", None)
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) != {"listen", "control", "events"}:
        raise ConfigError(f"proxy: must be an object with listen, control and events, got {value!r}")
    listen = value["listen"]
    if not isinstance(listen, dict) or not listen or not all(
            str(p).isdigit() and isinstance(u, str) and u.rpartition(":")[2].isdigit() for p, u in listen.items()):
        raise ConfigError(f"proxy.listen: must map loopback ports to host:port, got {listen!r}")
    for key in ("control", "events"):
        if not isinstance(value[key], str) or not Path(value[key]).is_absolute():
            raise ConfigError(f"proxy.{key}: must be an absolute path, got {value[key]!r}")
    return {"listen": {str(p): u for p, u in listen.items()}, "control": value["control"], "events": value["events"]}


def _supervised(keys: _Keys) -> dict[str, Any]:
    return {"kill_every_s": keys.number("kill_every_s", 0.0),
            "kill_first_s": keys.number("kill_first_s", keys.raw.get("kill_every_s", 0.0)),
            "restart_delay_s": keys.number("restart_delay_s", 1.0)}


def _consumer(keys: _Keys, common: dict[str, Any]) -> ConsumerConfig:
    mode = keys.choice("mode", ("assign", "group"))
    group = keys.string("group", None, nullable=True)
    commit = keys.take("commit", None)
    if commit is not None and commit not in COMMIT_MODES:
        raise ConfigError(f"commit: must be one of {', '.join(COMMIT_MODES)}, got {commit!r}")
    if mode == "group" and group is None:
        raise ConfigError("group: required when mode is group")
    processing_ms = keys.integer("processing_ms", 0)
    if mode == "assign" and (group is not None or commit is not None or processing_ms):
        raise ConfigError("group/commit/processing_ms: only for mode group (an assign consumer never commits)")
    if mode == "group" and commit is None:
        commit = "auto"
    return ConsumerConfig(**common, mode=mode, group=group, commit=commit, processing_ms=processing_ms,
                          partitions=keys.integer("partitions", None, minimum=1),
                          poll_batch=keys.integer("poll_batch", 500, minimum=1),
                          kafka=_kafka_settings(keys, "consumer"), **_supervised(keys))


def _drain(keys: _Keys, common: dict[str, Any]) -> DrainConfig:
    groups = keys.take("groups", [])
    if not isinstance(groups, list) or not all(isinstance(g, str) and g for g in groups):
        raise ConfigError(f"groups: must be a list of consumer group ids, got {groups!r}")
    return DrainConfig(**common, partitions=keys.integer("partitions", None, minimum=1),
                       timeout_s=keys.number("timeout_s", 60.0, minimum=1.0),
                       kafka=_kafka_settings(keys, "drain"), groups=tuple(groups))


def _observer(keys: _Keys, common: dict[str, Any]) -> ObserverConfig:
    address = keys.string("broker_address")
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError(f"broker_address: must be host:port, got {address!r}")
    extra = keys.take("extra_topics", [])
    if not isinstance(extra, list) or not all(isinstance(t, str) and t for t in extra):
        raise ConfigError(f"extra_topics: must be a list of topic names, got {extra!r}")
    return ObserverConfig(**common, broker_id=keys.integer("broker_id"), broker_host=host,
                          broker_port=int(port), interval_s=keys.number("interval_s", 1.0, minimum=0.05),
                          controller_port=keys.integer("controller_port", None, minimum=1),
                          controller_id_base=keys.integer("controller_id_base", 0),
                          extra_topics=tuple(extra))


def _transformer(keys: _Keys, common: dict[str, Any]) -> TransformerConfig:
    source = keys.string("input_topic")
    if source == common["topic"]:
        raise ConfigError(f"input_topic: {source!r} is also its output topic (topic)")
    mode = keys.choice("mode", TRANSFORMER_MODES)
    txn_id = keys.string("transactional_id", None, nullable=True)
    if (mode == "exactly-once") != (txn_id is not None):
        raise ConfigError(f"transactional_id: {'required' if txn_id is None else 'not allowed'} in mode {mode}")
    return TransformerConfig(**common, input_topic=source, group=keys.string("group"), mode=mode,
                             partitions=keys.integer("partitions", minimum=1),
                             batch=keys.integer("batch", 20, minimum=1), transactional_id=txn_id,
                             kafka=_kafka_settings(keys, "transformer"), **_supervised(keys))


def parse_config(raw: Any) -> AnyConfig:
    """Validate a decoded config object; raise ConfigError naming the first bad key."""
    if not isinstance(raw, dict):
        raise ConfigError("the config must be a JSON object")
    keys = _Keys(raw)
    role = keys.choice("role", ROLES)
    common = _common(keys, role)
    config: AnyConfig
    if role == "producer":
        config = _producer(keys, common)
    elif role == "consumer":
        config = _consumer(keys, common)
    elif role == "drain":
        config = _drain(keys, common)
    elif role == "transformer":
        config = _transformer(keys, common)
    else:
        config = _observer(keys, common)
    unknown = keys.unknown()
    if unknown:
        raise ConfigError(f"{unknown[0]}: unknown key for role {role}")
    return config


def load_config(path: Path) -> AnyConfig:
    """Read and validate a config file; ConfigError for an unreadable or invalid one."""
    try:
        raw = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    return parse_config(raw)


def config_to_json(config: AnyConfig) -> dict[str, Any]:
    """The JSON object `parse_config` reads back as `config` (the file a workload process is started with)."""
    raw = dataclasses.asdict(config)
    raw["journal"] = str(config.journal)
    if isinstance(config, ObserverConfig):
        raw["broker_address"] = f"{raw.pop('broker_host')}:{raw.pop('broker_port')}"
        raw["extra_topics"] = list(raw["extra_topics"])
        if not raw["extra_topics"]:  # an observer of one topic keeps its config file as it was
            del raw["extra_topics"]
    if isinstance(config, ProducerConfig) and config.proxy is None:  # nor does a producer without a proxy
        del raw["proxy"]
    # nor does a drain of no group's offsets, nor a consumer never killed and without processing time (contract v3)
    defaults = {"groups": (), "kill_every_s": 0.0, "kill_first_s": 0.0, "restart_delay_s": 1.0, "processing_ms": 0}
    for key in [k for k in defaults if k in raw and raw[k] == defaults[k]]:
        del raw[key]
    if "groups" in raw:
        raw["groups"] = list(raw["groups"])
    return raw
