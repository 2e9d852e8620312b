"""Kafka's wire framing, shared by every module that talks to a broker directly (`wire`, `quorum`, `txn_wire`).

A request is a size-prefixed frame that starts with a request header (v1: api key, version,
correlation id, client id); a response is a size-prefixed frame whose fields `Reader` takes in
order. `exchange` sends one request on a connected socket and returns the response's body.

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


def exchange(sock: socket.socket, request: bytes) -> bytes:
    """Send one framed request and return its response's body (the frame without its size)."""
    sock.sendall(request)
    size = struct.unpack(">i", recv_exact(sock, 4))[0]
    return recv_exact(sock, size)
