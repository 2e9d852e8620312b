"""A dynamic KRaft quorum's voters over the wire (KIP-853, Kafka 3.9 on): who they are, and changing them.

DescribeQuorum v2 (API 55) names each voter and observer with its directory id (the `directory.id` of its
metadata log directory's meta.properties), which a voter is known by alongside its node id: a controller
formatted afresh is a new replica of the same id. AddRaftVoter (API 80) asks the active controller to add an
observer that has caught up; RemoveRaftVoter (API 81) to remove a voter (the leader itself included: it resigns
once the new voter set is committed). Layouts from the 3.9.0 tag's message JSON
(clients/src/main/resources/common/message/{DescribeQuorum,AddRaftVoter,RemoveRaftVoter}*.json): all flexible
versions (request header v2, response header v1). Error codes from Errors.java at the same tag.

Must never: decide whom to add or remove (that is `nemesis.controller_membership`), or retry.
"""

from __future__ import annotations

import base64
import struct
from dataclasses import dataclass, field

from testbed.kafka.quorum import describe_quorum_request
from testbed.kafka.wire_codec import NO_TAGS, FlexReader, ask, compact_string, request_header, uvarint

DESCRIBE_QUORUM_V2 = 2
ADD_RAFT_VOTER_KEY = 80
REMOVE_RAFT_VOTER_KEY = 81
CONTROLLER_LISTENER = "CONTROLLER"
ERRORS = {0: "NONE", 6: "NOT_LEADER_OR_FOLLOWER", 7: "REQUEST_TIMED_OUT", 35: "UNSUPPORTED_VERSION",
          42: "INVALID_REQUEST", 94: "INCONSISTENT_VOTER_SET", 104: "INCONSISTENT_CLUSTER_ID",
          125: "INVALID_VOTER_KEY", 126: "DUPLICATE_VOTER", 127: "VOTER_NOT_FOUND"}
RETRIABLE = frozenset({6, 7})  # a leader moving or busy with the previous change: worth asking again


def error_name(code: int) -> str:
    return ERRORS.get(code, f"error {code}")


def uuid_text(raw: bytes) -> str:
    """A Kafka Uuid as its tools print it: base64url of its 16 bytes, no padding."""
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def uuid_bytes(text: str) -> bytes:
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if len(raw) != 16:
        raise ValueError(f"{text!r} is not a Kafka Uuid (16 bytes, base64url)")
    return raw


@dataclass(frozen=True)
class Replica:
    """One voter or observer as the leader knows it."""

    node_id: int
    directory_id: str
    log_end_offset: int

    def to_json(self) -> dict[str, object]:
        return {"id": self.node_id, "directory_id": self.directory_id, "log_end_offset": self.log_end_offset}


@dataclass(frozen=True)
class VoterSet:
    """The leader's DescribeQuorum v2 answer (error 0), or a follower's refusal (its error)."""

    error: int
    leader_id: int | None = None
    leader_epoch: int | None = None
    high_watermark: int | None = None
    voters: tuple[Replica, ...] = ()
    observers: tuple[Replica, ...] = ()
    endpoints: dict[int, tuple[str, int]] = field(default_factory=dict)  # node id -> its CONTROLLER host, port

    @property
    def leading(self) -> bool:
        return self.error == 0 and self.leader_id is not None

    def voter(self, node_id: int) -> Replica | None:
        return next((r for r in self.voters if r.node_id == node_id), None)

    def observer(self, node_id: int, directory_id: str) -> Replica | None:
        return next((r for r in self.observers if (r.node_id, r.directory_id) == (node_id, directory_id)), None)

    def to_json(self) -> dict[str, object]:
        """What a journal row says of the voter set: the leader, its epoch and each voter's (id, directory id)."""
        return {"leader": self.leader_id, "epoch": self.leader_epoch, "high_watermark": self.high_watermark,
                "voters": [r.to_json() for r in self.voters], "observers": [r.to_json() for r in self.observers]}


def _flex_request(api_key: int, version: int, correlation_id: int, body: bytes) -> bytes:
    frame = request_header(api_key, version, correlation_id) + NO_TAGS + body
    return struct.pack(">i", len(frame)) + frame


def describe_voters_request(correlation_id: int) -> bytes:
    return describe_quorum_request(correlation_id, DESCRIBE_QUORUM_V2)


def _replicas(r: FlexReader) -> tuple[Replica, ...]:
    out = []
    for _ in range(r.uvarint() - 1):
        node_id = r.take(">i")
        directory = uuid_text(r.data[r.pos:r.pos + 16])
        r.pos += 16
        end = r.take(">q")
        r.take(">q"), r.take(">q")  # last fetch, last caught-up timestamps
        r.skip_tags()
        out.append(Replica(node_id, directory, end))
    return tuple(out)


def parse_describe_voters(data: bytes) -> VoterSet:
    r = FlexReader(data)
    r.take(">i")  # correlation id
    r.skip_tags()
    error = r.take(">h")
    r.compact_string()  # error message
    if error:
        return VoterSet(error)
    found: VoterSet | None = None
    for _ in range(r.uvarint() - 1):
        r.compact_string()  # topic name
        for _ in range(r.uvarint() - 1):
            r.take(">i")  # partition index
            error = r.take(">h")
            r.compact_string()
            leader, epoch, hw = r.take(">i"), r.take(">i"), r.take(">q")
            voters, observers = _replicas(r), _replicas(r)
            r.skip_tags()
            found = VoterSet(error) if error else VoterSet(0, leader if leader >= 0 else None, epoch, hw, voters,
                                                            observers)
        r.skip_tags()
    if found is None:
        raise ValueError("DescribeQuorum answered no partition")
    endpoints = {}
    for _ in range(r.uvarint() - 1):
        node_id = r.take(">i")
        for _ in range(r.uvarint() - 1):
            name, host, port = r.compact_string(), r.compact_string(), r.take(">H")
            r.skip_tags()
            if name == CONTROLLER_LISTENER and host is not None:
                endpoints[node_id] = (host, port)
        r.skip_tags()
    return VoterSet(found.error, found.leader_id, found.leader_epoch, found.high_watermark, found.voters,
                    found.observers, endpoints) if not found.error else found


def add_voter_request(correlation_id: int, cluster_id: str | None, timeout_ms: int, node_id: int,
                      directory_id: str, host: str, port: int) -> bytes:
    listener = compact_string(CONTROLLER_LISTENER) + compact_string(host) + struct.pack(">H", port) + NO_TAGS
    body = (compact_string(cluster_id) + struct.pack(">ii", timeout_ms, node_id) + uuid_bytes(directory_id)
            + uvarint(2) + listener + NO_TAGS)
    return _flex_request(ADD_RAFT_VOTER_KEY, 0, correlation_id, body)


def remove_voter_request(correlation_id: int, cluster_id: str | None, node_id: int, directory_id: str) -> bytes:
    body = compact_string(cluster_id) + struct.pack(">i", node_id) + uuid_bytes(directory_id) + NO_TAGS
    return _flex_request(REMOVE_RAFT_VOTER_KEY, 0, correlation_id, body)


def parse_voter_change(data: bytes) -> tuple[int, str | None]:
    """An AddRaftVoter or RemoveRaftVoter answer: its error code and message."""
    r = FlexReader(data)
    r.take(">i")  # correlation id
    r.skip_tags()
    r.take(">i")  # throttle time
    return r.take(">h"), r.compact_string()


def describe_voters(host: str, port: int, timeout: float = 2.0) -> VoterSet:
    """This controller's DescribeQuorum v2 answer; OSError/ConnectionError when it does not answer."""
    return parse_describe_voters(ask(host, port, describe_voters_request(1), timeout))


def add_voter(host: str, port: int, node_id: int, directory_id: str, endpoint: tuple[str, int],
              timeout: float = 15.0) -> tuple[int, str | None]:
    """Ask the controller at host:port (the leader) to add voter (node_id, directory_id) reached at `endpoint`."""
    request = add_voter_request(1, None, int(timeout * 1000) - 1000, node_id, directory_id, *endpoint)
    return parse_voter_change(ask(host, port, request, timeout))


def remove_voter(host: str, port: int, node_id: int, directory_id: str,
                 timeout: float = 15.0) -> tuple[int, str | None]:
    """Ask the controller at host:port (the leader) to remove voter (node_id, directory_id)."""
    return parse_voter_change(ask(host, port, remove_voter_request(1, None, node_id, directory_id), timeout))
