"""Kafka's wire framing, shared by every module that talks to a broker directly (`wire`, `quorum`, `txn_wire`).

A request is a size-prefixed frame that starts with a request header (v1: api key, version,
correlation id, client id); a response is a size-prefixed frame whose fields `Reader` takes in
order. `exchange` sends one request on a connected socket and returns the response's body. The
flexible versions' encoding (KIP-482: unsigned varints, compact strings and arrays, tagged fields) is
here too: `uvarint`, `compact_string`, `compact_ints`, NO_TAGS and `FlexReader`.

Must never: know any one API's request or response layout (that is the module that asks), open or
close a connection, or retry.
"""

from __future__ import annotations

import socket
import struct


class Reader:
    """Takes a response's big-endian fields in order: integers by `struct` format, strings, int arrays."""

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


class FlexReader(Reader):
    """A Reader that also takes the flexible versions' unsigned varints, compact strings and arrays, tagged fields."""

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            byte = self.take(">B")
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7

    def compact_string(self) -> str | None:
        n = self.uvarint() - 1
        if n < 0:
            return None
        s = self.data[self.pos:self.pos + n].decode()
        self.pos += n
        return s

    def compact_ints(self) -> list[int]:
        return [self.take(">i") for _ in range(max(self.uvarint() - 1, 0))]

    def skip_tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            self.pos += self.uvarint()  # size, then the bytes


def uvarint(n: int) -> bytes:
    """`n` as an unsigned varint."""
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


NO_TAGS = uvarint(0)  # an empty tagged-fields section


def compact_string(s: str | None) -> bytes:
    """A compact (nullable) string: its length plus one as an unsigned varint, then its bytes."""
    if s is None:
        return uvarint(0)
    data = s.encode()
    return uvarint(len(data) + 1) + data


def compact_ints(values: list[int] | None) -> bytes:
    """A compact (nullable) array of int32."""
    if values is None:
        return uvarint(0)
    return uvarint(len(values) + 1) + b"".join(struct.pack(">i", v) for v in values)


def recv_exact(sock: socket.socket, n: int) -> bytes:
    """Exactly `n` bytes from `sock`; ConnectionError when the peer closes first."""
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed mid-response")
        buf += chunk
    return bytes(buf)


def request_header(api_key: int, version: int, correlation_id: int, client: bytes = b"faultline-observer") -> bytes:
    """A request header v1: api key, version, correlation id and the client id `client`."""
    return struct.pack(">hhih", api_key, version, correlation_id, len(client)) + client


def ask(host: str, port: int, request: bytes, timeout: float) -> bytes:
    """`exchange` over a connection of its own to host:port, every step bounded by `timeout`."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        return exchange(sock, request)


def exchange(sock: socket.socket, request: bytes) -> bytes:
    """Send one framed request and return its response's body (the frame without its size)."""
    sock.sendall(request)
    size = struct.unpack(">i", recv_exact(sock, 4))[0]
    return recv_exact(sock, size)
