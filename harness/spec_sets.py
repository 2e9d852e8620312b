"""`run --set KEY=VALUE`: a key path into a spec, list entries included, and its value, applied to a spec.

A key is dotted (`cluster.partitions`); `name[N]` steps into entry N of a list and `name[*]` into every entry
(`workloads.producers[0].settings.acks`, `workloads.producers[*].settings.acks`). Where the spec's shape
(`harness.spec_keys`) says a mapping has free names whose values are settings (a client's `settings`, the
cluster's `broker_overrides`), the rest of the key is one name, dots and all: `settings.enable.idempotence`.
The value is YAML. A set applies to each spec that runs: the base spec when there are no configurations,
else each configuration's (the base with its overrides merged in), so it wins over an override; a list step
must reach an entry there, and an index out of range or a step into something that is not a list is a
SpecError naming the key.

Must never: read a file, or check a value's type (the spec's own validation does, after the sets).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

import yaml

from harness.spec_keys import SPEC
from harness.spec_types import Key, ListOf, MapOf, Scalar, Section
from testbed.errors import SpecError, UsageError

EVERY = "*"
_SEGMENT = re.compile(r"(?P<name>[^\[\]]+)(?P<indexes>(\[[^\[\]]*\])*)")
_INDEX = re.compile(r"\[([^\[\]]*)\]")


@dataclass(frozen=True)
class ListStep:
    """`[N]` or `[*]` in a key: entry N of a list, or every entry."""

    index: int | None  # None: every entry

    def __str__(self) -> str:
        return f"[{EVERY if self.index is None else self.index}]"


@dataclass(frozen=True)
class SpecSet:
    """One --set: the key as typed, its steps (names and list steps) and its value."""

    text: str
    steps: tuple[str | ListStep, ...]
    value: Any

    @property
    def key(self) -> str:
        return self.text.partition("=")[0]


def parse_sets(items: list[str]) -> tuple[SpecSet, ...]:
    """--set KEY=VALUE flags in order; UsageError on a malformed one (no `=`, an empty name, a bad `[...]`)."""
    return tuple(parse_set(item) for item in items)


def parse_set(item: str) -> SpecSet:
    key, sep, text = item.partition("=")
    if not sep or not key:
        raise UsageError(f"--set {item}: expected KEY=VALUE, e.g. settle_timeout_s=45, cluster.partitions=6 or "
                         "workloads.producers[0].settings.acks=1")
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        raise UsageError(f"--set {item}: the value is not YAML") from None
    return SpecSet(item, _steps(item, key), value)


def _steps(item: str, key: str) -> tuple[str | ListStep, ...]:
    steps: list[str | ListStep] = []
    segments = key.split(".")
    shape: Key | None = SPEC
    for i, segment in enumerate(segments):
        if isinstance(shape, MapOf) and isinstance(shape.value, Scalar):  # free setting names: the rest is one
            steps.append(".".join(segments[i:]))
            return tuple(steps)
        match = _SEGMENT.fullmatch(segment)
        if match is None:
            raise UsageError(f"--set {item}: expected KEY=VALUE with a key like a.b, a[0].b or a[*].b, "
                             f"got {segment!r} in {key!r}")
        name = match["name"]
        steps.append(name)
        shape = _child(shape, name)
        for index in _INDEX.findall(match["indexes"]):
            if index != EVERY and not index.isdigit():
                raise UsageError(f"--set {item}: {name}[{index}]: a list step is [N] (N = 0, 1, ...) or [*]")
            steps.append(ListStep(None if index == EVERY else int(index)))
            shape = shape.item if isinstance(shape, ListOf) else None
    return tuple(steps)


def _child(shape: Key | None, name: str) -> Key | None:
    """The shape of key `name` under `shape` (None where the spec's shape does not say: validation will)."""
    if isinstance(shape, Section):
        return shape.keys.get(name)
    if isinstance(shape, MapOf):
        return shape.value
    return None


def apply_sets(raw: dict[str, Any], sets: tuple[SpecSet, ...], strict: bool = True) -> dict[str, Any]:
    """A copy of `raw` with every set applied in order; SpecError naming the key where a list step cannot reach
    (not `strict`: such a set is left out, as for a base spec whose configurations each bring their own list)."""
    out = copy.deepcopy(raw)
    for spec_set in sets:
        try:
            trial = copy.deepcopy(out) if not strict else out
            _assign(trial, spec_set.steps, spec_set.value, "")
            out = trial
        except SpecError:
            if strict:
                raise
    return out


def _assign(node: Any, steps: tuple[str | ListStep, ...], value: Any, path: str) -> None:
    step, rest = steps[0], steps[1:]
    if isinstance(step, ListStep):
        if not isinstance(node, list):
            what = "the spec has none" if node is None else f"it is a {type(node).__name__}"
            raise SpecError(f"{path}{step}: {path} is not a list ({what})")
        if step.index is not None and step.index >= len(node):
            raise SpecError(f"{path}{step}: out of range: {path} has {len(node)} "
                            f"{'entry' if len(node) == 1 else 'entries'}"
                            + (f" ([0] to [{len(node) - 1}])" if node else ""))
        for i in range(len(node)) if step.index is None else (step.index,):
            if rest:
                _assign(node[i], rest, value, f"{path}[{i}]")
            else:
                node[i] = copy.deepcopy(value)
        return
    where = f"{path}.{step}" if path else step
    if not isinstance(node, dict):
        raise SpecError(f"{where}: {path} is a {type(node).__name__}, not a mapping")
    if not rest:
        node[step] = copy.deepcopy(value)
        return
    child = node.get(step)
    if not isinstance(rest[0], ListStep):
        if isinstance(child, list):
            raise SpecError(f"{where}: a list: name an entry, {where}[0] (the first) or {where}[*] (every one)")
        if not isinstance(child, dict):  # absent, empty or a value: a dotted key makes the mapping, as a merge would
            child = node[step] = {}
    _assign(child, rest, value, where)
