"""Partition reassignment and replication throttles over Kafka's own wire protocol (the admin API, no JVM).

confluent-kafka's AdminClient (2.16 here) has no call for KIP-455's reassignment, and Kafka's
`kafka-reassign-partitions.sh` starts a JVM for every look at the progress, so this module speaks the
three requests itself, in the style of `testbed.kafka.wire`:

- `alter_reassignments`: AlterPartitionReassignments v0 (api 45, Kafka 2.4 on; a flexible version:
  compact strings and arrays, tagged fields): each partition's new replica list, or None to cancel its
  reassignment. In ZooKeeper mode only the controller takes it (NOT_CONTROLLER elsewhere); on KRaft
  every broker forwards it to the active controller.
- `list_reassignments`: ListPartitionReassignments v0 (api 46): the reassignments in progress, each
  partition's replicas, adding and removing replicas.
- `alter_configs`: IncrementalAlterConfigs v0 (api 44, Kafka 2.3 on): set or delete configs of a topic
  or a broker (a replication throttle: the brokers' `leader/follower.replication.throttled.rate`, the
  topic's `leader/follower.replication.throttled.replicas`). A broker's config goes to that broker.

Each answers a broker's error codes as Kafka names them; OSError/ConnectionError when the broker does
not answer. Pure socket code.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from testbed.kafka.wire_codec import (
    NO_TAGS,
    FlexReader,
    Reader,
    ask,
    compact_ints,
    compact_string,
    request_header,
    uvarint,
)

ALTER_REASSIGNMENTS_KEY, LIST_REASSIGNMENTS_KEY, INCREMENTAL_ALTER_CONFIGS_KEY = 45, 46, 44
CLIENT_ID = b"faultline-operator"
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4
SET, DELETE = 0, 1
ERRORS = {0: "NONE", 3: "UNKNOWN_TOPIC_OR_PARTITION", 7: "REQUEST_TIMED_OUT", 35: "UNSUPPORTED_VERSION",
          37: "INVALID_PARTITIONS", 38: "INVALID_REPLICATION_FACTOR", 39: "INVALID_REPLICA_ASSIGNMENT",
          40: "INVALID_CONFIG", 41: "NOT_CONTROLLER", 42: "INVALID_REQUEST", 85: "NO_REASSIGNMENT_IN_PROGRESS"}


def error_name(code: int) -> str:
    return ERRORS.get(code, f"ERROR_{code}")


@dataclass(frozen=True)
class Moving:
    """One partition's reassignment in progress: its replicas now (old and new), those being added and removed."""

    partition: int
    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


def _frame(api_key: int, version: int, body: bytes, flexible: bool) -> bytes:
    header = request_header(api_key, version, 1, CLIENT_ID) + (NO_TAGS if flexible else b"")
    return struct.pack(">i", len(header) + len(body)) + header + body


# -- the three requests ----------------------------------------------------------
def alter_reassignments(host: str, port: int, topic: str, targets: dict[int, list[int] | None],
                        timeout_ms: int = 10000) -> tuple[int, dict[int, tuple[int, str | None]]]:
    """Ask for each partition of `targets` to move to its replica list (None: cancel its reassignment): the
    request's error code, and each partition's (error code, message)."""
    parts = b"".join(struct.pack(">i", p) + compact_ints(replicas) + NO_TAGS for p, replicas in targets.items())
    body = (struct.pack(">i", timeout_ms) + uvarint(2) + compact_string(topic) + uvarint(len(targets) + 1)
            + parts + NO_TAGS + NO_TAGS)
    r = FlexReader(ask(host, port, _frame(ALTER_REASSIGNMENTS_KEY, 0, body, True), timeout_ms / 1000 + 5))
    r.take(">i")  # correlation id
    r.skip_tags()  # response header v1
    r.take(">i")  # throttle time
    error = r.take(">h")
    r.compact_string()
    answers: dict[int, tuple[int, str | None]] = {}
    for _ in range(r.uvarint() - 1):
        r.compact_string()  # the topic
        for _ in range(r.uvarint() - 1):
            partition, code, message = r.take(">i"), r.take(">h"), r.compact_string()
            r.skip_tags()
            answers[partition] = (code, message)
        r.skip_tags()
    return error, answers


def list_reassignments(host: str, port: int, topic: str, partitions: list[int],
                       timeout_ms: int = 10000) -> tuple[int, dict[int, Moving]]:
    """The reassignments in progress among `partitions` of `topic`: the request's error code, and each moving one."""
    body = (struct.pack(">i", timeout_ms) + uvarint(2) + compact_string(topic) + compact_ints(partitions)
            + NO_TAGS + NO_TAGS)
    r = FlexReader(ask(host, port, _frame(LIST_REASSIGNMENTS_KEY, 0, body, True), timeout_ms / 1000 + 5))
    r.take(">i")
    r.skip_tags()
    r.take(">i")
    error = r.take(">h")
    r.compact_string()
    moving: dict[int, Moving] = {}
    for _ in range(r.uvarint() - 1):
        r.compact_string()
        for _ in range(r.uvarint() - 1):
            partition = r.take(">i")
            replicas, adding, removing = r.compact_ints(), r.compact_ints(), r.compact_ints()
            r.skip_tags()
            moving[partition] = Moving(partition, tuple(replicas), tuple(adding), tuple(removing))
        r.skip_tags()
    return error, moving


def alter_configs(host: str, port: int, resource_type: int, name: str, configs: dict[str, str | None],
                  timeout: float = 10.0) -> tuple[int, str | None]:
    """Set (a value) or delete (None) each of `configs` on one topic or broker: its error code and message."""
    entries = b"".join(struct.pack(">h", len(k)) + k.encode() + struct.pack(">b", DELETE if v is None else SET)
                       + (struct.pack(">h", -1) if v is None else struct.pack(">h", len(v)) + v.encode())
                       for k, v in configs.items())
    body = (struct.pack(">ib", 1, resource_type) + struct.pack(">h", len(name)) + name.encode()
            + struct.pack(">i", len(configs)) + entries + struct.pack(">b", 0))
    r = Reader(ask(host, port, _frame(INCREMENTAL_ALTER_CONFIGS_KEY, 0, body, False), timeout))
    r.take(">i")
    r.take(">i")  # throttle time
    r.take(">i")  # one resource
    code, message = r.take(">h"), r.string()
    return code, message

