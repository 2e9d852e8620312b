"""Which anomaly instances are errors, from the `processes` table.

The rules of spec/history.md, attributed per process: a value's anomaly is
judged by the configuration of the process that wrote it; a pair of writes
or reads by the process that made them. A process with no `processes` row,
or with rows that disagree, is judged strictly: every anomaly is an error.
Settings a row leaves out take the Kafka 2.7 client defaults (acks=1,
enable.idempotence=false, max.in.flight.requests.per.connection=5).

The result is data (a `Rule` per anomaly) so both engines apply it with one
``isin`` over a handful of process names.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from checkers.anomalies import (
    ANOMALIES,
    DUPLICATE,
    LOST,
    NONMONOTONIC_POLL,
    RECOVERED,
    REORDERED,
    REPROCESSED,
)


@dataclass(frozen=True)
class ClientConfig:
    """The settings of one client process that matter to the verdict."""

    acks: str  # "all", "1", "0", or the text given when it is none of these
    idempotent: bool
    max_in_flight: int | None
    transactional: bool = False  # `transactional.id` set (contract v2): counts as idempotent
    read_committed: bool = False  # `isolation.level` is `read_committed` (left out: read_uncommitted)


DEFAULT_CONFIG = ClientConfig(acks="1", idempotent=False, max_in_flight=5)


@dataclass(frozen=True)
class Rule:
    """How to judge one anomaly's instances.

    ``error``: every instance is an error. ``info``: none is. ``by-process``:
    an instance is an error unless its attributed process is one of
    ``info_processes`` (a null process is an error).
    """

    kind: Literal["error", "info", "by-process"]
    info_processes: frozenset[str] = frozenset()

    def is_error(self, process: str | None) -> bool:
        """The rule applied to one instance attributed to ``process``."""
        if self.kind != "by-process":
            return self.kind == "error"
        return process is None or process not in self.info_processes


def _acks(value: Any) -> str:
    text = str(value).strip().lower()
    return "all" if text in ("all", "-1") else text


def _flag(value: Any) -> bool:
    return str(value).strip().lower() in ("true", "1", "yes")


def _int_or_none(value: Any) -> int | None:
    try:
        return int(str(value).strip())
    except ValueError:
        return None


def parse_config(text: str | None) -> ClientConfig:
    """A `processes.config` JSON object string as a ClientConfig (defaults filled in)."""
    settings: dict[str, Any] = json.loads(text) if text else {}
    transactional = settings.get("transactional.id") not in (None, "")
    return ClientConfig(
        acks=_acks(settings.get("acks", DEFAULT_CONFIG.acks)),
        idempotent=transactional or _flag(settings.get("enable.idempotence", DEFAULT_CONFIG.idempotent)),
        max_in_flight=_int_or_none(
            settings.get("max.in.flight.requests.per.connection", DEFAULT_CONFIG.max_in_flight)
        ),
        transactional=transactional,
        read_committed=str(settings.get("isolation.level", "")).strip().lower() == "read_committed",
    )


def known_configs(rows: Iterable[tuple[str, str | None]]) -> dict[str, ClientConfig]:
    """Each process's config from (process, config) rows; disagreeing processes are left out."""
    configs: dict[str, ClientConfig] = {}
    conflicting: set[str] = set()
    for process, text in rows:
        config = parse_config(text)
        if configs.setdefault(process, config) != config:
            conflicting.add(process)
    return {p: c for p, c in configs.items() if p not in conflicting}


def rules(configs: Mapping[str, ClientConfig], group_consumers: Iterable[str]) -> dict[str, Rule]:
    """The rule for every anomaly, given the known configs and the group consumers."""
    groups = frozenset(group_consumers)
    table = {name: Rule("error") for name in ANOMALIES}
    table[RECOVERED] = Rule("info")
    table[LOST] = Rule("by-process", frozenset(p for p, c in configs.items() if c.acks == "0"))
    table[DUPLICATE] = Rule("by-process", frozenset(p for p, c in configs.items() if not c.idempotent))
    table[REORDERED] = Rule(
        "by-process",
        frozenset(p for p, c in configs.items() if not c.idempotent and c.max_in_flight != 1),
    )
    table[NONMONOTONIC_POLL] = Rule("by-process", frozenset(p for p in configs if p in groups))
    # An instance is attributed to a writer of its outputs that is transactional (or has no known config) where
    # there is one: information only when every writer is known not to be transactional.
    table[REPROCESSED] = Rule("by-process", frozenset(p for p, c in configs.items() if not c.transactional))
    return table
