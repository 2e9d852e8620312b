"""What a fault did, in words: one sentence per kind from its journal row's `targets`, for the report.

Each fault kind's record (`nemesis.registry`) names its sentence here; the
report (`report/faultwords.py`) reads them from the registry and falls back to
"key value" pairs for a name with none. Each takes the journal's `targets`
(`nemesis.faults` and the other implementations say what each kind writes), e.g.
"az1 cut off from every other AZ (Kafka and ZooKeeper traffic); broker 0 inside".

Must never: show raw JSON, or import anything but the standard library (the report imports it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Words = Callable[[dict[str, Any]], str]
SCOPE_WORDS = {"all": "", "kafka": "Kafka traffic only", "zookeeper": "ZooKeeper traffic only"}


def listed(value: Any, conj: str = "and") -> str:
    """["a", "b", "c"] as "a, b and c"."""
    items = [str(v) for v in value] if isinstance(value, list | tuple) else [str(value)] if value else []
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} {conj} {items[-1]}"


def _brokers(targets: dict[str, Any], where: str = "inside") -> str:
    brokers = targets.get("brokers")
    if not isinstance(brokers, list) or not brokers:
        return ""
    noun = "broker" if len(brokers) == 1 else "brokers"
    return f"; {noun} {listed(brokers)} {where}"


def _scope(targets: dict[str, Any]) -> str:
    words = SCOPE_WORDS.get(str(targets.get("scope", "all")), str(targets.get("scope")))
    return f" ({words})" if words else ""


def isolated(t: dict[str, Any]) -> str:
    return f"{t.get('az', '?')} cut off from every other AZ{_scope(t)}{_brokers(t)}"


def link_cut(t: dict[str, Any]) -> str:
    a, b = (list(t.get("link") or []) + ["?", "?"])[:2]
    if t.get("one_way"):
        return f"packets from {a} to {b} dropped, {b} to {a} still flow{_scope(t)}{_brokers(t, 'at either end')}"
    return f"link between {a} and {b} cut both ways{_scope(t)}{_brokers(t, 'at either end')}"


def split(t: dict[str, Any]) -> str:
    return (f"minority {listed(t.get('minority'))} cut off from majority {listed(t.get('majority'))}"
            f"{_scope(t)}{_brokers(t, 'in the minority')}")


def bridged(t: dict[str, Any]) -> str:
    sides = [s for s in t.get("sides") or [] if isinstance(s, list)]
    halves = " and ".join(listed(s) for s in sides) or "the other AZs"
    return f"{halves} cut from each other; only {t.get('bridge', '?')} hears both{_scope(t)}"


def ring(t: dict[str, Any]) -> str:
    azs = t.get("ring") or []
    return (f"majorities ring over {listed(azs)}: every AZ hears a majority, no two the same one"
            f"{_scope(t)}")


def processes(verb: str, after: str) -> Words:
    """"<verb> broker-0 and broker-1<after>", from the processes (else the nodes) a process fault hit."""
    def words(t: dict[str, Any]) -> str:
        hit = t.get("processes") or t.get("nodes") or []
        return f"{verb} {listed(hit) or 'nothing'}{after}"
    return words


def disk(what: str, after: str) -> Words:
    """"<what> az1-node's kafka-data/faultline-0<after>", from the paths a disk fault acted on."""
    def words(t: dict[str, Any]) -> str:
        paths = t.get("paths") or {}
        hit = [f"{node}'s {path}" for node, path in paths.items()] if isinstance(paths, dict) else []
        return f"{what} {listed(hit) or 'nothing'}{after}"
    return words


def rolled(t: dict[str, Any]) -> str:
    brokers = t.get("brokers") or []
    if "controller" not in t:  # one step's row
        return f"rolling restart: broker {listed(brokers)} stopped cleanly and started again"
    return (f"rolling restart of brokers {listed(brokers, 'then')} (controller {t.get('controller', '?')}), "
            f"each stopped cleanly and started again")


def upgraded(t: dict[str, Any]) -> str:
    """A rolling upgrade's (downgrade's) words: its start row's, one step's, or its metadata.version change's."""
    brokers, what = t.get("brokers") or [], "rolling downgrade" if t.get("down") else "rolling upgrade"
    if "level" in t:  # the KRaft metadata.version change
        return (f"{what}: metadata.version {'lowered' if t.get('down') else 'raised'} to {t.get('metadata_version')} "
                f"(feature level {t.get('level')})")
    if "controller" not in t:  # one step's row: the version and protocol the process started on
        who = f"broker {listed(brokers)}" + ("" if t.get("role", "broker") == "broker" else "'s KRaft controller")
        protocol = t.get("inter_broker_protocol")
        return (f"{what}, roll {t.get('roll', '?')}: {who} stopped cleanly and started on Kafka "
                f"{t.get('version', '?')}" + (f", inter.broker.protocol.version {protocol}" if protocol else ""))
    head = (f"{what} of brokers {listed(brokers, 'then')} (controller {t.get('controller', '?')}) from Kafka "
            f"{t.get('from_version', '?')} to {t.get('to_version', '?')}")
    down = bool(t.get("down"))
    if "metadata_version" in t:  # KRaft
        level = t.get("metadata_version")
        if not level:
            change = ", metadata.version left where it was"
        else:
            change = f", metadata.version first lowered to {level}" if down else f", then metadata.version raised to {level}"
        rolled = "the brokers then the controllers" if down else "the controllers then the brokers"
        return f"{head}: {rolled} stopped cleanly and started on the {'older' if down else 'new'} version{change}"
    pinned = t.get("pinned") or {}
    pins = listed([f"{k} {v}" for k, v in pinned.items()]) if isinstance(pinned, dict) else "?"
    if down:
        return f"{head}: each stopped cleanly and started on the older version with {pins} kept"
    bump = (f", then a second roll bumping inter.broker.protocol.version to {t['bumped_to']}" if t.get("bumped_to")
            else ", the protocol left pinned")
    return f"{head}: each stopped cleanly and started on the new version with {pins}{bump}"


def reassigned(t: dict[str, Any]) -> str:
    parts = t.get("partitions") or []
    return f"{'partition' if len(parts) == 1 else 'partitions'} {listed(parts)} of {t.get('topic', '?')} reassigned to brokers {listed(t.get('replicas') or [])}"


def controller_removed(t: dict[str, Any]) -> str:
    active = " (the active one)" if t.get("was_leader") else ""
    return f"KRaft controller {t.get('controller', '?')} of {listed(t.get('nodes') or [])}{active} removed from the voters"


def controller_added(t: dict[str, Any]) -> str:
    return f"KRaft controller {t.get('controller', '?')} of {listed(t.get('nodes') or [])} formatted afresh and added " \
           f"to the voters"


def clock(what: str, verb: str, after: str) -> Words:
    """"clock of az1-node/broker stepped by -30 s", from the processes a clock fault shifted."""
    def words(t: dict[str, Any]) -> str:
        offset = t.get("offset_ms")
        by = f" {verb} {offset / 1000:+g} s" if isinstance(offset, int | float) else ""
        return f"{what} {listed(t.get('processes') or []) or 'nothing'}{by}{after}"
    return words


def migrated(t: dict[str, Any]) -> str:
    phase = t.get("phase")
    if phase is None:  # the start row
        return (f"migration from ZooKeeper to KRaft of brokers {listed(t.get('brokers') or [], 'then')} (Kafka "
                f"{t.get('version', '?')}, ZooKeeper's controller {t.get('controller', '?')}): KRaft controllers "
                f"started, the brokers rolled into migration, then into KRaft, the controllers finalized")
    nodes = listed(t.get("nodes") or []) or "the cluster"
    modes = ", ".join(f"{role} {t[f'{role}_mode']}" for role in ("broker", "controller") if f"{role}_mode" in t)
    return f"ZooKeeper to KRaft, phase {phase}: {nodes}" + (f" now runs {modes}" if modes else "")
