"""Ask one KRaft controller what it knows of the metadata quorum: DescribeQuorum (API 55), over the wire.

In KRaft the Metadata response's controller id is not the active controller
(a broker names a random live broker there, so that admin requests it cannot
serve are forwarded); the quorum's leader is what DescribeQuorum says. A
controller answers it fully only while it leads the quorum (a follower answers
NOT_LEADER_OR_FOLLOWER), so asking each controller directly says which ones
believe they are the active controller, at which epoch: two at once is the
KRaft form of two controllers (an isolated leader before KAFKA-15489, 3.7).
v0 (Kafka 3.0 on, still served by 4.x) is a flexible version: compact arrays
and strings, tagged fields, request header v2 and response header v1.
Pure socket code; never changes anything on the controller.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from testbed.kafka.wire_codec import NO_TAGS, FlexReader, ask, request_header, uvarint

DESCRIBE_QUORUM_KEY = 55
DESCRIBE_QUORUM_VERSION = 0
METADATA_TOPIC = "__cluster_metadata"
NOT_LEADER_OR_FOLLOWER = 6


@dataclass(frozen=True)
class QuorumView:
    """One controller's DescribeQuorum answer: leading (error 0) with the voters' log end offsets, or not."""

    error: int
    leader_id: int | None = None
    leader_epoch: int | None = None
    high_watermark: int | None = None
    voters: dict[int, int] = field(default_factory=dict)  # voter id -> its log end offset, as the leader knows it

    @property
    def leading(self) -> bool:
        return self.error == 0 and self.leader_id is not None


def describe_quorum_request(correlation_id: int, version: int = DESCRIBE_QUORUM_VERSION) -> bytes:
    """DescribeQuorum of the metadata log's one partition (its body the same from v0 to v2; flexible from v0)."""
    topic = METADATA_TOPIC.encode()
    body = uvarint(2) + uvarint(len(topic) + 1) + topic + uvarint(2) + struct.pack(">i", 0) + NO_TAGS
    body += NO_TAGS + NO_TAGS  # the topic's tagged fields, the request's
    frame = request_header(DESCRIBE_QUORUM_KEY, version, correlation_id) + NO_TAGS + body
    return struct.pack(">i", len(frame)) + frame


def parse_describe_quorum(data: bytes) -> QuorumView:
    r = FlexReader(data)
    r.take(">i")  # correlation id
    r.skip_tags()
    error = r.take(">h")
    if error:
        return QuorumView(error)
    for _ in range(r.uvarint() - 1):
        r.compact_string()  # topic name
        for _ in range(r.uvarint() - 1):
            r.take(">i")  # partition index
            error = r.take(">h")
            leader, epoch, hw = r.take(">i"), r.take(">i"), r.take(">q")
            voters = {}
            for _ in range(r.uvarint() - 1):
                replica, end = r.take(">i"), r.take(">q")
                r.skip_tags()
                voters[replica] = end
            if error:
                return QuorumView(error)
            return QuorumView(0, leader if leader >= 0 else None, epoch, hw, voters)
    raise ValueError("DescribeQuorum answered no partition")


def describe_quorum(host: str, port: int, timeout: float = 2.0) -> QuorumView:
    """Exactly this controller's answer; OSError/ConnectionError when it does not answer."""
    return parse_describe_quorum(ask(host, port, describe_quorum_request(1), timeout))
