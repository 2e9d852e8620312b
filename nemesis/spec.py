"""Fault specs: a fault as plain data, validated with the key path of every mistake.

A spec names a fault kind and its targets as *selectors*, which are resolved
only when the fault fires (`nemesis.targets`), from the cluster as it is then.
Validation here needs no cluster: it checks keys, types and selector syntax,
and raises `SpecError("<path>.<key>: ...")`. Must never: touch the cluster.

Keys (every kind also takes `partition`, the partition that `leader`,
`follower` and `leader-controller` refer to; default 0):

| fault | keys |
| --- | --- |
| `isolate-az` | `target` (AZ), `scope` |
| `cut-link` | `between` (two selectors), `one_way` (drop only packets from the first to the second), `ends` (`az`: every host of each AZ, default; `node`: only the node hosts), `scope` |
| `split` | `minority` (a list of AZ selectors, fewer than half the AZs), `scope` |
| `bridge` | `middle` (the AZ that hears both halves; default the plan's middle AZ), `scope` |
| `majorities-ring` | `scope` |
| `kill` | `target` (one or a list of nodes, or `all`, hit at once), `role` (`broker` default, `zookeeper`) |
| `power-off` | `target` (one or a list of nodes, or `all`: every process of each node dies at one instant, and where the runtime keeps data on unsyncfs every write not fsynced is dropped: journaled as `power-cut`) |
| `pause` | `target`, `role` (`broker` default, `zookeeper`, `both`) |
| `graceful-stop` | `target`, `role` (`broker` default, `zookeeper`) |
| `lossy-link` | `between` (two selectors) or `target` (one selector: it and every other host), `ends`, `loss` (drop probability, 0 <= p < 1) |
| `slow-link` | `between` or `target`, `ends`, `delay_ms` (added one-way delay), `jitter_ms` (default 0) |
| `throttle-link` | `between` or `target`, `ends`, `rate_kbit` (bandwidth, kilobits per second) |
| `pause-workload` | `process` (a producer, `producer-az1-0`): SIGSTOP it; undone by SIGCONT |
| `hold-request` | `process` (a producer with `proxy: true`), `api` (`EndTxn` default, `EndTxnCommit`, `EndTxnAbort`, `AddPartitionsToTxn`, `AddOffsetsToTxn`, `TxnOffsetCommit`, `Produce`): its request-holding proxy holds the next such request, and everything after it on that connection, until undone; then forwards it late on the same connection (the client may have given up and retried meanwhile); `release_before` (an `api` name): once undone, wait for the client's next request of that kind and forward the held one just before it (its late answer awaited first). Starts once a request was caught |
| `replace-workload` | `process` (a transactional producer): start a second process with its config and its transactional.id (`<process>-r1`, its own journal and values), whose init_transactions() fences the first; it runs to the end of the run (undo does nothing) |
| `stray-transactional-produce` | `partition`: send one transactional record to that partition's leader under a fresh transactional.id whose coordinator was never told of the partition (KAFKA-12671's hanging transaction; a raw-protocol client, `nemesis.stray`); undo does nothing: no marker will ever close it |

The degraded-link kinds (`nemesis.links`) take each value per direction: a
number means both ways, a list of two `[forward, backward]` means from the
first end to the second, then back (for `target`: from it, then to it).

`scope` is `all` (default), `kafka` or `zookeeper` (see `nemesis.shapes`).

Selectors: `leader`, `controller`, `leader-controller` (the node that is
both), `follower` (an in-sync follower of the partition that is not the
controller), `random` (from the nemesis seed), an AZ (`az2`), a node host
(`az2-node`), a broker (`broker-1`), or `txn-coordinator:<process>` (the
broker a FindCoordinator for that transactional producer's transactional.id
names when the fault fires, e.g. `txn-coordinator:producer-az1-0`; the process
must be one of the spec's transactional producers). A node selector used where an AZ is
wanted means that node's AZ, and an AZ where a node is wanted means its node.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from nemesis.links import Degradation
from nemesis.shapes import SCOPES, Scope
from testbed.errors import SpecError

PARTITION_FAULTS = ("isolate-az", "cut-link", "split", "bridge", "majorities-ring")
PROCESS_FAULTS = ("kill", "power-off", "pause", "graceful-stop")
LINK_FAULTS = ("lossy-link", "slow-link", "throttle-link")
WORKLOAD_FAULTS = ("pause-workload", "replace-workload", "hold-request")  # on a workload process (`nemesis.workload_faults`)
CLIENT_FAULTS = ("stray-transactional-produce",)  # the nemesis as a Kafka client of its own (`nemesis.stray`)
FAULT_KINDS = PARTITION_FAULTS + PROCESS_FAULTS + LINK_FAULTS + WORKLOAD_FAULTS + CLIENT_FAULTS
# The requests a `hold-request` may hold or release before, by the name the spec uses: Kafka's api key, and for
# EndTxn whether it commits (None: either).
HOLD_APIS: dict[str, tuple[int, bool | None]] = {
    "EndTxn": (26, None), "EndTxnCommit": (26, True), "EndTxnAbort": (26, False), "AddPartitionsToTxn": (24, None),
    "AddOffsetsToTxn": (25, None), "TxnOffsetCommit": (28, None), "Produce": (0, None)}
PROCESS_RE = re.compile(r"^producer-az[1-9]-[0-9]+$")
# The value keys of each degraded-link kind, with their defaults (None: required).
LINK_VALUES: dict[str, dict[str, float | None]] = {
    "lossy-link": {"loss": None},
    "slow-link": {"delay_ms": None, "jitter_ms": 0.0},
    "throttle-link": {"rate_kbit": None},
}
STATE_SELECTORS = ("leader", "controller", "leader-controller", "follower")
# `txn-coordinator:<process>`: the transaction coordinator of a transactional producer's transactional.id.
TXN_COORDINATOR = "txn-coordinator:"
SELECTOR_RE = re.compile(r"^(leader|controller|leader-controller|follower|random|az[1-9]|az[1-9]-node|broker-[0-8]"
                         r"|txn-coordinator:producer-az[1-9]-[0-9]+)$")
ROLES_BY_FAULT: dict[str, tuple[str, ...]] = {
    "kill": ("broker", "zookeeper"),
    "pause": ("broker", "zookeeper", "both"),
    "graceful-stop": ("broker", "zookeeper"),
}
KEYS_BY_FAULT: dict[str, tuple[str, ...]] = {
    "isolate-az": ("target", "scope"),
    "cut-link": ("between", "one_way", "ends", "scope"),
    "split": ("minority", "scope"),
    "bridge": ("middle", "scope"),
    "majorities-ring": ("scope",),
    "kill": ("target", "role"),
    "power-off": ("target",),
    "pause": ("target", "role"),
    "graceful-stop": ("target", "role"),
    **{kind: ("between", "target", "ends", *values) for kind, values in LINK_VALUES.items()},
    "pause-workload": ("process",),
    "replace-workload": ("process",),
    "stray-transactional-produce": (),
    "hold-request": ("process", "api", "release_before"),
}
REQUIRED: dict[str, tuple[str, ...]] = {
    "isolate-az": ("target",), "cut-link": ("between",), "split": ("minority",),
    "kill": ("target",), "power-off": ("target",), "pause": ("target",), "graceful-stop": ("target",),
    "pause-workload": ("process",), "replace-workload": ("process",), "hold-request": ("process",),
}

Ends = Literal["az", "node"]
Role = Literal["broker", "zookeeper", "both"]


@dataclass(frozen=True)
class FaultSpec:
    """One validated fault. `targets` holds the selectors of `target`, `between`, `minority` or `middle`."""

    fault: str
    targets: tuple[str, ...] = ()
    partition: int = 0
    scope: Scope = "all"
    one_way: bool = False
    ends: Ends = "az"
    role: Role = "broker"
    degrade: tuple[Degradation, Degradation] | None = None  # link kinds: (forward, backward)
    api: str = "EndTxn"  # hold-request: the request it holds (HOLD_APIS)
    release_before: str | None = None  # hold-request: once undone, forward it just before the next such request
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def is_partition(self) -> bool:
        return self.fault in PARTITION_FAULTS

    @property
    def is_link(self) -> bool:
        """A degraded-link kind (`lossy-link`, `slow-link`, `throttle-link`)."""
        return self.fault in LINK_FAULTS

    @property
    def is_workload(self) -> bool:
        """A fault on a workload process (`pause-workload`, `replace-workload`): `targets` is that process."""
        return self.fault in WORKLOAD_FAULTS

    def to_json(self) -> dict[str, Any]:
        """The spec as written (validated), for journals."""
        return dict(self.raw) if self.raw else {"fault": self.fault}

    def __str__(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True)


def _selector(path: str, value: Any) -> str:
    if not isinstance(value, str) or not SELECTOR_RE.match(value):
        raise SpecError(f"{path}: {value!r} is not a target; expected leader, controller, leader-controller, "
                        f"follower, random, an AZ (az1), a node (az1-node), a broker (broker-0) or "
                        f"txn-coordinator:<producer process> (txn-coordinator:producer-az1-0)")
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
        raise SpecError(f"{path}.fault: missing; expected one of {', '.join(FAULT_KINDS)}")
    if kind not in FAULT_KINDS:
        raise SpecError(f"{path}.fault: unknown fault {kind!r}; expected one of {', '.join(FAULT_KINDS)}")
    allowed = ("fault", "partition", *KEYS_BY_FAULT[kind])
    for key in raw:
        if key not in allowed:
            raise SpecError(f"{path}.{key}: unknown key for fault {kind}; expected one of {', '.join(allowed)}")
    for key in REQUIRED.get(kind, ()):
        if key not in raw:
            raise SpecError(f"{path}.{key}: required for fault {kind}")
    fields: dict[str, Any] = {"fault": kind, "raw": dict(raw)}
    partition = raw.get("partition", 0)
    if isinstance(partition, bool) or not isinstance(partition, int) or partition < 0:
        raise SpecError(f"{path}.partition: expected a partition number >= 0, got {partition!r}")
    fields["partition"] = partition
    if "scope" in raw:
        fields["scope"] = _choice(f"{path}.scope", raw["scope"], SCOPES)
    if "target" in raw and kind in PROCESS_FAULTS and raw["target"] == "all":
        fields["targets"] = ("all",)  # every node at one instant
    elif kind in LINK_FAULTS:
        _link_fields(path, kind, raw, fields)
    elif "target" in raw:
        single_az = kind == "isolate-az"
        fields["targets"] = _selectors(f"{path}.target", raw["target"]) if not single_az \
            else (_selector(f"{path}.target", raw["target"]),)
    if "between" in raw and kind not in LINK_FAULTS:
        fields["targets"] = _selectors(f"{path}.between", raw["between"], exactly=2, allow_one=False)
    if "minority" in raw:
        fields["targets"] = _selectors(f"{path}.minority", raw["minority"])
    if "middle" in raw:
        fields["targets"] = (_selector(f"{path}.middle", raw["middle"]),)
    if "process" in raw:
        if not isinstance(raw["process"], str) or not PROCESS_RE.match(raw["process"]):
            raise SpecError(f"{path}.process: {raw['process']!r} is not a workload process; expected a producer "
                            f"such as producer-az1-0")
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
        fields["role"] = _choice(f"{path}.role", raw["role"], ROLES_BY_FAULT[kind])
    return FaultSpec(**fields)


def _link_fields(path: str, kind: str, raw: Mapping[str, Any], fields: dict[str, Any]) -> None:
    """A degraded-link spec's ends and its (forward, backward) degradations."""
    if ("between" in raw) == ("target" in raw):
        raise SpecError(f"{path}: {kind} takes either 'between' (two targets) or 'target' (one, against the rest)")
    fields["targets"] = (_selectors(f"{path}.between", raw["between"], exactly=2, allow_one=False)
                         if "between" in raw else (_selector(f"{path}.target", raw["target"]),))
    ways: list[dict[str, Any]] = [{}, {}]
    for key, default in LINK_VALUES[kind].items():
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
