"""Fault schedules: a fixed timeline from the spec, and seeded random chaos. Pure data and validation.

A schedule is a list (the spec's `nemesis:` key). Each item is one of:

- a start: `{at: 10, fault: isolate-az, target: leader, name: iso}`: at 10 s
  from the start of the run, start the fault (any fault spec's keys, see
  `nemesis.spec`); `name` (optional, default `<fault>#<index>`) lets a later
  item stop it.
- a stop: `{at: 40, stop: iso}` (or `heal: iso`): undo that named fault.
- a heal of everything: `{at: 40, heal: all}`: undo every active fault.
- random chaos: `{random-chaos: {from: 10, until: 290, seed: 7, faults: [...],
  duration: [5, 15], interval: [5, 15]}}`: from `from` to `until` seconds,
  repeatedly wait a healthy interval, start one fault drawn from `faults`
  (default: every kind, see `DEFAULT_CHAOS`), keep it for a drawn duration
  and stop it; one fault at a time, all stopped by `until`. Intervals and
  durations are drawn uniformly from [low, high]. The same `seed` (default:
  the nemesis's seed) gives the same faults at the same times.

Validation raises `SpecError` naming the key path (`nemesis[3].stop: ...`).
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from nemesis.fault_spec import FaultSpec
from nemesis.spec import parse_fault
from testbed.errors import SpecError

HEAL_ALL = "all"
# Every kind but split, the degraded links (opt-in: a docker runtime cannot delay or throttle) and the operations
# (opt-in: a roll outlasts a drawn duration).
DEFAULT_CHAOS: tuple[dict[str, Any], ...] = (
    {"fault": "isolate-az", "target": "random"},
    {"fault": "isolate-az", "target": "leader"},
    {"fault": "isolate-az", "target": "controller"},
    {"fault": "isolate-az", "target": "leader", "scope": "zookeeper"},
    {"fault": "cut-link", "between": ["leader", "follower"]},
    {"fault": "cut-link", "between": ["follower", "controller"], "ends": "node", "scope": "kafka"},
    {"fault": "cut-link", "between": ["leader", "random"], "one_way": True},
    {"fault": "bridge", "middle": "random"},
    {"fault": "majorities-ring"},
    {"fault": "kill", "target": "leader"},
    {"fault": "kill", "target": "random", "role": "zookeeper"},
    {"fault": "power-off", "target": "random"},
    {"fault": "pause", "target": "leader"},
    {"fault": "graceful-stop", "target": "controller"},
)


@dataclass(frozen=True)
class StartEvent:
    at: float
    name: str
    fault: FaultSpec
    optional: bool = False  # random chaos: a start whose targets cannot be resolved is skipped, not fatal


@dataclass(frozen=True)
class StopEvent:
    at: float
    name: str
    optional: bool = False


@dataclass(frozen=True)
class HealEvent:
    at: float


Event = StartEvent | StopEvent | HealEvent


@dataclass(frozen=True)
class RandomChaos:
    start: float
    until: float
    seed: int | None
    faults: tuple[FaultSpec, ...]
    duration: tuple[float, float]
    interval: tuple[float, float]

    def events(self, default_seed: int) -> list[Event]:
        rng = random.Random(self.seed if self.seed is not None else default_seed)
        events: list[Event] = []
        t, n = self.start, 0
        while True:
            t += rng.uniform(*self.interval)
            if t >= self.until:
                return events
            n += 1
            spec = rng.choice(self.faults)
            name = f"chaos-{n}-{spec.fault}"
            end = min(t + rng.uniform(*self.duration), self.until)
            events += [StartEvent(t, name, spec, optional=True), StopEvent(end, name, optional=True)]
            t = end


@dataclass(frozen=True)
class Schedule:
    items: tuple[Event | RandomChaos, ...] = ()

    def timeline(self, seed: int) -> list[Event]:
        """Every event in time order (random chaos drawn from its seed, else `seed`); ties keep list order."""
        events: list[Event] = []
        for item in self.items:
            events += item.events(seed) if isinstance(item, RandomChaos) else [item]
        return sorted(events, key=lambda e: e.at)

    @property
    def empty(self) -> bool:
        return not self.items

    def faults(self) -> Iterator[tuple[int, FaultSpec]]:
        """Every fault an item may start, with the item's index: a start's fault, and each fault a random-chaos
        item may draw."""
        for i, item in enumerate(self.items):
            if isinstance(item, RandomChaos):
                yield from ((i, fault) for fault in item.faults)
            elif isinstance(item, StartEvent):
                yield i, item.fault


def _seconds(path: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise SpecError(f"{path}: expected a number of seconds >= 0, got {value!r}")
    return float(value)


def _range(path: str, value: Any, default: tuple[float, float]) -> tuple[float, float]:
    if value is None:
        return default
    if not isinstance(value, list) or len(value) != 2:
        raise SpecError(f"{path}: expected [low, high] in seconds, got {value!r}")
    low, high = _seconds(f"{path}[0]", value[0]), _seconds(f"{path}[1]", value[1])
    if low > high or high <= 0:
        raise SpecError(f"{path}: expected 0 <= low <= high and high > 0, got {value!r}")
    return low, high


def parse_random_chaos(path: str, raw: Any) -> RandomChaos:
    if not isinstance(raw, Mapping):
        raise SpecError(f"{path}: expected a mapping, got {type(raw).__name__}")
    allowed = ("from", "until", "seed", "faults", "duration", "interval")
    for key in raw:
        if key not in allowed:
            raise SpecError(f"{path}.{key}: unknown key; expected one of {', '.join(allowed)}")
    if "until" not in raw:
        raise SpecError(f"{path}.until: required (seconds from the start when chaos ends)")
    start, until = _seconds(f"{path}.from", raw.get("from", 0)), _seconds(f"{path}.until", raw["until"])
    if until <= start:
        raise SpecError(f"{path}.until: {until:g} must be after from ({start:g})")
    seed = raw.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise SpecError(f"{path}.seed: expected an integer, got {seed!r}")
    faults_raw = raw.get("faults", list(DEFAULT_CHAOS))
    if not isinstance(faults_raw, list) or not faults_raw:
        raise SpecError(f"{path}.faults: expected a non-empty list of fault specs")
    faults = tuple(parse_fault(f"{path}.faults[{i}]", f) for i, f in enumerate(faults_raw))
    return RandomChaos(start, until, seed, faults, _range(f"{path}.duration", raw.get("duration"), (5.0, 15.0)),
                       _range(f"{path}.interval", raw.get("interval"), (5.0, 15.0)))


def _parse_item(path: str, index: int, raw: Any) -> Event | RandomChaos:
    if not isinstance(raw, Mapping):
        raise SpecError(f"{path}: expected a mapping, got {type(raw).__name__}")
    if "random-chaos" in raw:
        extra = sorted(set(raw) - {"random-chaos"})
        if extra:
            raise SpecError(f"{path}.{extra[0]}: a random-chaos item takes no other key")
        return parse_random_chaos(f"{path}.random-chaos", raw["random-chaos"])
    if "at" not in raw:
        raise SpecError(f"{path}.at: required (seconds from the start of the run)")
    at = _seconds(f"{path}.at", raw["at"])
    verbs = [k for k in ("fault", "stop", "heal") if k in raw]
    if len(verbs) != 1:
        raise SpecError(f"{path}: expected exactly one of fault, stop, heal; got {verbs or 'none'}")
    if verbs[0] == "fault":
        spec = parse_fault(path, {k: v for k, v in raw.items() if k not in ("at", "name")})
        name = raw.get("name", f"{spec.fault}#{index}")
        if not isinstance(name, str) or not name or name == HEAL_ALL:
            raise SpecError(f"{path}.name: expected a non-empty name other than {HEAL_ALL!r}, got {name!r}")
        return StartEvent(at, name, spec)
    verb = verbs[0]
    extra = sorted(set(raw) - {"at", verb})
    if extra:
        raise SpecError(f"{path}.{extra[0]}: unknown key for a {verb} event")
    target = raw[verb]
    if not isinstance(target, str) or not target:
        raise SpecError(f"{path}.{verb}: expected the name of an earlier fault"
                        + (f" or {HEAL_ALL!r}" if verb == "heal" else "") + f", got {target!r}")
    if verb == "heal" and target == HEAL_ALL:
        return HealEvent(at)
    return StopEvent(at, target)


def parse_schedule(path: str, raw: Any) -> Schedule:
    """Validate a schedule (a list of items, see the module docstring)."""
    if raw is None:
        return Schedule()
    if not isinstance(raw, list):
        raise SpecError(f"{path}: expected a list of fault events, got {type(raw).__name__}")
    items = [(i, _parse_item(f"{path}[{i}]", i, r)) for i, r in enumerate(raw)]
    _check_names(path, [(i, it) for i, it in items if not isinstance(it, RandomChaos)])
    return Schedule(tuple(it for _, it in items))


def _check_names(path: str, events: list[tuple[int, Event]]) -> None:
    """Names are unique, and each stop names a fault started earlier and still active then."""
    started: set[str] = set()
    active: set[str] = set()
    for i, ev in sorted(events, key=lambda e: e[1].at):
        if isinstance(ev, StartEvent):
            if ev.name in started:
                raise SpecError(f"{path}[{i}].name: {ev.name!r} is already the name of another fault")
            started.add(ev.name)
            active.add(ev.name)
        elif isinstance(ev, StopEvent):
            if ev.name not in started:
                raise SpecError(f"{path}[{i}]: stops {ev.name!r}, which no earlier item starts")
            if ev.name not in active:
                raise SpecError(f"{path}[{i}]: stops {ev.name!r}, which is already stopped by then")
            active.discard(ev.name)
        else:
            active.clear()
