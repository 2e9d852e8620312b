"""The stray transactional produce's wire code (testbed/kafka/txn_wire.py), without a broker: CRC32C, varints,
a v2 record batch read back field by field, InitProducerId and Produce v3 bytes, and their answers over a
loopback socket (scenarios/hanging-transaction sends the real thing)."""

from __future__ import annotations

import socket
import struct
import threading

from testbed.kafka import txn_wire
from testbed.kafka.txn_wire import crc32c, record_batch, varint


def test_crc32c_is_castagnoli() -> None:
    assert crc32c(b"123456789") == 0xE3069283  # the check value of CRC-32C
    assert crc32c(b"") == 0


def test_varints_zigzag() -> None:
    assert [varint(n) for n in (0, -1, 1, 63, -64, 64, 300)] == [
        b"\x00", b"\x01", b"\x02", b"\x7e", b"\x7f", b"\x80\x01", b"\xd8\x04"]


def test_a_transactional_batch_reads_back() -> None:
    batch = record_batch(4242, 3, 0, [(None, b"stray-hang-0")], 1_700_000_000_000)
    base_offset, length = struct.unpack_from(">qi", batch)
    assert base_offset == 0 and length == len(batch) - 12
    leader_epoch, magic, crc = struct.unpack_from(">ibI", batch, 12)
    assert (leader_epoch, magic) == (-1, 2)
    assert crc == crc32c(batch[21:])  # the CRC covers attributes to the end
    attrs, last_delta, first_ts, max_ts, pid, epoch, seq, count = struct.unpack_from(">hiqqqhii", batch, 21)
    assert attrs & 0x10  # transactional
    assert (last_delta, first_ts, max_ts, pid, epoch, seq, count) == (0, 1_700_000_000_000, 1_700_000_000_000,
                                                                       4242, 3, 0, 1)
    record = batch[21 + struct.calcsize(">hiqqqhii"):]
    assert record[1:4] == b"\x00\x00\x00"  # attributes, timestamp delta 0, offset delta 0
    assert record[4:5] == b"\x01"  # null key
    assert record[5:6] == varint(12) and record[6:18] == b"stray-hang-0" and record[18:] == b"\x00"
    assert record[0:1] == varint(len(record) - 1)
    assert not record_batch(1, 0, 0, [(b"k", b"v")], 0, transactional=False)[21 + 1] & 0x10


def _serve_once(answer: bytes) -> tuple[int, list[bytes]]:
    """A loopback server that reads one request and answers it; (port, [the request's bytes])."""
    server = socket.create_server(("127.0.0.1", 0))
    got: list[bytes] = []

    def run() -> None:
        conn, _ = server.accept()
        with conn, server:
            size = struct.unpack(">i", conn.recv(4, socket.MSG_WAITALL))[0]
            got.append(conn.recv(size, socket.MSG_WAITALL))
            conn.sendall(struct.pack(">i", len(answer)) + answer)

    threading.Thread(target=run, daemon=True).start()
    return server.getsockname()[1], got


def test_init_producer_id_asks_the_coordinator() -> None:
    port, got = _serve_once(struct.pack(">iihqh", 1, 0, 0, 77, 2))
    assert txn_wire.init_producer_id("127.0.0.1", port, "fl00-stray-hang", 60000) == (0, 77, 2)
    request = got[0]
    assert struct.unpack_from(">hhi", request) == (22, 1, 1)  # InitProducerId v1
    client = struct.unpack_from(">h", request, 8)[0]
    rest = request[10 + client:]
    assert rest == struct.pack(">h", 15) + b"fl00-stray-hang" + struct.pack(">i", 60000)


def test_produce_sends_the_batch_with_its_transactional_id_and_reads_the_error() -> None:
    batch = record_batch(77, 2, 0, [(None, b"v")], 5)
    answer = struct.pack(">ii", 1, 1) + struct.pack(">h", 9) + b"faultline" + struct.pack(">iihqq", 1, 0, 48, -1, -1)
    port, got = _serve_once(answer + struct.pack(">i", 0))
    assert txn_wire.produce("127.0.0.1", port, "fl00-stray-hang", "faultline", 0, batch) == (48, -1)
    assert txn_wire.error_name(48) == "INVALID_TXN_STATE" and txn_wire.error_name(999) == "ERROR_999"
    request = got[0]
    assert struct.unpack_from(">hhi", request) == (0, 3, 1)  # Produce v3
    client = struct.unpack_from(">h", request, 8)[0]
    rest = request[10 + client:]
    assert rest.startswith(struct.pack(">h", 15) + b"fl00-stray-hang" + struct.pack(">hi", -1, 10000))
    assert rest.endswith(struct.pack(">ii", 0, len(batch)) + batch)
