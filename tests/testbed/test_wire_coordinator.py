"""FindCoordinator as the nemesis speaks it to find a transactional.id's coordinator: the request's bytes and
the answer's reading, without a broker (scenarios/txn-coordinator-az finds a real one when its fault fires)."""

from __future__ import annotations

import struct

from testbed.kafka.wire import _find_coordinator_request, _parse_find_coordinator


def test_the_request_asks_for_a_transaction_coordinator() -> None:
    data = _find_coordinator_request("fl00-producer-az1-0", 1, 3)
    (size,) = struct.unpack_from(">i", data)
    assert size == len(data) - 4
    assert struct.unpack_from(">hhi", data, 4) == (10, 1, 3)  # FindCoordinator v1 (the first with key_type)
    client_len = struct.unpack_from(">h", data, 12)[0]
    rest = data[14 + client_len:]
    (key_len,) = struct.unpack_from(">h", rest)
    assert rest[2:2 + key_len] == b"fl00-producer-az1-0"
    assert rest[2 + key_len:] == b"\x01"  # key type 1: a transactional.id


def _answer(error: int, node: int, message: bytes | None = None) -> bytes:
    text = struct.pack(">h", -1) if message is None else struct.pack(">h", len(message)) + message
    host = b"198.18.0.12"
    return struct.pack(">iih", 3, 0, error) + text + struct.pack(">ih", node, len(host)) + host + struct.pack(">i", 9092)


def test_the_answer_names_the_broker_or_the_error() -> None:
    assert _parse_find_coordinator(_answer(0, 2)) == (0, 2)
    assert _parse_find_coordinator(_answer(15, -1, b"The coordinator is not available.")) == (15, None)
