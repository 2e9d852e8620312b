"""The spec's consumer groups (`workloads.consumers`): assign readers and group members, and how members commit.

A group member (mode `group`) commits as its `commit` says (contract v3: before, after, auto, none), may
spend `processing_ms` where a kill shows its guarantee (workloads/consumer.py), and may be killed and restarted on schedule
(`kill_every_s`, as a transformer). Errors name the key, one line: a group key on an assign consumer, an
`enable.auto.commit` setting that contradicts `commit`.

Must never: start, create or connect to anything (like harness.spec, which calls it).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.spec_groups import check_protocol_settings
from harness.spec_keys import CONSUMER
from harness.spec_types import fail

GROUP_ONLY = ("group", "commit", "processing_ms")  # keys of a group member only


@dataclass(frozen=True)
class ConsumerGroup:
    azs: tuple[str, ...]
    per_az: int
    mode: str
    group: str | None
    commit: str
    settings: dict[str, Any] = field(default_factory=dict)
    isolation_level: str = "read_committed"
    processing_ms: int = 0
    kill_every_s: float = 0.0
    kill_first_s: float | None = None  # None: kill_every_s
    restart_delay_s: float = 1.0


def _auto_commit(where: str, commit: str, c: dict[str, Any]) -> dict[str, Any]:
    """The consumer's settings without enable.auto.commit, which its `commit` decides: a value that agrees is
    dropped, one that contradicts it refused (contract v3)."""
    settings = dict(c.get("settings") or {})
    if "enable.auto.commit" not in settings:
        return settings
    given = str(settings.pop("enable.auto.commit")).strip().lower() in ("true", "1")
    if c.get("mode") == "group" and given != (commit == "auto"):
        raise fail(f"{where}.settings.enable.auto.commit",
                   f"{str(given).lower()} contradicts commit {commit} (auto commits with enable.auto.commit true; "
                   "before, after and none with it false): say it with the consumer key commit")
    return settings


def parse_consumers(raw: dict[str, Any], nodes: int, azs: Callable[[str, dict[str, Any], int], tuple[str, ...]],
                    settings: Callable[[str, Any, dict[str, Any]], dict[str, Any]]) -> tuple[ConsumerGroup, ...]:
    """Every consumer group of `workloads.consumers`; `azs(where, raw, nodes)` resolves its AZs and
    `settings(where, role, raw)` checks its librdkafka settings (harness.spec's)."""
    consumers = []
    for i, c in enumerate(raw.get("consumers") or []):
        where, v = f"workloads.consumers[{i}]", functools.partial(CONSUMER.value, c)
        mode = v("mode")
        for key in GROUP_ONLY:
            if mode == "assign" and key in c:
                raise fail(f"{where}.{key}", "only a group consumer (mode: group) has a group and commits")
        if "isolation.level" in (c.get("settings") or {}):
            raise fail(f"{where}.settings.isolation.level", "set it with the consumer key isolation_level")
        if mode == "group":  # before librdkafka's own check, whose words name no key
            check_protocol_settings(f"{where}.settings", dict(c.get("settings") or {}))
        consumers.append(ConsumerGroup(
            azs=azs(where, c, nodes), per_az=v("per_az"), mode=mode,
            group=c.get("group", f"faultline-g{i}") if mode == "group" else None, commit=v("commit"),
            settings=settings(f"{where}.settings", "consumer", _auto_commit(where, v("commit"), c)),
            isolation_level=v("isolation_level"), processing_ms=v("processing_ms"),
            kill_every_s=float(v("kill_every_s")),
            kill_first_s=None if v("kill_first_s") is None else float(v("kill_first_s")),
            restart_delay_s=float(v("restart_delay_s"))))
    return tuple(consumers)
