"""A nemesis row in words: what a fault did, to whom, as a person would say it.

The nemesis journal's ``targets`` and ``detail`` are JSON (nemesis/faults.py
says what each fault kind writes). The report shows them as one sentence per
fault window or note, e.g. "az1 cut off from every other AZ (Kafka and
ZooKeeper traffic); broker 0 inside", and a short line of how the nemesis did
it ("scheduled at +5 s as isolate-leader; took 19 ms"). A kind this module
does not know still reads as words: its targets as "key value" pairs.
Must never: show raw JSON, or raise on a row it does not understand.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

SCOPE_WORDS = {"all": "", "kafka": "Kafka traffic only", "zookeeper": "ZooKeeper traffic only"}
ROLE_WORDS = {"broker": "broker", "zookeeper": "ZooKeeper"}


def _list(value: Any, conj: str = "and") -> str:
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
    return f"; {noun} {_list(brokers)} {where}"


def _scope(targets: dict[str, Any]) -> str:
    words = SCOPE_WORDS.get(str(targets.get("scope", "all")), str(targets.get("scope")))
    return f" ({words})" if words else ""


def _isolate(t: dict[str, Any]) -> str:
    return f"{t.get('az', '?')} cut off from every other AZ{_scope(t)}{_brokers(t)}"


def _cut_link(t: dict[str, Any]) -> str:
    a, b = (list(t.get("link") or []) + ["?", "?"])[:2]
    if t.get("one_way"):
        return f"packets from {a} to {b} dropped, {b} to {a} still flow{_scope(t)}{_brokers(t, 'at either end')}"
    return f"link between {a} and {b} cut both ways{_scope(t)}{_brokers(t, 'at either end')}"


def _split(t: dict[str, Any]) -> str:
    return (f"minority {_list(t.get('minority'))} cut off from majority {_list(t.get('majority'))}"
            f"{_scope(t)}{_brokers(t, 'in the minority')}")


def _bridge(t: dict[str, Any]) -> str:
    sides = [s for s in t.get("sides") or [] if isinstance(s, list)]
    halves = " and ".join(_list(s) for s in sides) or "the other AZs"
    return f"{halves} cut from each other; only {t.get('bridge', '?')} hears both{_scope(t)}"


def _ring(t: dict[str, Any]) -> str:
    ring = t.get("ring") or []
    return (f"majorities ring over {_list(ring)}: every AZ hears a majority, no two the same one"
            f"{_scope(t)}")


def _processes(verb: str, after: str) -> Callable[[dict[str, Any]], str]:
    def words(t: dict[str, Any]) -> str:
        processes = t.get("processes") or t.get("nodes") or []
        return f"{verb} {_list(processes) or 'nothing'}{after}"
    return words


def _heal_all(t: dict[str, Any]) -> str:
    parts = []
    if t.get("resumed"):
        parts.append(f"resumed {_list(t['resumed'])}")
    if t.get("restarted"):
        parts.append(f"restarted {_list(t['restarted'])}")
    return "healed everything" + (f": {'; '.join(parts)}" if parts else "")


WORDS: dict[str, Callable[[dict[str, Any]], str]] = {
    "isolate-az": _isolate,
    "cut-link": _cut_link,
    "split": _split,
    "bridge": _bridge,
    "majorities-ring": _ring,
    "kill": _processes("SIGKILL to", ", restarted when it stops"),
    "power-off": _processes("power cut to", ": every process died at once, restarted when it stops"),
    "pause": _processes("SIGSTOP to", ", SIGCONT when it stops"),
    "graceful-stop": _processes("clean shutdown of", ", restarted when it stops"),
    "heal-all": _heal_all,
}


def plain(value: Any) -> str:
    """Any JSON value without JSON's punctuation: lists as "a, b and c", mappings as "key value; key value"."""
    if isinstance(value, dict):
        return "; ".join(f"{k} {plain(v)}" for k, v in sorted(value.items()) if v not in (None, "", [], {}))
    if isinstance(value, list | tuple):
        return _list([plain(v) for v in value])
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "" if value is None else str(value)


def describe(fault: str, targets: Any, detail: Any = None) -> str:
    """What the fault did to its targets, in one sentence (without how the nemesis went about it)."""
    words = WORDS.get(fault)
    if words is not None and isinstance(targets, dict):
        try:
            text = words(targets)
        except (TypeError, ValueError, AttributeError):
            text = f"{fault}: {plain(targets)}"
    else:
        shown = plain(targets)
        text = f"{fault} {shown}" if shown else fault
    if isinstance(detail, dict) and detail.get("error"):
        text += f"; failed: {detail['error']}"
    elif detail is not None and not isinstance(detail, dict):
        text += f": {plain(detail)}"
    return text


def how(detail: Any) -> str:
    """How the nemesis did it, from a start row's detail: "isolate-leader, scheduled at +5 s; 16 host pairs cut"."""
    if not isinstance(detail, dict):
        return ""
    parts = []
    if detail.get("name"):
        parts.append(str(detail["name"]) + (f", scheduled at +{detail['at_s']:g} s"
                                            if isinstance(detail.get("at_s"), int | float) else ""))
    spec = detail.get("spec")
    if isinstance(spec, dict) and spec.get("target"):
        parts.append(f"target was the {plain(spec['target'])}")
    if isinstance(detail.get("cut"), list):
        parts.append(f"{len(detail['cut'])} one-way host pairs dropped")
    if isinstance(detail.get("pids"), dict) and detail["pids"]:
        parts.append("pid " + _list([f"{p} ({name})" for name, p in sorted(detail["pids"].items())]))
    if isinstance(detail.get("took_ms"), int | float):
        parts.append(f"took {detail['took_ms']:g} ms")
    if isinstance(detail.get("by"), str):
        parts.append(f"by {detail['by']}")
    return "; ".join(parts)
