"""The keys of the operation faults (`rolling-restart`, `rolling-upgrade`, `rolling-downgrade`, `reassign`), validated into `FaultSpec.options`.

An operation is an operator's action that runs on its own once started (a roll of every broker, a
partition reassignment) while the schedule goes on, so other faults can start and stop during it;
its stop waits for it to end (`nemesis.operations`). Its keys:

- `rolling-restart`: `controller_at` (where the controller's broker comes in the roll: `last`, the
  default, `first`, or a position from 0), `wait` (`isr`, the default: before the next broker, wait
  until every partition of the run's topics has a full ISR again, for at most `wait_s` seconds; or a
  number: a fixed pause of that many seconds), `wait_s` (default 120).
- `rolling-upgrade`: `rolling-restart`'s keys, and `to_version` (the Kafka version each broker is started on,
  required; ZooKeeper stays on the cluster's) and `bump` (default true: a second roll bumps
  `inter.broker.protocol.version` to the new version's once every broker runs it; false: the cluster stays on the
  pinned protocol, as an operator who has not bumped it yet). On KRaft: a roll of the controllers, then of the
  brokers; `bump` then raises the finalized `metadata.version` to the new release's level (false: left at the old).
- `rolling-downgrade`: `rolling-restart`'s keys, and `to_version` (the older Kafka version each broker, and on KRaft
  each controller, is started on, required): ZooKeeper mode keeps the protocol in force; KRaft first lowers
  `metadata.version` to the older release's level (a safe downgrade only).
- `reassign`: `topic` (`test`, the topic under test, the default; `__consumer_offsets`;
  `__transaction_state`), `partitions` (default: every partition of the topic under test; required for
  an internal topic), `replicas` (the broker ids each partition moves to, the first its preferred
  leader), `throttle_kbit` (a replication throttle on every broker while it runs, in kilobits per
  second), `wait_s` (how long the stop waits for the move to complete before cancelling it, journaled;
  default 300).

- `remove-controller` (`nemesis.controller_membership`): `target` (the node whose controller is removed;
  `controller`: the active one), `shutdown` (`after`, the default: its process stopped once it is no longer a
  voter; `before`: stopped first; `none`: left running), `wait_s` (how long to wait for the new voter set, default 60).
- `add-controller`: `target` (default: the one node whose controller is not a voter), `wait_s` (how long the new
  observer may take to catch up, and the new voter set to show it, default 60).

Must never: reach a cluster (whether the brokers exist, and whether the runtime and the cluster's version can take
the new version, are the harness's checks, against the cluster).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from testbed.dist.versions import VERSION_RE
from testbed.errors import SpecError

ROLL_KEYS = ("controller_at", "wait", "wait_s")
UPGRADE_KEYS = (*ROLL_KEYS, "to_version", "bump")
DOWNGRADE_KEYS = (*ROLL_KEYS, "to_version")
REASSIGN_KEYS = ("topic", "partitions", "replicas", "throttle_kbit", "wait_s")
REMOVE_CONTROLLER_KEYS = ("target", "shutdown", "wait_s")
ADD_CONTROLLER_KEYS = ("target", "wait_s")
SHUTDOWNS = ("after", "before", "none")  # remove-controller: when the removed controller's process is stopped
MEMBERSHIP_WAIT_S = 60.0
TOPICS = ("test", "__consumer_offsets", "__transaction_state")  # `test`: the topic under test
ROLL_WAIT_S = 120.0
REASSIGN_WAIT_S = 300.0


def _number(path: str, value: Any, low: float, strict: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < low or (strict and value == low):
        raise SpecError(f"{path}: expected a number {'>' if strict else '>='} {low:g}, got {value!r}")
    return float(value)


def _ids(path: str, value: Any, what: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not value or any(isinstance(v, bool) or not isinstance(v, int) or v < 0
                                                       for v in value):
        raise SpecError(f"{path}: expected a non-empty list of {what} (whole numbers >= 0), got {value!r}")
    if len(set(value)) != len(value):
        raise SpecError(f"{path}: {value!r} names a {what[:-1]} twice")
    return tuple(value)


def parse_roll(path: str, raw: Mapping[str, Any]) -> dict[str, Any]:
    """`rolling-restart`'s options: controller_at ("last", "first" or an int), wait ("isr" or seconds), wait_s."""
    at = raw.get("controller_at", "last")
    if at not in ("last", "first") and (isinstance(at, bool) or not isinstance(at, int) or at < 0):
        raise SpecError(f"{path}.controller_at: expected last, first or a position from 0, got {at!r}")
    wait = raw.get("wait", "isr")
    if wait != "isr":
        wait = _number(f"{path}.wait", wait, 0)
    return {"controller_at": at, "wait": wait, "wait_s": _number(f"{path}.wait_s", raw.get("wait_s", ROLL_WAIT_S),
                                                                  0, strict=True)}


def parse_downgrade(path: str, raw: Mapping[str, Any]) -> dict[str, Any]:
    """`rolling-downgrade`'s options: the roll's and to_version (a version's form; the table's row, whether the
    versions and metadata allow it and what runs it are `harness.spec_checks`')."""
    version = raw["to_version"]
    if not isinstance(version, str) or not VERSION_RE.match(version):
        raise SpecError(f"{path}.to_version: expected a Kafka version such as 3.9.1, got {version!r}")
    return {**parse_roll(path, raw), "to_version": version}


def parse_upgrade(path: str, raw: Mapping[str, Any]) -> dict[str, Any]:
    """`rolling-upgrade`'s options: `rolling-downgrade`'s, and bump (a second roll bumping the inter-broker
    protocol, on KRaft the metadata.version raised; default true)."""
    bump = raw.get("bump", True)
    if not isinstance(bump, bool):
        raise SpecError(f"{path}.bump: expected true or false, got {bump!r}")
    return {**parse_downgrade(path, raw), "bump": bump}


def parse_reassign(path: str, raw: Mapping[str, Any]) -> dict[str, Any]:
    """`reassign`'s options: topic, partitions (None: every partition of the topic under test), replicas,
    throttle_kbit (None: no throttle), wait_s."""
    topic = raw.get("topic", "test")
    if topic not in TOPICS:
        raise SpecError(f"{path}.topic: {topic!r} is not one of {', '.join(TOPICS)} (test: the topic under test)")
    partitions = _ids(f"{path}.partitions", raw["partitions"], "partitions") if "partitions" in raw else None
    if partitions is None and topic != "test":
        raise SpecError(f"{path}.partitions: required with topic {topic} (which of its partitions to move)")
    throttle = raw.get("throttle_kbit")
    if throttle is not None and (_number(f"{path}.throttle_kbit", throttle, 1) != int(throttle)):
        raise SpecError(f"{path}.throttle_kbit: expected a whole number of kbit/s, got {throttle!r}")
    return {"topic": topic, "partitions": partitions, "replicas": _ids(f"{path}.replicas", raw["replicas"], "brokers"),
            "throttle_kbit": None if throttle is None else int(throttle),
            "wait_s": _number(f"{path}.wait_s", raw.get("wait_s", REASSIGN_WAIT_S), 0, strict=True)}



def parse_membership(path: str, raw: Mapping[str, Any]) -> dict[str, Any]:
    """`remove-controller`'s and `add-controller`'s options: shutdown (remove only, default after), wait_s."""
    shutdown = raw.get("shutdown", "after")
    if shutdown not in SHUTDOWNS:
        raise SpecError(f"{path}.shutdown: expected one of {', '.join(SHUTDOWNS)}, got {shutdown!r}")
    return {"shutdown": shutdown,
            "wait_s": _number(f"{path}.wait_s", raw.get("wait_s", MEMBERSHIP_WAIT_S), 0, strict=True)}
