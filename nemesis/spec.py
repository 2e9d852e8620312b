"""Fault specs: a spec's mapping validated into a `FaultSpec`, with the key path of every mistake.

A spec names a fault kind and its targets as *selectors* (`nemesis.fault_spec`),
which are resolved only when the fault fires (`nemesis.targets`), from the
cluster as it is then. Validation here needs no cluster: it checks keys, types
and selector syntax against the kind's record (`nemesis.registry`: the keys it
takes and requires, its roles, its degraded-link values), and raises
`SpecError("<path>.<key>: ...")`. The table of kinds and their keys is
docs/spec.md's, generated from the registry.

Every kind also takes `partition`, the partition that `leader`, `follower` and
`leader-controller` refer to (default 0). The degraded-link kinds
(`nemesis.links`) take each value per direction: a number means both ways, a
list of two `[forward, backward]` means from the first end to the second, then
back (for `target`: from it, then to it). `scope` is `all` (default), `kafka`
or `zookeeper` (see `nemesis.shapes`).

Must never: touch the cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from nemesis.fault_spec import (
    DISK_OPS,
    DISK_PATHS,
    HOLD_APIS,
    MAX_STROBE_RATE,
    SELECTOR_RE,
    ClockRule,
    DiskRule,
    FaultSpec,
)
from nemesis.links import Degradation
from nemesis.registry import FaultKind, fault_kind, fault_names
from nemesis.shapes import SCOPES
from testbed.errors import SpecError
from testbed.journal_names import WORKLOAD_RES


def _selector(path: str, value: Any) -> str:
    if not isinstance(value, str) or not SELECTOR_RE.match(value):
        raise SpecError(f"{path}: {value!r} is not a target; expected leader, controller, leader-controller, "
                        f"follower, random, an AZ (az1), a node (az1-node), a broker (broker-0) or "
                        f"txn-coordinator:<producer process> (txn-coordinator:producer-az1-0) or group-coordinator:<group> "
                        f"(group-coordinator:faultline-g0)")
    return value


def _selectors(path: str, value: Any, *, exactly: int | None = None, allow_one: bool = True) -> tuple[str, ...]:
    if isinstance(value, str) and allow_one:
        return (_selector(path, value),)
    if not isinstance(value, list) or not value:
        want = f"a list of {exactly} targets" if exactly else "a target or a non-empty list of targets"
        raise SpecError(f"{path}: expected {want}, got {value!r}")
    if exactly is not None and len(value) != exactly:
        raise SpecError(f"{path}: expected exactly {exactly} targets, got {len(value)}")
    return tuple(_selector(f"{path}[{i}]", v) for i, v in enumerate(value))


def _choice(path: str, value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise SpecError(f"{path}: {value!r} is not one of {', '.join(allowed)}")
    return cast(str, value)


def parse_fault(path: str, raw: Any) -> FaultSpec:
    """Validate one fault spec; every error names its key path (`nemesis[0].target: ...`)."""
    if not isinstance(raw, Mapping):
        raise SpecError(f"{path}: expected a mapping with a 'fault' key, got {type(raw).__name__}")
    kind = raw.get("fault")
    if kind is None:
        raise SpecError(f"{path}.fault: missing; expected one of {', '.join(fault_names())}")
    if not isinstance(kind, str) or kind not in fault_names():
        raise SpecError(f"{path}.fault: unknown fault {kind!r}; expected one of {', '.join(fault_names())}")
    record = fault_kind(kind)
    allowed = ("fault", *record.spec_keys)
    for key in raw:
        if key not in allowed:
            raise SpecError(f"{path}.{key}: unknown key for fault {kind}; expected one of {', '.join(allowed)}")
    for key in record.required:
        if key not in raw:
            raise SpecError(f"{path}.{key}: required for fault {kind}")
    fields: dict[str, Any] = {"fault": kind, "category": record.category, "raw": dict(raw)}
    partition = raw.get("partition", 0)
    if isinstance(partition, bool) or not isinstance(partition, int) or partition < 0:
        raise SpecError(f"{path}.partition: expected a partition number >= 0, got {partition!r}")
    fields["partition"] = partition
    if "scope" in raw:
        fields["scope"] = _choice(f"{path}.scope", raw["scope"], SCOPES)
    if "target" in raw and record.category == "process" and raw["target"] == "all":
        fields["targets"] = ("all",)  # every node at one instant
    elif record.category == "link":
        _link_fields(path, record, raw, fields)
    elif "target" in raw:
        fields["targets"] = (_selector(f"{path}.target", raw["target"]),) if record.single_target \
            else _selectors(f"{path}.target", raw["target"])
    if "between" in raw and record.category != "link":
        fields["targets"] = _selectors(f"{path}.between", raw["between"], exactly=2, allow_one=False)
    if "minority" in raw:
        fields["targets"] = _selectors(f"{path}.minority", raw["minority"])
    if "middle" in raw:
        fields["targets"] = (_selector(f"{path}.middle", raw["middle"]),)
    if "process" in raw:
        if not isinstance(raw["process"], str) or not any(WORKLOAD_RES[r].match(raw["process"]) for r in record.processes):
            raise SpecError(f"{path}.process: {raw['process']!r} is not a workload process fault {kind} takes; expected "
                            + " or ".join(f"a {r} such as {r}-az1-0" for r in record.processes))
        fields["targets"] = (raw["process"],)
    if "api" in raw:
        fields["api"] = _choice(f"{path}.api", raw["api"], tuple(HOLD_APIS))
    if "release_before" in raw:
        fields["release_before"] = _choice(f"{path}.release_before", raw["release_before"], tuple(HOLD_APIS))
    if "one_way" in raw:
        if not isinstance(raw["one_way"], bool):
            raise SpecError(f"{path}.one_way: expected true or false, got {raw['one_way']!r}")
        fields["one_way"] = raw["one_way"]
    if "ends" in raw:
        fields["ends"] = _choice(f"{path}.ends", raw["ends"], ("az", "node"))
    if "role" in raw:
        fields["role"] = _choice(f"{path}.role", raw["role"], record.roles)
    if record.category == "disk":
        fields["disk"] = _disk_rule(path, raw)
    if record.category == "clock":
        fields["clock"] = _clock_rule(path, raw)
    if record.options is not None:  # an operation's own keys (nemesis.operation_spec)
        fields["options"] = record.options(path, raw)
    return FaultSpec(**fields)


def _number(path: str, value: Any, low: float, high: float | None = None, whole: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or (whole and not isinstance(value, int)) \
            or value < low or (high is not None and value > high):
        want = f"a {'whole ' if whole else ''}number >= {low}" + (f" and <= {high}" if high is not None else "")
        raise SpecError(f"{path}: expected {want}, got {value!r}")
    return value


def _clock_rule(path: str, raw: Mapping[str, Any]) -> ClockRule:
    """A clock fault's values: a nonzero `offset_ms`, and clock-strobe's `rate` in (0, MAX_STROBE_RATE]."""
    offset = raw["offset_ms"]
    if isinstance(offset, bool) or not isinstance(offset, int | float) or offset == 0:
        raise SpecError(f"{path}.offset_ms: expected a number of milliseconds other than 0 (negative: back), "
                        f"got {offset!r}")
    rate = 0.0
    if "rate" in raw:
        rate = raw["rate"]
        if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 < rate <= MAX_STROBE_RATE:
            raise SpecError(f"{path}.rate: expected flips a second > 0 and <= {MAX_STROBE_RATE:g} (a process may "
                            f"see a new clock offset 2 s late), got {rate!r}")
    return ClockRule(float(offset), float(rate))


def _disk_rule(path: str, raw: Mapping[str, Any]) -> DiskRule:
    """A disk fault's values; defaults from DiskRule."""
    fields: dict[str, Any] = {}
    if "path" in raw:
        fields["path"] = _choice(f"{path}.path", raw["path"], DISK_PATHS)
    if "ops" in raw:
        ops = raw["ops"]
        if not isinstance(ops, list) or not ops:
            raise SpecError(f"{path}.ops: expected a non-empty list of {', '.join(DISK_OPS)}, got {ops!r}")
        fields["ops"] = tuple(_choice(f"{path}.ops[{i}]", op, DISK_OPS) for i, op in enumerate(ops))
    if "probability" in raw:
        fields["probability"] = float(_number(f"{path}.probability", raw["probability"], 0, 1))
    if "log_dir" in raw:
        fields["log_dir"] = int(_number(f"{path}.log_dir", raw["log_dir"], 0, whole=True))
        if fields.get("path", "log-dir") != "log-dir":
            raise SpecError(f"{path}.log_dir: only with path log-dir (a partition's directory is found in whichever "
                            f"log directory holds it)")
    if "free_bytes" in raw:
        fields["free_bytes"] = int(_number(f"{path}.free_bytes", raw["free_bytes"], 0, whole=True))
    for key in ("fsync_delay_ms", "fsync_jitter_ms"):
        if key in raw:
            fields[key] = float(_number(f"{path}.{key}", raw[key], 0))
    if "delay_writes" in raw:
        if not isinstance(raw["delay_writes"], bool):
            raise SpecError(f"{path}.delay_writes: expected true or false, got {raw['delay_writes']!r}")
        fields["delay_writes"] = raw["delay_writes"]
    return DiskRule(**fields)


def _link_fields(path: str, record: FaultKind, raw: Mapping[str, Any], fields: dict[str, Any]) -> None:
    """A degraded-link spec's ends and its (forward, backward) degradations."""
    kind = record.name
    if ("between" in raw) == ("target" in raw):
        raise SpecError(f"{path}: {kind} takes either 'between' (two targets) or 'target' (one, against the rest)")
    fields["targets"] = (_selectors(f"{path}.between", raw["between"], exactly=2, allow_one=False)
                         if "between" in raw else (_selector(f"{path}.target", raw["target"]),))
    ways: list[dict[str, Any]] = [{}, {}]
    for key, default in record.values.items():
        if key not in raw and default is None:
            raise SpecError(f"{path}.{key}: required for fault {kind}")
        value = raw.get(key, default)
        pair = value if isinstance(value, list) else [value, value]
        unthrottled = key == "rate_kbit" and isinstance(value, list)  # [1000, null]: one way only
        if len(pair) != 2 or any(isinstance(v, bool) or not isinstance(v, int | float)
                                 for v in pair if not (unthrottled and v is None)):
            raise SpecError(f"{path}.{key}: expected a number or a list of two [forward, backward], got {value!r}")
        for way, v in zip(ways, pair, strict=True):
            way[key] = v
    try:
        forward, backward = (_degradation(way) for way in ways)
    except ValueError as exc:
        raise SpecError(f"{path}: {exc}") from exc
    if forward.empty and backward.empty:
        raise SpecError(f"{path}: {kind} degrades nothing in either direction")
    fields["degrade"] = (forward, backward)


def _degradation(way: dict[str, Any]) -> Degradation:
    rate = way.get("rate_kbit")
    if rate is not None and (rate != int(rate) or rate < 1):
        raise ValueError(f"rate_kbit {rate} is not a whole number of kbit/s >= 1")
    return Degradation(loss=float(way.get("loss", 0.0)), delay_ms=float(way.get("delay_ms", 0.0)),
                       jitter_ms=float(way.get("jitter_ms", 0.0)), rate_kbit=int(rate) if rate is not None else None)
