"""Ask one Kafka broker or ZooKeeper server directly what it believes, over its own wire protocol.

A Kafka client library routes metadata requests to whichever broker it likes;
to see one broker's own view (its metadata cache: the controller, and each
partition's leader, ISR and leader epoch) we send a Metadata request to that
broker alone: v7 where the broker answers it (2.1 on), else the newest it
offers in its ApiVersions answer, asked first on the same connection (0.10.2
offers v2, 0.11 v4, 1.0 to 2.0 v5/v6; none of those carries the leader epoch,
so it is None there; v1, which names the controller, is the oldest we ask).
ListOffsets v2 at both isolation levels gives a leader's high watermark and
last stable offset. FindCoordinator v1 (0.11 on) names the transaction coordinator of a
transactional.id (key type 1) or the group coordinator of a consumer group (key type 0). ZooKeeper's `srvr` four-letter command gives a server's role.
Pure socket code; never changes anything on the server.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass, field

from testbed.kafka.wire_codec import Reader, exchange, recv_exact, request_header

METADATA_API_KEY = 3
API_VERSIONS_KEY = 18
METADATA_VERSION = 7  # the newest this parser reads (the first with each partition's leader epoch)
METADATA_OLDEST = 1  # the first that names the controller (0.10.0)


@dataclass
class PartitionView:
    partition: int
    leader: int | None
    leader_epoch: int | None
    replicas: list[int]
    isr: list[int]
    error: int


@dataclass
class BrokerView:
    """What one broker believes: its metadata cache at the moment it answered."""

    broker: int | None
    controller: int | None
    brokers: dict[int, str]
    partitions: dict[str, list[PartitionView]] = field(default_factory=dict)


def _api_versions_request(correlation_id: int) -> bytes:
    body = request_header(API_VERSIONS_KEY, 0, correlation_id)
    return struct.pack(">i", len(body)) + body


def _parse_api_versions(data: bytes) -> dict[int, tuple[int, int]]:
    """api key -> (oldest, newest) version the broker serves (ApiVersions v0 response)."""
    r = Reader(data)
    r.take(">i")  # correlation id
    error = r.take(">h")
    if error:
        raise ValueError(f"ApiVersions answered error {error}")
    return {r.take(">h"): (r.take(">h"), r.take(">h")) for _ in range(r.take(">i"))}


def metadata_version(api_versions: dict[int, tuple[int, int]]) -> int:
    """The Metadata version to ask a broker that serves `api_versions`: the newest both sides know."""
    lowest, highest = api_versions.get(METADATA_API_KEY, (0, -1))
    chosen = min(highest, METADATA_VERSION)
    if chosen < max(lowest, METADATA_OLDEST):
        raise ValueError(f"the broker serves Metadata v{lowest}..v{highest}, none of v{METADATA_OLDEST}..v"
                         f"{METADATA_VERSION} this observer reads")
    return chosen


def _metadata_request(topics: list[str] | None, correlation_id: int, version: int = METADATA_VERSION) -> bytes:
    body = request_header(METADATA_API_KEY, version, correlation_id)
    if topics is None:
        body += struct.pack(">i", -1)
    else:
        body += struct.pack(">i", len(topics))
        for t in topics:
            body += struct.pack(">h", len(t)) + t.encode()
    if version >= 4:
        body += b"\x00"  # allow_auto_topic_creation = false
    return struct.pack(">i", len(body)) + body


def _parse_metadata(data: bytes, address: str, version: int = METADATA_VERSION) -> BrokerView:
    r = Reader(data)
    r.take(">i")  # correlation id
    if version >= 3:
        r.take(">i")  # throttle time
    brokers: dict[int, str] = {}
    for _ in range(r.take(">i")):
        node_id = r.take(">i")
        host = r.string() or ""
        port = r.take(">i")
        r.string()  # rack
        brokers[node_id] = f"{host}:{port}"
    if version >= 2:
        r.string()  # cluster id
    controller = r.take(">i")
    view = BrokerView(broker=None, controller=controller if controller >= 0 else None, brokers=brokers)
    view.broker = next((b for b, hp in brokers.items() if hp == address), None)
    for _ in range(r.take(">i")):
        r.take(">h")  # topic error
        name = r.string() or ""
        r.take(">b")  # is_internal
        parts = []
        for _ in range(r.take(">i")):
            err = r.take(">h")
            index = r.take(">i")
            leader = r.take(">i")
            epoch = r.take(">i") if version >= 7 else -1  # before v7 (Kafka 2.1) no leader epoch: None
            replicas, isr = r.int_array(), r.int_array()
            if version >= 5:
                r.int_array()  # offline replicas
            parts.append(PartitionView(index, leader if leader >= 0 else None,
                                       epoch if epoch >= 0 else None, replicas, isr, err))
        view.partitions[name] = sorted(parts, key=lambda p: p.partition)
    return view


def broker_view(host: str, port: int, topics: list[str] | None = None, timeout: float = 2.0) -> BrokerView:
    """Ask exactly this broker which Metadata versions it serves, then for its own view in the newest we share.

    ValueError when the broker serves none this parser reads; OSError/ConnectionError when it does not answer.
    """
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        version = metadata_version(_parse_api_versions(exchange(sock, _api_versions_request(1))))
        return _parse_metadata(exchange(sock, _metadata_request(topics, 2, version)), f"{host}:{port}", version)


LIST_OFFSETS_API_KEY = 2
LIST_OFFSETS_VERSION = 2  # the first with isolation_level
READ_UNCOMMITTED, READ_COMMITTED = 0, 1
LATEST = -1  # ListOffsets' timestamp for "the end": the high watermark read_uncommitted, the LSO read_committed


def _list_offsets_request(topic: str, partitions: list[int], isolation: int, correlation_id: int) -> bytes:
    client = b"faultline-observer"
    body = struct.pack(">hhih", LIST_OFFSETS_API_KEY, LIST_OFFSETS_VERSION, correlation_id, len(client)) + client
    body += struct.pack(">ib", -1, isolation)  # replica_id -1: a consumer's request
    body += struct.pack(">ih", 1, len(topic)) + topic.encode() + struct.pack(">i", len(partitions))
    for p in partitions:
        body += struct.pack(">iq", p, LATEST)
    return struct.pack(">i", len(body)) + body


def _parse_list_offsets(data: bytes) -> dict[int, int | None]:
    """partition -> offset, None where the broker answered with an error (not the leader, say)."""
    r = Reader(data)
    r.take(">i")  # correlation id
    r.take(">i")  # throttle time
    out: dict[int, int | None] = {}
    for _ in range(r.take(">i")):
        r.string()  # topic
        for _ in range(r.take(">i")):
            partition, error = r.take(">i"), r.take(">h")
            r.take(">q")  # timestamp
            offset = r.take(">q")
            out[partition] = offset if error == 0 and offset >= 0 else None
    return out


def end_offsets(host: str, port: int, topic: str, partitions: list[int],
                timeout: float = 2.0) -> dict[int, tuple[int | None, int | None]]:
    """(high watermark, last stable offset) per partition as exactly this broker answers ListOffsets for the
    latest offset at read_uncommitted and read_committed; None where it does not answer one (only a
    partition's leader does)."""
    answers = []
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        # The last stable offset first: the high watermark only grows, so one asked after it is never below it
        # (asked the other way round, a write between the two answers showed an LSO above the high watermark).
        for correlation, isolation in enumerate((READ_COMMITTED, READ_UNCOMMITTED), 1):
            sock.sendall(_list_offsets_request(topic, partitions, isolation, correlation))
            size = struct.unpack(">i", recv_exact(sock, 4))[0]
            answers.append(_parse_list_offsets(recv_exact(sock, size)))
    stable, high = answers
    return {p: (high.get(p), stable.get(p)) for p in partitions}


FIND_COORDINATOR_API_KEY = 10
FIND_COORDINATOR_VERSION = 1  # the first with key_type (0.11)
TRANSACTION_KEY = 1  # key_type: a transactional.id
GROUP_KEY = 0  # key_type: a consumer group id


def _find_coordinator_request(key: str, key_type: int, correlation_id: int) -> bytes:
    body = request_header(FIND_COORDINATOR_API_KEY, FIND_COORDINATOR_VERSION, correlation_id)
    body += struct.pack(">h", len(key.encode())) + key.encode() + struct.pack(">b", key_type)
    return struct.pack(">i", len(body)) + body


def _parse_find_coordinator(data: bytes) -> tuple[int, int | None]:
    """(error code, coordinator's broker id or None on an error) of a FindCoordinator v1 answer."""
    r = Reader(data)
    r.take(">i")  # correlation id
    r.take(">i")  # throttle time
    error = r.take(">h")
    r.string()  # error message
    node = r.take(">i")
    return error, (node if error == 0 and node >= 0 else None)


def coordinator(host: str, port: int, key: str, key_type: int, timeout: float = 2.0) -> tuple[int, int | None]:
    """(error code, broker id) of the coordinator of `key` (a transactional.id with TRANSACTION_KEY, a group id
    with GROUP_KEY) as this broker names it.

    A broker answers from its own metadata (the leader of the __transaction_state or __consumer_offsets partition
    the key hashes to); error 15 (COORDINATOR_NOT_AVAILABLE) while that partition has no leader."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        return _parse_find_coordinator(exchange(sock, _find_coordinator_request(key, key_type, 1)))


def txn_coordinator(host: str, port: int, transactional_id: str, timeout: float = 2.0) -> tuple[int, int | None]:
    """(error code, broker id) of the transaction coordinator of `transactional_id` as this broker names it."""
    return coordinator(host, port, transactional_id, TRANSACTION_KEY, timeout)


def first_coordinator(hosts: list[str], port: int, key: str, key_type: int, timeout: float = 2.0) -> int | None:
    """The broker the first answering host names as `key`'s coordinator (`key_type` as in `coordinator`), or None."""
    for host in hosts:
        try:
            error, broker = coordinator(host, port, key, key_type, timeout)
        except (OSError, ConnectionError, ValueError, struct.error):
            continue
        if error == 0 and broker is not None:
            return broker
    return None


def first_txn_coordinator(hosts: list[str], port: int, transactional_id: str, timeout: float = 2.0) -> int | None:
    """The broker the first answering host names as `transactional_id`'s transaction coordinator, or None."""
    return first_coordinator(hosts, port, transactional_id, TRANSACTION_KEY, timeout)


def four_letter(host: str, port: int, command: str = "srvr", timeout: float = 2.0) -> str:
    """Send a ZooKeeper four-letter command and return the whole answer."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        sock.sendall(command.encode())
        chunks = []
        while True:
            chunk = sock.recv(4096)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


def zookeeper_mode(host: str, port: int, timeout: float = 2.0) -> str:
    """'leader', 'follower', 'standalone', or 'down' when the server does not serve (no quorum)."""
    try:
        answer = four_letter(host, port, "srvr", timeout)
    except OSError:
        return "down"
    for line in answer.splitlines():
        if line.startswith("Mode:"):
            return line.split(":", 1)[1].strip()
    return "down"  # "This ZooKeeper instance is not currently serving requests"
