"""A nemesis row in words: what a fault did, to whom, as a person would say it.

The nemesis journal's ``targets`` and ``detail`` are JSON (nemesis/faults.py
says what each fault kind writes). Each kind's sentence is its record's in the
registry (nemesis/registry.py, from nemesis/fault_words.py). The report shows them as one sentence per
fault window or note, e.g. "az1 cut off from every other AZ (Kafka and
ZooKeeper traffic); broker 0 inside", and a short line of how the nemesis did
it ("scheduled at +5 s as isolate-leader; took 19 ms"). A kind this module
does not know still reads as words: its targets as "key value" pairs.
Must never: show raw JSON, or raise on a row it does not understand.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nemesis.fault_words import listed
from nemesis.registry import fault_kinds
from testbed.journal_names import HEAL_ALL


def _heal_all(t: dict[str, Any]) -> str:
    parts = []
    if t.get("resumed"):
        parts.append(f"resumed {listed(t['resumed'])}")
    if t.get("restarted"):
        parts.append(f"restarted {listed(t['restarted'])}")
    return "healed everything" + (f": {'; '.join(parts)}" if parts else "")


def sentences() -> dict[str, Callable[[dict[str, Any]], str]]:
    """The sentence of each journal name that has one: each fault kind's, from its record (nemesis/registry.py),
    and the nemesis' heal of everything."""
    return {**{kind.name: kind.words for kind in fault_kinds() if kind.words is not None}, HEAL_ALL: _heal_all}


def plain(value: Any) -> str:
    """Any JSON value without JSON's punctuation: lists as "a, b and c", mappings as "key value; key value"."""
    if isinstance(value, dict):
        return "; ".join(f"{k} {plain(v)}" for k, v in sorted(value.items()) if v not in (None, "", [], {}))
    if isinstance(value, list | tuple):
        return listed([plain(v) for v in value])
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "" if value is None else str(value)


def describe(fault: str, targets: Any, detail: Any = None) -> str:
    """What the fault did to its targets, in one sentence (without how the nemesis went about it)."""
    words = sentences().get(fault)
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
        parts.append("pid " + listed([f"{p} ({name})" for name, p in sorted(detail["pids"].items())]))
    if isinstance(detail.get("took_ms"), int | float):
        parts.append(f"took {detail['took_ms']:g} ms")
    if isinstance(detail.get("by"), str):
        parts.append(f"by {detail['by']}")
    if isinstance(detail.get("counts"), dict):
        parts += [_disk_counts(node, c) for node, c in sorted(detail["counts"].items()) if isinstance(c, dict)]
    for key, when in (("offsets", "clock offsets then"), ("offsets_at_stop", "at the stop")):
        if isinstance(detail.get(key), dict) and detail[key]:
            parts.append(f"{when} " + listed([f"{p} {_seconds(v)}" for p, v in sorted(detail[key].items())]))
    if isinstance(detail.get("flips"), int):
        parts.append(f"{detail['flips']} flips")
    return "; ".join(parts)


def _seconds(offset_ms: Any) -> str:
    """A clock offset: "-30 s", "+0.5 s"."""
    return f"{offset_ms / 1000:+g} s" if isinstance(offset_ms, int | float) else plain(offset_ms)


def _disk_counts(node: str, c: dict[str, Any]) -> str:
    """A disk fault's counts on one node: "az1-node kafka-data/faultline-0: eio-write 12, eio-fsync 3"."""
    counts = c.get("counts")
    shown = ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) if isinstance(counts, dict) else ""
    shown = shown or "no call failed or delayed"
    return f"{node} {c.get('path', '')}: {shown}"
