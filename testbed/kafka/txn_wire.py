"""A transactional produce that no coordinator knows of, over Kafka's own wire protocol.

KAFKA-12671 (a hanging transaction): a partition leader that takes a
transactional record batch for a partition the transaction coordinator never
added (no AddPartitionsToTxn) opens a transaction in that partition that no
commit or abort marker will ever close; its last stable offset stops there
and read_committed consumers stall. librdkafka cannot send such a batch (its
abort waits for in-flight produces), so this module speaks the protocol
itself, in the style of `testbed.kafka.wire`:

- `init_producer_id`: InitProducerId v1 for a transactional.id, sent to its
  coordinator: the producer id and epoch (and the coordinator's state becomes
  Empty: no transaction begun, so its transaction timeout never fires);
- `record_batch`: a v2 record batch (magic 2, CRC32C) with the transactional
  attribute bit, that producer id, epoch and base sequence 0;
- `produce`: Produce v3 (the first that carries a transactional.id and
  record batches v2; Kafka 0.11 to 4.x serve it) with acks=all to the
  partition's leader: the broker's error code and the batch's base offset.

From Kafka 3.6 the leader first asks the coordinator whether the partition is
part of an ongoing transaction (KIP-890 part 1,
`transaction.partition.verification.enable`, default true) and refuses the
batch when it is not; 2.7 takes it. Pure socket code; only `produce` writes.
"""

from __future__ import annotations

import socket
import struct

from testbed.kafka.wire_codec import Reader, exchange, request_header

PRODUCE_API_KEY, PRODUCE_VERSION = 0, 3
INIT_PRODUCER_ID_API_KEY, INIT_PRODUCER_ID_VERSION = 22, 1
TRANSACTIONAL_ATTRIBUTE = 0x10  # record batch attributes, bit 4: the batch is part of a transaction
CLIENT_ID = b"faultline-stray"

# The error codes this client may meet, by Kafka's names (org.apache.kafka.common.protocol.Errors).
ERRORS = {0: "NONE", 1: "OFFSET_OUT_OF_RANGE", 2: "CORRUPT_MESSAGE", 3: "UNKNOWN_TOPIC_OR_PARTITION",
          6: "NOT_LEADER_OR_FOLLOWER", 7: "REQUEST_TIMED_OUT", 14: "COORDINATOR_LOAD_IN_PROGRESS",
          15: "COORDINATOR_NOT_AVAILABLE", 16: "NOT_COORDINATOR", 19: "NOT_ENOUGH_REPLICAS",
          20: "NOT_ENOUGH_REPLICAS_AFTER_APPEND", 35: "UNSUPPORTED_VERSION", 45: "OUT_OF_ORDER_SEQUENCE_NUMBER",
          47: "INVALID_PRODUCER_EPOCH", 48: "INVALID_TXN_STATE", 49: "INVALID_PRODUCER_ID_MAPPING",
          50: "INVALID_TRANSACTION_TIMEOUT", 51: "CONCURRENT_TRANSACTIONS", 53: "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
          59: "UNKNOWN_PRODUCER_ID", 87: "INVALID_RECORD", 90: "PRODUCER_FENCED"}


def error_name(code: int) -> str:
    return ERRORS.get(code, f"ERROR_{code}")


def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        crc = n
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC32C = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), the checksum of a v2 record batch."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC32C[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def varint(n: int) -> bytes:
    """Kafka's zig-zag varint (and varlong: the same encoding)."""
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        low = z & 0x7F
        z >>= 7
        if z:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _record(offset_delta: int, key: bytes | None, value: bytes) -> bytes:
    body = b"\x00" + varint(0) + varint(offset_delta)  # attributes, timestamp delta, offset delta
    body += varint(-1) if key is None else varint(len(key)) + key
    body += varint(len(value)) + value + varint(0)  # no headers
    return varint(len(body)) + body


def record_batch(producer_id: int, epoch: int, base_sequence: int, records: list[tuple[bytes | None, bytes]],
                 timestamp_ms: int, transactional: bool = True) -> bytes:
    """A v2 record batch of `records` (key, value), all at `timestamp_ms`."""
    after_crc = struct.pack(">hiqqqhii", TRANSACTIONAL_ATTRIBUTE if transactional else 0, len(records) - 1,
                            timestamp_ms, timestamp_ms, producer_id, epoch, base_sequence, len(records))
    after_crc += b"".join(_record(i, k, v) for i, (k, v) in enumerate(records))
    after_length = struct.pack(">ibI", -1, 2, crc32c(after_crc)) + after_crc  # leader epoch, magic, crc
    return struct.pack(">qi", 0, len(after_length)) + after_length


def _string(s: str) -> bytes:
    raw = s.encode()
    return struct.pack(">h", len(raw)) + raw


def _init_producer_id_request(transactional_id: str, timeout_ms: int, correlation_id: int) -> bytes:
    body = request_header(INIT_PRODUCER_ID_API_KEY, INIT_PRODUCER_ID_VERSION, correlation_id, CLIENT_ID)
    body += _string(transactional_id) + struct.pack(">i", timeout_ms)
    return struct.pack(">i", len(body)) + body


def _parse_init_producer_id(data: bytes) -> tuple[int, int, int]:
    r = Reader(data)
    r.take(">i")  # correlation id
    r.take(">i")  # throttle time
    return r.take(">h"), r.take(">q"), r.take(">h")


def init_producer_id(host: str, port: int, transactional_id: str, transaction_timeout_ms: int,
                     timeout: float = 5.0) -> tuple[int, int, int]:
    """(error code, producer id, epoch) from the transaction coordinator at host:port."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        return _parse_init_producer_id(exchange(sock, _init_producer_id_request(transactional_id,
                                                                                 transaction_timeout_ms, 1)))


def _produce_request(transactional_id: str | None, topic: str, partition: int, batch: bytes, timeout_ms: int,
                     correlation_id: int) -> bytes:
    body = request_header(PRODUCE_API_KEY, PRODUCE_VERSION, correlation_id, CLIENT_ID)
    body += struct.pack(">h", -1) if transactional_id is None else _string(transactional_id)
    body += struct.pack(">hi", -1, timeout_ms)  # acks=all
    body += struct.pack(">i", 1) + _string(topic) + struct.pack(">i", 1)
    body += struct.pack(">ii", partition, len(batch)) + batch
    return struct.pack(">i", len(body)) + body


def _parse_produce(data: bytes) -> tuple[int, int]:
    r = Reader(data)
    r.take(">i")  # correlation id
    for _ in range(r.take(">i")):
        r.string()  # topic
        for _ in range(r.take(">i")):
            r.take(">i")  # partition
            error, offset = r.take(">h"), r.take(">q")
            r.take(">q")  # log append time
            return error, offset
    raise ValueError("Produce answered no partition")


def produce(host: str, port: int, transactional_id: str | None, topic: str, partition: int, batch: bytes,
            timeout_ms: int = 10000) -> tuple[int, int]:
    """(error code, base offset) of one Produce of `batch` to `topic`/`partition` at host:port, acks=all."""
    with socket.create_connection((host, port), timeout=timeout_ms / 1000 + 5) as sock:
        sock.settimeout(timeout_ms / 1000 + 5)
        return _parse_produce(exchange(sock, _produce_request(transactional_id, topic, partition, batch,
                                                               timeout_ms, 1)))
