"""librdkafka settings of each role, and the effective settings the verdict depends on.

The checker fills settings a `processes` row leaves out with the *Java*
client's defaults (acks=1, max.in.flight=5); librdkafka's differ (acks=all,
max.in.flight=1000000, retries=INT32_MAX). So every row names the effective
value of each setting that matters, defaults included. Defaults below are
librdkafka's, from its CONFIGURATION.md (v2.x); `enable.idempotence` adjusts
max.in.flight to 5, retries to INT32_MAX and acks to all unless the user set
them (same document), and refuses incompatible values at construction.
Pure functions: nothing here connects to anything.
"""

from __future__ import annotations

from typing import Any

import confluent_kafka

from workloads.config import ConsumerConfig, DrainConfig, KafkaValue, ProducerConfig

INT32_MAX = 2147483647
TXN_TIMEOUT_MS = 60000  # librdkafka's transaction.timeout.ms

# librdkafka alias -> the name a `processes` row uses (the Java client's, which the checker reads).
_CANONICAL = {
    "request.required.acks": "acks",
    "message.send.max.retries": "retries",
    "max.in.flight": "max.in.flight.requests.per.connection",
    "message.timeout.ms": "delivery.timeout.ms",
    "queue.buffering.max.ms": "linger.ms",
}
_PRODUCER_DEFAULTS: dict[str, KafkaValue] = {
    "acks": "all",
    "enable.idempotence": False,
    "max.in.flight.requests.per.connection": 1000000,
    "retries": INT32_MAX,
    "delivery.timeout.ms": 300000,
    "request.timeout.ms": 30000,
    "linger.ms": 5,
}
_GROUP_DEFAULTS: dict[str, KafkaValue] = {
    "group.protocol": "classic",
    "partition.assignment.strategy": "range,roundrobin",
    "session.timeout.ms": 45000,
}
LINGER_5MS_SINCE = 0x02000000  # librdkafka's linger.ms default was 0.5 ms before 2.0 (a client under test may be older)


def librdkafka_defaults() -> dict[str, KafkaValue]:
    """The producer defaults of the librdkafka this process runs (a client under test may be 1.x)."""
    return {**_PRODUCER_DEFAULTS, "linger.ms": 5 if confluent_kafka.libversion()[1] >= LINGER_5MS_SINCE else 0.5}


def client_version() -> str:
    binding = confluent_kafka.version()  # a string in 2.x, a (string, int) tuple in older releases
    binding_text = binding if isinstance(binding, str) else binding[0]
    return f"confluent-kafka {binding_text} / librdkafka {confluent_kafka.libversion()[0]}"


def _flag(value: KafkaValue) -> bool:
    return str(value).strip().lower() in ("true", "1")


def normalize_acks(value: KafkaValue) -> str:
    """'all' for all/-1, otherwise the number as text ('0', '1')."""
    text = str(value).strip().lower()
    return "all" if text in ("all", "-1") else text


def canonical(settings: dict[str, KafkaValue]) -> dict[str, KafkaValue]:
    """The settings with librdkafka aliases renamed to the Java client's names."""
    return {_CANONICAL.get(name, name): value for name, value in settings.items()}


def producer_effective(config: ProducerConfig) -> dict[str, Any]:
    """Every producer setting that matters to the verdict, defaults and idempotence adjustments applied."""
    given = canonical(config.kafka)
    effective: dict[str, Any] = {**librdkafka_defaults(), **given}
    if config.transactional_id is not None:  # librdkafka: a transactional producer is idempotent, and its
        # delivery timeout is at most the transaction timeout (lowered to it when not given)
        effective["transactional.id"] = config.transactional_id
        effective["transaction.timeout.ms"] = int(str(effective.get("transaction.timeout.ms", TXN_TIMEOUT_MS)))
        effective["enable.idempotence"] = True
        if "delivery.timeout.ms" not in given:
            effective["delivery.timeout.ms"] = min(int(effective["delivery.timeout.ms"]),
                                                   effective["transaction.timeout.ms"])
        effective["txn_size"] = config.txn_size
        effective["txn_abort_share"] = config.txn_abort_share
    idempotent = _flag(effective["enable.idempotence"])
    if idempotent and "max.in.flight.requests.per.connection" not in given:
        effective["max.in.flight.requests.per.connection"] = 5
    effective["enable.idempotence"] = idempotent
    effective["acks"] = normalize_acks(effective["acks"])
    for name in ("max.in.flight.requests.per.connection", "retries", "delivery.timeout.ms",
                 "request.timeout.ms"):
        effective[name] = int(str(effective[name]))
    effective["partitioner"] = "explicit round-robin"
    effective["client"] = client_version()
    return effective


def producer_conf(config: ProducerConfig) -> dict[str, Any]:
    """What the librdkafka Producer is constructed with."""
    conf = {"bootstrap.servers": config.bootstrap, "client.id": config.process, **config.kafka}
    if config.transactional_id is not None:
        conf["transactional.id"] = config.transactional_id
    return conf


def consumer_effective(config: ConsumerConfig | DrainConfig, conf: dict[str, Any]) -> dict[str, Any]:
    """The consumer settings that matter to the verdict, from the conf it is constructed with."""
    effective: dict[str, Any] = {
        "isolation.level": "read_committed",
        "auto.offset.reset": "largest",
        **canonical({k: v for k, v in conf.items() if not callable(v)}),
    }
    effective.pop("bootstrap.servers", None)
    effective["enable.auto.commit"] = _flag(effective.get("enable.auto.commit", True))
    if isinstance(config, ConsumerConfig):
        effective["mode"] = config.mode
        effective["commit"] = config.commit
        if config.mode == "group":  # contract v3: every group member's group settings, librdkafka's defaults filled in
            effective = {**_GROUP_DEFAULTS, **effective}
            if effective["group.protocol"] == "consumer":  # KIP-848: the broker assigns (group.remote.assignor)
                effective.pop("partition.assignment.strategy")
            effective["session.timeout.ms"] = int(str(effective["session.timeout.ms"]))
            effective["processing_ms"] = config.processing_ms
        if config.mode == "assign":
            effective.pop("group.id", None)  # a placeholder librdkafka insists on; never joins a group
    else:
        effective["mode"] = "assign"
        effective.pop("group.id", None)
    effective["client"] = client_version()
    return effective
