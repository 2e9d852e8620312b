"""The spec's consume-transform-produce groups (`workloads.transformers`) and the topics clients name.

A transformer group reads `input_topic` and writes `output_topic`, both topics
of the cluster (`cluster.topic` and `cluster.extra_topics`), never the same
one; a producer group's `topic` must be one of them too. Errors name the key.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from harness.spec_keys import TRANSFORMER
from testbed.errors import SpecError
from testbed.kafka.config import ClusterSettings


@dataclass(frozen=True)
class TransformerGroup:
    azs: tuple[str, ...]
    per_az: int
    input_topic: str
    output_topic: str
    group: str
    mode: str
    batch: int
    transaction_timeout_ms: int
    kill_every_s: float
    restart_delay_s: float
    kill_first_s: float | None = None  # None: kill_every_s

    @property
    def transactional(self) -> bool:
        return self.mode == "exactly-once"


def check_topic(where: str, topic: str, cluster: ClusterSettings) -> str:
    if topic not in cluster.topics:
        raise SpecError(f"{where}: no topic {topic!r} in this cluster (its topics: {', '.join(cluster.topics)}; "
                        "name further ones in cluster.extra_topics)")
    return topic


def check_topics(cluster: ClusterSettings, producer_topics: list[str | None]) -> None:
    """`cluster.extra_topics` distinct from each other and the topic; each producer group's `topic` one of them."""
    for i, topic in enumerate(cluster.extra_topics):
        if cluster.topics.index(topic) != i + 1:
            raise SpecError(f"cluster.extra_topics[{i}]: {topic!r} is named twice (or is the cluster's topic)")
    for i, named in enumerate(producer_topics):
        if named is not None:
            check_topic(f"workloads.producers[{i}].topic", named, cluster)


def parse_transformers(workloads: dict[str, Any] | None, cluster: ClusterSettings, producer_topics: list[str | None],
                       azs: Any) -> tuple[TransformerGroup, ...]:
    """Every transformer group of `workloads.transformers`, the topics checked first (`check_topics`);
    `azs(where, raw, nodes)` resolves a group's AZs."""
    check_topics(cluster, producer_topics)
    groups = []
    for i, t in enumerate((workloads or {}).get("transformers") or []):
        where, v = f"workloads.transformers[{i}]", functools.partial(TRANSFORMER.value, t)
        if "input_topic" not in t:
            raise SpecError(f"{where}.input_topic: required (the topic a transformer reads, one of "
                            f"cluster.extra_topics)")
        source = check_topic(f"{where}.input_topic", t["input_topic"], cluster)
        output = check_topic(f"{where}.output_topic", t.get("output_topic", cluster.topic), cluster)
        if source == output:
            raise SpecError(f"{where}.output_topic: {output!r} is also its input_topic")
        if v("mode") != "exactly-once" and "transaction_timeout_ms" in t:
            raise SpecError(f"{where}.transaction_timeout_ms: only for mode exactly-once")
        groups.append(TransformerGroup(
            azs=azs(where, t, cluster.nodes), per_az=v("per_az"), input_topic=source, output_topic=output,
            group=t.get("group", f"faultline-t{i}"), mode=v("mode"), batch=v("batch"),
            transaction_timeout_ms=v("transaction_timeout_ms"), kill_every_s=float(v("kill_every_s")),
            restart_delay_s=float(v("restart_delay_s")),
            kill_first_s=None if v("kill_first_s") is None else float(v("kill_first_s"))))
    return tuple(groups)
