"""Which anomaly instances are errors, from the `processes` table.

The rules of spec/history.md, attributed per process: a value's anomaly is
judged by the configuration of the process that wrote it; a pair of writes
or reads by the process that made them. A process with no `processes` row,
or with rows that disagree, is judged strictly: every anomaly is an error.
Settings a row leaves out take the Kafka 2.7 client defaults (acks=1,
enable.idempotence=false, max.in.flight.requests.per.connection=5).

The result is data (a `Rule` per anomaly) so both engines apply it with one
``isin`` over a handful of process names. Each anomaly's record (checkers.anomalies)
names its `Judge`, one of those below; `checkers.anomalies.rules` asks every record's.

Must never: name an anomaly or import checkers.anomalies (the records import this module).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal


@dataclass(frozen=True)
class ClientConfig:
    """The settings of one client process that matter to the verdict."""

    acks: str  # "all", "1", "0", or the text given when it is none of these
    idempotent: bool
    max_in_flight: int | None
    transactional: bool = False  # `transactional.id` set (contract v2): counts as idempotent
    read_committed: bool = False  # `isolation.level` is `read_committed` (left out: read_uncommitted)
    commit: str | None = None  # `processes.commit` (contract v3): before, after, auto, none; null: not a group member
    from_beginning: bool = False  # `auto.offset.reset` earliest, smallest or beginning (contract v3)


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


FROM_BEGINNING = ("earliest", "smallest", "beginning")  # auto.offset.reset values that start at the beginning


def parse_config(text: str | None, commit: str | None = None) -> ClientConfig:
    """A `processes.config` JSON object string (and, contract v3, its `commit` column) as a ClientConfig."""
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
        commit=commit,
        from_beginning=str(settings.get("auto.offset.reset", "")).strip().lower() in FROM_BEGINNING,
    )


def known_configs(rows: Iterable[tuple[str, str | None] | tuple[str, str | None, str | None]]
                  ) -> dict[str, ClientConfig]:
    """Each process's config from (process, config) or (process, config, commit) rows; disagreeing processes are
    left out."""
    configs: dict[str, ClientConfig] = {}
    conflicting: set[str] = set()
    for process, text, *commit in rows:
        config = parse_config(text, commit[0] if commit else None)
        if configs.setdefault(process, config) != config:
            conflicting.add(process)
    return {p: c for p, c in configs.items() if p not in conflicting}


@dataclass(frozen=True)
class Judge:
    """When one anomaly's instances are errors: the rule for a history's configs, and the same in words."""

    error_when: str  # for docs/history.md's table
    info_when: str
    rule: Callable[[Mapping[str, ClientConfig], frozenset[str]], Rule]  # (configs, group consumers) -> Rule

    def __call__(self, configs: Mapping[str, ClientConfig], group_consumers: Iterable[str]) -> Rule:
        return self.rule(configs, frozenset(group_consumers))


def _info_for(keep: Callable[[ClientConfig], bool]) -> Callable[[Mapping[str, ClientConfig], frozenset[str]], Rule]:
    """By process: information for a process whose known config passes ``keep``."""
    return lambda configs, _groups: Rule("by-process", frozenset(p for p, c in configs.items() if keep(c)))


ALWAYS = Judge("always", "never", lambda _configs, _groups: Rule("error"))
NEVER = Judge("never", "always", lambda _configs, _groups: Rule("info"))
UNLESS_ACKS_0 = Judge("the writer had acks=all (-1) or acks=1", "acks=0 (it acknowledges nothing)",
                      _info_for(lambda c: c.acks == "0"))
UNLESS_AT_LEAST_ONCE = Judge("the writer had idempotence enabled", "otherwise (at-least-once delivery allows it)",
                             _info_for(lambda c: not c.idempotent))
UNLESS_PIPELINED = Judge("the writer had idempotence enabled, or max.in.flight.requests.per.connection = 1",
                         "otherwise", _info_for(lambda c: not c.idempotent and c.max_in_flight != 1))
UNLESS_GROUP_CONSUMER = Judge(
    "a consumer with a fixed assignment that never seeked", "a group consumer (a rebalance may rewind)",
    lambda configs, groups: Rule("by-process", frozenset(p for p in configs if p in groups)))
# Contract v3: a group-skip instance is attributed to a member of its group not known to commit `after` where there
# is one (checkers.group_terms.attribute), so it is information unless every member commits after processing.
UNLESS_NOT_ALL_AFTER = Judge(
    "every member of the group has `commit` `after`",
    "otherwise (at-most-once and auto-commit may skip what a crash interrupted; a member without a `processes` "
    "row has no commit mode)",
    lambda configs, groups: Rule("by-process", frozenset(p for p in groups if p not in configs
                                                         or configs[p].commit != "after")))
# An instance is attributed to a writer of its outputs that is transactional (or has no known config) where
# there is one: information only when every writer is known not to be transactional.
UNLESS_NOT_TRANSACTIONAL = Judge(
    "some process that wrote one of those outputs is transactional (`transactional.id` set) or has no "
    "`processes` row", "every writer is known not to be transactional (at-least-once processing allows it)",
    _info_for(lambda c: not c.transactional))
