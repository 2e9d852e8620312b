"""Workload configs: every role's keys, refusals naming the key, and the settings the verdict needs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from workloads.config import (
    ConfigError,
    ConsumerConfig,
    DrainConfig,
    ObserverConfig,
    ProducerConfig,
    load_config,
    parse_config,
)
from workloads.settings import consumer_effective, producer_effective

BASE = {"process": "p-az1-0", "az": "az1", "journal": "/tmp/j/p.jsonl", "bootstrap": "h:9092", "topic": "t"}


def config(role: str, **extra: Any) -> dict[str, Any]:
    return {**BASE, "role": role, **extra}


def test_a_producer_with_defaults() -> None:
    c = parse_config(config("producer", partitions=3))
    assert isinstance(c, ProducerConfig)
    assert (c.rate, c.value_prefix, c.value_size, c.key, c.batch_size, c.kafka) == (
        0.0,
        "p-az1-0-",
        None,
        "none",
        500,
        {},
    )
    assert c.journal == Path("/tmp/j/p.jsonl") and c.journal_enabled and c.fsync_interval_s == 0.5


def test_every_role_parses() -> None:
    assert isinstance(parse_config(config("consumer", mode="assign")), ConsumerConfig)
    group = parse_config(config("consumer", mode="group", group="g"))
    assert isinstance(group, ConsumerConfig) and group.commit == "auto"
    drain = parse_config(config("drain", timeout_s=30, partitions=3, az="az3"))
    assert isinstance(drain, DrainConfig) and drain.timeout_s == 30.0
    observer = parse_config(
        {**config("observer", broker_id=0, broker_address="198.18.0.11:9092"), "az": None}
    )
    assert isinstance(observer, ObserverConfig)
    assert (observer.broker_host, observer.broker_port, observer.interval_s, observer.az) == (
        "198.18.0.11",
        9092,
        1.0,
        None,
    )


@pytest.mark.parametrize(
    "raw, says",
    [
        (config("producer"), "partitions: required"),
        (config("producer", partitions=3, rat=5), "rat: unknown key for role producer"),
        (config("producer", partitions=0), "partitions: must be an integer >= 1"),
        (config("producer", partitions=True), "partitions: must be an integer"),
        (config("producer", partitions=3, rate=-1), "rate: must be a number >= 0"),
        (config("producer", partitions=3, key="random"), "key: must be none, value or cycle:N"),
        (config("producer", partitions=3, value_prefix='a"b'), "value_prefix: must be plain printable ASCII"),
        (config("producer", partitions=3, value_size=12), "value_size: 12 leaves fewer than 9 digits"),
        (
            config("producer", partitions=3, kafka={"bootstrap.servers": "x"}),
            "kafka.bootstrap.servers: set by",
        ),
        (
            config("producer", partitions=3, kafka={"acks": None}),
            "kafka.acks: must be a string, number or boolean",
        ),
        (
            config("producer", partitions=3, fsync_interval_s=2),
            "fsync_interval_s: must be a number >= 0.01 and <= 1.0",
        ),
        ({**config("producer", partitions=3), "journal": "rel/p.jsonl"}, "journal: must be an absolute path"),
        ({**config("producer", partitions=3), "role": "spy"}, "role: must be one of"),
        (config("consumer", mode="group"), "group: required when mode is group"),
        (config("consumer", mode="assign", commit="after"), "only for mode group"),
        (config("consumer", mode="group", group="g", commit="sync"), "commit: must be one of before, after, auto, none"),
        (config("consumer", mode="assign", processing_ms=5), "only for mode group"),
        (config("consumer", mode="group", group="g", commit="never"), "commit: must be one of before, after, auto, none"),
        (config("consumer", mode="group", group="g", kafka={"group.id": "x"}), "kafka.group.id: set by"),
        (config("drain", kafka={"enable.partition.eof": False}), "kafka.enable.partition.eof: set by"),
        (config("observer", broker_id=0, broker_address="nohost"), "broker_address: must be host:port"),
        (
            {k: v for k, v in config("consumer", mode="assign").items() if k != "bootstrap"},
            "bootstrap: required",
        ),
        ([], "must be a JSON object"),
    ],
)
def test_bad_configs_are_refused_naming_the_key(raw: Any, says: str) -> None:
    with pytest.raises(ConfigError, match=says.replace("(", r"\(").replace(".", r"\.")):
        parse_config(raw)


def test_an_unreadable_config_file(tmp_path: Path) -> None:
    (tmp_path / "c.json").write_text("{nope")
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "c.json")


def test_producer_verdict_settings_are_librdkafkas_effective_values() -> None:
    plain = producer_effective(parse_config(config("producer", partitions=3)))  # type: ignore[arg-type]
    assert (
        plain["acks"],
        plain["enable.idempotence"],
        plain["max.in.flight.requests.per.connection"],
        plain["retries"],
    ) == ("all", False, 1000000, 2147483647)
    idem = producer_effective(
        parse_config(
            config(  # type: ignore[arg-type]
                "producer", partitions=3, kafka={"enable.idempotence": True}
            )
        )
    )
    assert (idem["acks"], idem["enable.idempotence"], idem["max.in.flight.requests.per.connection"]) == (
        "all",
        True,
        5,
    )
    aliases = producer_effective(
        parse_config(
            config(  # type: ignore[arg-type]
                "producer",
                partitions=3,
                kafka={
                    "request.required.acks": -1,
                    "message.send.max.retries": 0,
                    "max.in.flight": 1,
                    "message.timeout.ms": 5000,
                    "linger.ms": 0,
                },
            )
        )
    )
    assert (
        aliases["acks"],
        aliases["retries"],
        aliases["max.in.flight.requests.per.connection"],
        aliases["delivery.timeout.ms"],
        aliases["linger.ms"],
    ) == ("all", 0, 1, 5000, 0)
    assert "request.required.acks" not in aliases
    assert (
        producer_effective(
            parse_config(
                config(  # type: ignore[arg-type]
                    "producer", partitions=3, kafka={"acks": 0}
                )
            )
        )["acks"]
        == "0"
    )


def test_consumer_verdict_settings() -> None:
    c = parse_config(config("consumer", mode="group", group="g", commit="after"))
    assert isinstance(c, ConsumerConfig)
    effective = consumer_effective(
        c,
        {
            "bootstrap.servers": "h",
            "group.id": "g",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        },
    )
    assert effective["isolation.level"] == "read_committed" and effective["enable.auto.commit"] is False
    assert (effective["mode"], effective["commit"], effective["group.id"]) == ("group", "after", "g")
    assert "bootstrap.servers" not in effective


def test_every_planned_config_reads_back_as_itself() -> None:
    """The harness writes typed configs with config_to_json; the workload process reads them with parse_config."""
    from harness.spec import parse_spec
    from harness.workloadset import drain_workloads, plan_workloads
    from testbed.addressing import make_plan
    from testbed.kafka.cluster import KafkaCluster
    from testbed.kafka.config import ClusterSettings
    from testbed.runfolder import RunFolder
    from workloads.config import config_to_json, parse_config

    class NoRuntime:  # plan_workloads only reads the plan and the run folder
        plan = make_plan()

    spec = parse_spec({"name": "t", "workloads": {
        "producers": [{"azs": ["az1", "az2"], "rate": 10, "value_bytes": 64, "settings": {"acks": "all"}}],
        "consumers": [{"azs": ["az3"], "mode": "group", "commit": "after"}, {"azs": ["az1"], "mode": "assign"}]}})
    cluster = KafkaCluster(NoRuntime(), ClusterSettings(), RunFolder(Path("/r")))  # type: ignore[arg-type]
    planned = plan_workloads(spec, cluster) + drain_workloads(cluster, 30.0)
    assert [w.role for w in planned].count("observer") == 3 and len(planned) == 2 + 2 + 3 + 3
    for w in planned:
        assert w.config is not None and parse_config(config_to_json(w.config)) == w.config, w.name
        assert w.config.journal == Path("/r/journal") / f"{w.name}.jsonl"
