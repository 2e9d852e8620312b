"""ListOffsets as the observer speaks it: the request's bytes and the answer's reading, without a broker
(the transactions cluster test reads a real leader's last stable offset)."""

from __future__ import annotations

import struct

from testbed.kafka.wire import READ_COMMITTED, _list_offsets_request, _parse_list_offsets


def test_the_request_asks_the_latest_offset_of_each_partition_at_an_isolation_level() -> None:
    data = _list_offsets_request("t", [0, 2], READ_COMMITTED, 7)
    (size,) = struct.unpack_from(">i", data)
    assert size == len(data) - 4
    api, version, correlation = struct.unpack_from(">hhi", data, 4)
    assert (api, version, correlation) == (2, 2, 7)
    client_len = struct.unpack_from(">h", data, 12)[0]
    rest = data[14 + client_len:]
    replica, isolation, topics, name_len = struct.unpack_from(">ibih", rest)
    assert (replica, isolation, topics, name_len) == (-1, 1, 1, 1) and rest[11:12] == b"t"
    assert struct.unpack_from(">iiqiq", rest, 12) == (2, 0, -1, 2, -1)


def test_the_answer_gives_offsets_and_none_for_errors() -> None:
    body = struct.pack(">ii", 7, 0) + struct.pack(">ih", 1, 1) + b"t" + struct.pack(">i", 2)
    body += struct.pack(">ihqq", 0, 0, -1, 114) + struct.pack(">ihqq", 2, 6, -1, -1)  # 6: NOT_LEADER_OR_FOLLOWER
    assert _parse_list_offsets(body) == {0: 114, 2: None}
