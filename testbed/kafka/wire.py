"""Ask one Kafka broker or ZooKeeper server directly what it believes, over its own wire protocol.

A Kafka client library routes metadata requests to whichever broker it likes;
to see one broker's own view (its metadata cache: the controller, and each
partition's leader, ISR and leader epoch) we send a Metadata v7 request to that
broker alone; ListOffsets v2 at both isolation levels gives a leader's high watermark
and last stable offset. ZooKeeper's `srvr` four-letter command gives a server's role.
Pure socket code; never changes anything on the server.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass, field

METADATA_API_KEY = 3
METADATA_VERSION = 7


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


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, fmt: str) -> int:
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return int(value)

    def string(self) -> str | None:
        n = self.take(">h")
        if n < 0:
            return None
        s = self.data[self.pos:self.pos + n].decode()
        self.pos += n
        return s

    def int_array(self) -> list[int]:
        return [self.take(">i") for _ in range(max(self.take(">i"), 0))]


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed mid-response")
        buf += chunk
    return bytes(buf)


def _metadata_request(topics: list[str] | None, correlation_id: int) -> bytes:
    client = b"faultline-observer"
    body = struct.pack(">hhih", METADATA_API_KEY, METADATA_VERSION, correlation_id, len(client)) + client
    if topics is None:
        body += struct.pack(">i", -1)
    else:
        body += struct.pack(">i", len(topics))
        for t in topics:
            body += struct.pack(">h", len(t)) + t.encode()
    body += b"\x00"  # allow_auto_topic_creation = false
    return struct.pack(">i", len(body)) + body


def _parse_metadata(data: bytes, address: str) -> BrokerView:
    r = _Reader(data)
    r.take(">i")  # correlation id
    r.take(">i")  # throttle time
    brokers: dict[int, str] = {}
    for _ in range(r.take(">i")):
        node_id = r.take(">i")
        host = r.string() or ""
        port = r.take(">i")
        r.string()  # rack
        brokers[node_id] = f"{host}:{port}"
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
            epoch = r.take(">i")
            replicas, isr = r.int_array(), r.int_array()
            r.int_array()  # offline replicas
            parts.append(PartitionView(index, leader if leader >= 0 else None,
                                       epoch if epoch >= 0 else None, replicas, isr, err))
        view.partitions[name] = sorted(parts, key=lambda p: p.partition)
    return view


def broker_view(host: str, port: int, topics: list[str] | None = None, timeout: float = 2.0) -> BrokerView:
    """Send one Metadata request to exactly this broker and return its own view."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        sock.sendall(_metadata_request(topics, 1))
        size = struct.unpack(">i", _recv_exact(sock, 4))[0]
        return _parse_metadata(_recv_exact(sock, size), f"{host}:{port}")


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
    r = _Reader(data)
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
            size = struct.unpack(">i", _recv_exact(sock, 4))[0]
            answers.append(_parse_list_offsets(_recv_exact(sock, size)))
    stable, high = answers
    return {p: (high.get(p), stable.get(p)) for p in partitions}


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
