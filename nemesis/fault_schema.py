"""The nemesis schedule as JSON Schema, built from the fault registry and the vocabulary `nemesis.schedule` owns.

For editors (docs/spec.schema.json, written by `harness.spec_schema`) and for
the fault table of docs/spec.md; the validation that counts stays in
`nemesis.schedule.parse_schedule`. Each fault kind's schema comes from its
record (`nemesis.registry`); every key a kind takes (`FaultKind.spec_keys`)
needs an entry in `FAULT_KEYS` below, saying its JSON shape and what it means:
a test fails naming any key without one.

Must never: validate a spec itself, or reach a cluster.
"""

from __future__ import annotations

from typing import Any

from nemesis.fault_spec import DISK_OPS, DISK_PATHS, HOLD_APIS, SELECTOR_RE
from nemesis.registry import fault_kind, fault_names
from nemesis.schedule import HEAL_ALL
from nemesis.shapes import SCOPES
from testbed.dist.versions import VERSION_RE
from testbed.journal_names import WORKLOAD_RES

JsonSchema = dict[str, Any]

SELECTOR: JsonSchema = {
    "type": "string", "pattern": SELECTOR_RE.pattern,
    "description": "leader, controller, leader-controller, follower, random, an AZ (az1), a node (az1-node) "
                   "a broker (broker-0), txn-coordinator:<transactional producer process> or group-coordinator:<consumer "
                   "group of the spec>, resolved when the fault starts",
}
ONE_OR_MORE: JsonSchema = {"anyOf": [SELECTOR, {"type": "array", "items": SELECTOR, "minItems": 1}]}



def PER_DIRECTION(low: float, below: float | None = None) -> JsonSchema:  # noqa: N802 - a schema constructor
    """A degraded-link value: one number for both directions, or [forward, backward] (null: untouched)."""
    one: JsonSchema = {"type": "number", "minimum": low, **({"exclusiveMaximum": below} if below is not None else {})}
    return {"anyOf": [one, {"type": "array", "items": {"anyOf": [one, {"type": "null"}]}, "minItems": 2,
                            "maxItems": 2}]}


# Each fault key: its JSON shape and its meaning. `role` is narrowed per fault kind (its record's `roles`).
FAULT_KEYS: dict[str, JsonSchema] = {
    "partition": {"type": "integer", "minimum": 0, "default": 0,
                  "description": "the partition that leader, follower and leader-controller refer to "
                                 "(stray-transactional-produce: the partition it writes to)"},
    "target": {"anyOf": [*ONE_OR_MORE["anyOf"], {"const": "all"}],
               "description": "what the fault hits: one selector, or a list hit at once (isolate-az: one AZ); "
                              "process faults also take `all`: every node at one instant"},
    "between": {"type": "array", "items": SELECTOR, "minItems": 2, "maxItems": 2,
                "description": "the two ends of the cut link"},
    "one_way": {"type": "boolean", "default": False,
                "description": "drop only the packets from the first end to the second"},
    "ends": {"enum": ["az", "node"], "default": "az",
             "description": "az: every host of each AZ (node and clients); node: only the node hosts"},
    "minority": {**ONE_OR_MORE, "description": "the AZs cut off from the rest (fewer than half)"},
    "middle": {**SELECTOR, "description": "the AZ that hears both halves (default: the plan's middle AZ)"},
    "scope": {"enum": list(SCOPES), "default": "all",
              "description": "all traffic, or only Kafka's or only ZooKeeper's ports"},
    "role": {"type": "string", "default": "broker", "description": "which process of the node"},
    "loss": {**PER_DIRECTION(0, 1), "description": "drop probability (0 <= p < 1), both ways or [forward, backward]"},
    "delay_ms": {**PER_DIRECTION(0), "description": "added one-way delay in ms, both ways or [forward, backward]"},
    "jitter_ms": {**PER_DIRECTION(0), "default": 0, "description": "random extra delay in ms (never reorders)"},
    "process": {"type": "string", "pattern": WORKLOAD_RES["producer"].pattern,
                "description": "the workload process the fault acts on (a producer of the spec: producer-az1-0)"},
    "api": {"enum": list(HOLD_APIS), "default": "EndTxn",
            "description": "hold-request: the request the producer's proxy holds (the next one of this kind; "
                                   "EndTxnCommit and EndTxnAbort: only an EndTxn that commits, aborts)"},
    "release_before": {"enum": list(HOLD_APIS),
                       "description": "hold-request: once undone, wait for the client's next request of this kind "
                                      "and forward the held one just before it (its late answer awaited first); "
                                      "default: at once"},
    "controller_at": {"anyOf": [{"enum": ["last", "first"]}, {"type": "integer", "minimum": 0}], "default": "last",
                      "description": "rolling-restart, rolling-upgrade, rolling-downgrade: where the controller's broker comes in the roll"},
    "wait": {"anyOf": [{"const": "isr"}, {"type": "number", "minimum": 0}], "default": "isr",
             "description": "rolling-restart, rolling-upgrade, rolling-downgrade: before the next broker, wait until the ISR is full again (isr), or "
                            "pause this many seconds"},
    "wait_s": {"type": "number", "exclusiveMinimum": 0,
               "description": "rolling-restart, rolling-upgrade, rolling-downgrade: the longest ISR wait per broker (default 120; zk-to-kraft: also "
                              "the quorum's and the migration's waits); reassign: how long "
                              "its stop waits for the move before cancelling it (default 300); remove-controller, "
                              "add-controller: how long for the new voter set (and the observer's catching up), "
                              "default 60"},
    "shutdown": {"enum": ["after", "before", "none"], "default": "after",
                 "description": "remove-controller: when the removed controller's process is stopped (SIGTERM): once "
                                "it is no longer a voter, before it is removed, or never"},
    "to_version": {"type": "string", "pattern": VERSION_RE.pattern,
                   "description": "rolling-upgrade, rolling-downgrade: the Kafka version each broker (KRaft: and "
                                  "controller) is started on, a later one or an older one (ZooKeeper stays on the "
                                  "cluster's)"},
    "bump": {"type": "boolean", "default": True,
             "description": "rolling-upgrade: a second roll bumping inter.broker.protocol.version to the new "
                            "version's, on KRaft metadata.version raised to the new release's level (false: the "
                            "cluster stays on the old protocol or level)"},
    "topic": {"enum": ["test", "__consumer_offsets", "__transaction_state"], "default": "test",
              "description": "reassign: the topic whose partitions move (test: the topic under test)"},
    "partitions": {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 1, "uniqueItems": True,
                   "description": "reassign: the partitions to move (default: every partition of the topic under test)"},
    "replicas": {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 1, "uniqueItems": True,
                 "description": "reassign: the brokers each partition moves to, the first its preferred leader"},
    "throttle_kbit": {"type": "integer", "minimum": 1,
                      "description": "reassign: a replication throttle on every broker while it runs (kbit/s)"},
    "rate_kbit": {**PER_DIRECTION(1), "description": "bandwidth in kilobits per second, both ways or "
                                                     "[forward, backward]"},
    "path": {"enum": list(DISK_PATHS), "default": "log-dir",
             "description": "which of the node's data: its log directory, the `partition`'s directory in it, or "
                            "the metadata quorum's data (ZooKeeper's, or the KRaft controller's metadata log)"},
    "log_dir": {"type": "integer", "minimum": 0,
                "description": "path log-dir with cluster.log_dirs above 1: the log directory that fails (0 is dir-0; "
                               "default: every one)"},
    "ops": {"type": "array", "items": {"enum": list(DISK_OPS)}, "minItems": 1, "default": ["write", "fsync"],
            "description": "disk-error: the calls that fail with EIO"},
    "probability": {"type": "number", "minimum": 0, "maximum": 1, "default": 1,
                    "description": "disk-error: the chance each of those calls fails (1: every call)"},
    "free_bytes": {"type": "integer", "minimum": 0, "default": 0,
                   "description": "disk-full: how many bytes the files under the path may still grow by from the "
                                  "start; a write past them fails with ENOSPC until the stop"},
    "fsync_delay_ms": {"type": "number", "minimum": 0, "description": "slow-disk: the wait before every fsync"},
    "fsync_jitter_ms": {"type": "number", "minimum": 0, "default": 0,
                        "description": "slow-disk: a uniform 0..this more on each wait"},
    "offset_ms": {"type": "number", "not": {"const": 0},
                  "description": "clock faults: milliseconds added to the processes' wall clock (negative: back)"},
    "rate": {"type": "number", "exclusiveMinimum": 0, "maximum": 0.5,
             "description": "clock-strobe: flips a second (the offset on, then off, ...)"},
    "delay_writes": {"type": "boolean", "default": False, "description": "slow-disk: every write waits too"},
}
AT: JsonSchema = {"type": "number", "minimum": 0, "description": "seconds from the start of the run"}
RANGE: JsonSchema = {"type": "array", "items": {"type": "number", "minimum": 0}, "minItems": 2, "maxItems": 2,
                     "description": "[low, high] in seconds, drawn uniformly"}


def fault_keys(kind: str) -> tuple[str, ...]:
    """The keys a fault of `kind` takes besides `fault`."""
    return fault_kind(kind).spec_keys


def _key_schema(kind: str, key: str) -> JsonSchema:
    if key not in FAULT_KEYS:
        raise KeyError(f"fault key {key!r} (of {kind}) has no entry in nemesis.fault_schema.FAULT_KEYS")
    schema = dict(FAULT_KEYS[key])
    if key == "role":
        schema["enum"] = list(fault_kind(kind).roles)
    if key == "process":  # the roles of the processes this kind takes (pause-workload: a consumer too)
        roles = fault_kind(kind).processes
        schema["pattern"] = "|".join(WORKLOAD_RES[r].pattern for r in roles)
        schema["description"] = f"the workload process the fault acts on ({' or '.join(f'a {r} of the spec: {r}-az1-0' for r in roles)})"
    return schema


def fault_schema(kind: str, extra: JsonSchema | None = None) -> JsonSchema:
    """One fault spec of `kind` (with `extra` properties: `at` and `name` in a timeline item)."""
    properties: JsonSchema = {"fault": {"const": kind}, **(extra or {})}
    properties.update({key: _key_schema(kind, key) for key in fault_keys(kind)})
    required = ["fault", *fault_kind(kind).required, *(["at"] if extra and "at" in extra else [])]
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def schedule_schema() -> JsonSchema:
    """The spec's `nemesis` key: a list of starts, stops, heals and random-chaos items."""
    name = {"type": "string", "minLength": 1, "not": {"const": HEAL_ALL},
            "description": "a name a later stop can refer to (default <fault>#<index>)"}
    starts = [fault_schema(kind, {"at": AT, "name": name}) for kind in fault_names()]
    stop = {"type": "object", "properties": {"at": AT, "stop": {"type": "string", "minLength": 1}},
            "required": ["at", "stop"], "additionalProperties": False, "description": "undo the named fault"}
    heal = {"type": "object", "properties": {"at": AT, "heal": {"type": "string", "minLength": 1}},
            "required": ["at", "heal"], "additionalProperties": False,
            "description": f"undo the named fault, or every active one with heal: {HEAL_ALL}"}
    chaos = {"type": "object", "additionalProperties": False, "required": ["until"], "properties": {
        "from": {**AT, "default": 0}, "until": AT,
        "seed": {"type": "integer", "description": "default: the spec's seed"},
        "faults": {"type": "array", "minItems": 1, "items": {"anyOf": [fault_schema(k) for k in fault_names()]},
                   "description": "the faults to draw from (default: every kind)"},
        "duration": {**RANGE, "default": [5, 15]}, "interval": {**RANGE, "default": [5, 15]}}}
    random_chaos = {"type": "object", "properties": {"random-chaos": chaos}, "required": ["random-chaos"],
                    "additionalProperties": False,
                    "description": "a seeded random schedule: one fault at a time from `from` to `until`"}
    return {"type": ["array", "null"], "items": {"anyOf": [*starts, stop, heal, random_chaos]}}
