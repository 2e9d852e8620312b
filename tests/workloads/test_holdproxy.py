"""The request-holding proxy (workloads/holdproxy.py) on real loopback sockets: framing, holding, late forwarding."""

from __future__ import annotations

import json
import re
import socket
import struct
import threading
import time
from pathlib import Path

import pytest

from workloads.holdproxy import END_TXN, HoldProxy, end_txn_committed, frames, request_header


def request(api_key: int, correlation: int, body: bytes = b"x") -> bytes:
    payload = struct.pack(">hhi", api_key, 1, correlation) + body
    return struct.pack(">i", len(payload)) + payload


def answer(correlation: int, error: int = 0) -> bytes:
    payload = struct.pack(">iih", correlation, 0, error)
    return struct.pack(">i", len(payload)) + payload


class Broker:
    """An upstream that records each request frame (time, api_key, correlation) and answers it at once."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.got: list[tuple[float, int, int]] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            conn, _ = self.listener.accept()
            threading.Thread(target=self._conn, args=(conn,), daemon=True).start()

    def _conn(self, conn: socket.socket) -> None:
        buf = bytearray()
        while data := conn.recv(65536):
            buf += data
            for frame in frames(buf):
                api_key, _, correlation = request_header(frame)
                self.got.append((time.monotonic(), api_key, correlation))
                conn.sendall(answer(correlation))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture()
def bed(tmp_path: Path):  # type: ignore[no-untyped-def]
    broker = Broker()
    port = free_port()
    proxy = HoldProxy({port: f"127.0.0.1:{broker.port}"}, tmp_path / "control", tmp_path / "events.jsonl")
    proxy.start()
    return broker, port, proxy, tmp_path


def order(path: Path, **body: object) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(body))
    tmp.replace(path)


def events(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def wait_for(check, timeout: float = 5.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def read_answers(conn: socket.socket, n: int) -> list[int]:
    buf, out = bytearray(), []
    while len(out) < n:
        buf += conn.recv(65536)
        out += [struct.unpack_from(">i", f, 4)[0] for f in frames(buf)]
    return out


def test_frames_cut_only_complete_frames() -> None:
    buf = bytearray(request(26, 7) + request(0, 8)[:5])
    done = frames(buf)
    assert [request_header(f) for f in done] == [(26, 1, 7)]
    assert len(buf) == 5


def test_unarmed_proxy_forwards_both_ways(bed) -> None:  # type: ignore[no-untyped-def]
    broker, port, _, _ = bed
    with socket.create_connection(("127.0.0.1", port)) as c:
        c.sendall(request(END_TXN, 1) + request(0, 2))
        assert read_answers(c, 2) == [1, 2]
    assert [(k, n) for _, k, n in broker.got] == [(END_TXN, 1), (0, 2)]


def test_hold_keeps_the_request_until_released_after_the_client_left(bed) -> None:  # type: ignore[no-untyped-def]
    broker, port, _, tmp = bed
    order(tmp / "control", seq=1, action="hold", api_key=END_TXN)
    wait_for(lambda: any(e["event"] == "armed" for e in events(tmp / "events.jsonl")))
    c = socket.create_connection(("127.0.0.1", port))
    c.sendall(request(24, 1))
    assert read_answers(c, 1) == [1]  # other requests flow
    c.sendall(request(END_TXN, 2) + request(24, 3))  # held, and what follows it on the connection too
    wait_for(lambda: any(e["event"] == "held" for e in events(tmp / "events.jsonl")))
    time.sleep(0.2)
    assert [n for _, _, n in broker.got] == [1]
    c.close()  # the client gives up; a new connection flows at once
    with socket.create_connection(("127.0.0.1", port)) as again:
        again.sendall(request(END_TXN, 9))
        assert read_answers(again, 1) == [9]
    order(tmp / "control", seq=2, action="release")
    wait_for(lambda: [n for _, _, n in broker.got] == [1, 9, 2, 3])
    wait_for(lambda: any(e["event"] == "late-answer" for e in events(tmp / "events.jsonl")))
    late = next(e for e in events(tmp / "events.jsonl") if e["event"] == "late-answer")
    assert late["correlation_id"] == 2 and late["error_code"] == 0 and late["to_client"] is False
    held = next(e for e in events(tmp / "events.jsonl") if e["event"] == "held")
    assert held["seq"] == 1 and held["api_key"] == END_TXN


def test_release_with_the_client_still_there_answers_it(bed) -> None:  # type: ignore[no-untyped-def]
    broker, port, _, tmp = bed
    order(tmp / "control", seq=1, action="hold", api_key=END_TXN)
    wait_for(lambda: any(e["event"] == "armed" for e in events(tmp / "events.jsonl")))
    with socket.create_connection(("127.0.0.1", port)) as c:
        c.sendall(request(END_TXN, 5))
        wait_for(lambda: any(e["event"] == "held" for e in events(tmp / "events.jsonl")))
        order(tmp / "control", seq=2, action="release")
        assert read_answers(c, 1) == [5]
    # only the next request of the kind is held: the hold is used up
    with socket.create_connection(("127.0.0.1", port)) as c:
        c.sendall(request(END_TXN, 6))
        assert read_answers(c, 1) == [6]
    assert [e["event"] for e in events(tmp / "events.jsonl")][:3] == ["armed", "held", "released"]


def test_a_stale_order_is_ignored(bed) -> None:  # type: ignore[no-untyped-def]
    _, port, proxy, tmp = bed
    proxy.command({"seq": 3, "action": "release"})
    proxy.command({"seq": 2, "action": "hold", "api_key": END_TXN})
    assert proxy.armed is None


def end_txn(correlation: int, committed: bool) -> bytes:
    body = struct.pack(">h", 3) + b"txn" + struct.pack(">qh?", 1, 0, committed)
    payload = struct.pack(">hhih", END_TXN, 1, correlation, 2) + b"id" + body  # header v1: client_id "id"
    return struct.pack(">i", len(payload)) + payload


def test_end_txn_committed_reads_the_last_field() -> None:
    assert end_txn_committed(end_txn(1, True)) is True
    assert end_txn_committed(end_txn(1, False)) is False
    assert end_txn_committed(request(0, 1)) is None


def test_release_before_sends_the_held_commit_ahead_of_the_next_abort(bed) -> None:  # type: ignore[no-untyped-def]
    broker, port, _, tmp = bed
    order(tmp / "control", seq=1, action="hold", api_key=END_TXN, committed=True)
    wait_for(lambda: any(e["event"] == "armed" for e in events(tmp / "events.jsonl")))
    c = socket.create_connection(("127.0.0.1", port))
    c.sendall(end_txn(1, False))  # an abort: not the kind held
    assert read_answers(c, 1) == [1]
    c.sendall(end_txn(2, True))
    wait_for(lambda: any(e["event"] == "held" for e in events(tmp / "events.jsonl")))
    c.close()
    order(tmp / "control", seq=2, action="release", before={"api_key": END_TXN, "committed": False})
    wait_for(lambda: any(e["event"] == "release-armed" for e in events(tmp / "events.jsonl")))
    with socket.create_connection(("127.0.0.1", port)) as again:
        again.sendall(end_txn(7, True) + request(0, 8))  # neither is an abort: the held one stays
        assert read_answers(again, 2) == [7, 8]
        assert [n for _, _, n in broker.got] == [1, 7, 8]
        again.sendall(end_txn(9, False))  # the abort: the held commit goes first, answered, then the abort
        assert read_answers(again, 1) == [9]
    assert [n for _, _, n in broker.got] == [1, 7, 8, 2, 9]
    seen = events(tmp / "events.jsonl")
    held = next(e for e in seen if e["event"] == "held")
    assert held["committed"] is True and held["correlation_id"] == 2
    assert any(e["event"] == "released" and e["trigger"] == 9 for e in seen)


def producer_config(**extra: object) -> dict[str, object]:
    return {"process": "producer-az1-0", "role": "producer", "az": "az1", "journal": "/tmp/j.jsonl", "topic": "t",
            "bootstrap": "127.0.0.1:19090", "partitions": 3, **extra}


def test_a_producer_config_carries_its_proxy_and_round_trips() -> None:
    from workloads.config import config_to_json, parse_config

    proxy = {"listen": {"19090": "198.18.0.2:9094"}, "control": "/r/proxy/p.control", "events": "/r/proxy/p.events.jsonl"}
    config = parse_config(producer_config(proxy=proxy))
    assert config.proxy == proxy  # type: ignore[union-attr]
    assert parse_config(config_to_json(config)) == config
    assert "proxy" not in config_to_json(parse_config(producer_config()))  # a plain producer's file is as it was


@pytest.mark.parametrize(("proxy", "says"), [
    ({"listen": {}, "control": "/c", "events": "/e"}, "proxy.listen"),
    ({"listen": {"x": "h:1"}, "control": "/c", "events": "/e"}, "proxy.listen"),
    ({"listen": {"1": "h:1"}, "control": "c", "events": "/e"}, "proxy.control: must be an absolute path"),
    ({"listen": {"1": "h:1"}}, "proxy: must be an object with listen, control and events"),
])
def test_a_bad_proxy_config_names_its_key(proxy: dict[str, object], says: str) -> None:
    from workloads.config import ConfigError, parse_config

    with pytest.raises(ConfigError, match=re.escape(says)):
        parse_config(producer_config(proxy=proxy))
