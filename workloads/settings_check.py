"""Client settings checked by librdkafka itself, when a spec is read and before anything connects.

A spec may give its producers and consumers any librdkafka property. Rather
than keep a copy of librdkafka's property list, each setting is handed to a
client of that role built without `bootstrap.servers` (so it opens no
connection), then the settings together: an unknown name, a malformed or
out-of-range value, a property of the other role (which librdkafka would only
warn about and ignore) or a combination librdkafka refuses (idempotence with
acks=1) comes back as a `SettingRefused` naming the setting, in librdkafka's
own words. Settings the workload derives itself are refused too
(`workloads.config.RESERVED_SETTINGS`).

Must never: connect to anything, or let librdkafka print to the console.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Literal

from confluent_kafka import Consumer, KafkaException, Producer

from workloads.config import RESERVED_SETTINGS, KafkaValue

ClientRole = Literal["producer", "consumer"]
_IGNORED = "will be ignored by this"  # librdkafka's warning for a property of the other role
_CHECK_GROUP = "faultline-settings-check"  # librdkafka builds no consumer without a group.id


class SettingRefused(ValueError):
    """A setting (`key`, or None for the settings together) that the client would not take."""

    def __init__(self, key: str | None, problem: str) -> None:
        super().__init__(problem)
        self.key = key
        self.problem = problem


class _Lines:
    """A logger for librdkafka that keeps its lines instead of printing them."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def log(self, level: int, fmt: str, *args: Any) -> None:
        line = fmt % args if args else fmt
        self.lines.append(line.split("]: ", 1)[-1])  # drop "CONFWARN [rdkafka#producer-1] [thrd:app]"


@functools.lru_cache(maxsize=4096)
def _refusal(role: ClientRole, items: tuple[tuple[str, KafkaValue], ...]) -> str | None:
    """librdkafka's objection to a client of `role` with these settings, or None."""
    lines = _Lines()
    conf: dict[str, Any] = {**dict(items), "logger": lines}
    try:
        if role == "producer":
            producer = Producer(conf)
            producer.poll(0)  # hands the construction's log lines to `lines`
            del producer
        else:
            consumer = Consumer({"group.id": _CHECK_GROUP, **conf})
            consumer.poll(0)
            consumer.close()
    except KafkaException as exc:
        return _plain(str(exc.args[0].str()))
    except (ValueError, TypeError) as exc:
        return _plain(str(exc))
    ignored = [line for line in lines.lines if _IGNORED in line]
    return ignored[0].strip() if ignored else None


def _plain(problem: str) -> str:
    return problem.strip().removeprefix("Failed to create producer: ").removeprefix("Failed to create consumer: ")


def check_settings(role: ClientRole, settings: Mapping[str, Any]) -> None:
    """Raise SettingRefused for the first setting a client of `role` would not take, or for the whole."""
    for key in sorted(settings):
        value = settings[key]
        if not isinstance(value, str | int | float):  # booleans are ints
            raise SettingRefused(key, f"must be a string, number or boolean, got {value!r}")
        if key in RESERVED_SETTINGS[role]:
            raise SettingRefused(key, "set by the harness itself (the workload derives it)")
        problem = _refusal(role, ((key, value),))
        if problem:
            raise SettingRefused(key, f"librdkafka refuses it: {problem}")
    problem = _refusal(role, tuple(sorted(settings.items())))
    if problem:
        raise SettingRefused(None, f"librdkafka refuses these together: {problem}")


TXN_ID_PLACEHOLDER = "faultline-settings-check"


def check_transactional(settings: Mapping[str, Any]) -> None:
    """Raise SettingRefused if librdkafka would not build a transactional producer with these settings."""
    problem = _refusal("producer", tuple(sorted({**settings, "transactional.id": TXN_ID_PLACEHOLDER}.items())))
    if problem:
        raise SettingRefused(None, f"librdkafka refuses these for a transactional producer: {problem}")
