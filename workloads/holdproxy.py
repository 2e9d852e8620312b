"""A request-holding proxy between one producer process and the brokers' PROXIED listener (`hold-request`).

The producer under test bootstraps from loopback addresses that the brokers
also advertise on their second listener (`PROXIED`, testbed.kafka.config), so
every connection it opens (bootstrap, Metadata, its transaction coordinator)
goes through this proxy, which runs as threads of the producer's own process
(started with it, ended with it: nothing outside the process to clean up).
Bytes flow through unchanged; the proxy reads only the request framing from
the client (int32 size, int16 api_key, int16 api_version, int32
correlation_id) and the response framing back (int32 size, int32
correlation_id).

Control (the nemesis, through `harness.workloadset`): a JSON control file
the proxy polls, `{"seq": n, "action": "hold", "api_key": 26}` arms a hold:
the next request with that api key, on any connection, is held, and with it
everything its client sends after it on that connection; every other
connection (new ones included) flows; `"committed": true|false` narrows an EndTxn hold
to commits or aborts (the request's last field). `{"seq": n, "action": "release"}` (or,
with `"before": {"api_key": k, "committed": ...}`, once the client's next request of that
kind arrives, on any connection: the held request goes upstream first, its late answer
is awaited (at most `BEFORE_WAIT_S`), then that request follows)
forwards what was held, in order, on the same upstream connection, whether or
not the client has closed its side meanwhile (the upstream connection is kept
open until the late answer came back or `LATE_ANSWER_S` passed; an answer for
a client that is gone is read and dropped). Each step is a line of the events
file (JSON): `held`, `released` and `late-answer` (the held request's
correlation id and, for EndTxn, the error code the broker answered the late
request with: 0 means it was applied).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import struct
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

END_TXN = 26  # EndTxn's api key: its late answer's error code is noted
POLL_S = 0.005  # how often the control file is looked at
LATE_ANSWER_S = 10.0  # how long an upstream connection whose client left is kept for the late answer
MAX_HOLD_S = 600.0  # a hold nobody releases ends by itself
BEFORE_WAIT_S = 2.0  # how long a request that triggered a release waits for the held one's late answer


def frames(buf: bytearray) -> list[bytes]:
    """Cut every complete size-prefixed frame (size included) off the front of `buf`."""
    out = []
    while len(buf) >= 4:
        (size,) = struct.unpack_from(">i", buf, 0)
        if size < 0 or len(buf) < 4 + size:
            break
        out.append(bytes(buf[:4 + size]))
        del buf[:4 + size]
    return out


def request_header(frame: bytes) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id) of a request frame."""
    api_key, version, correlation = struct.unpack_from(">hhi", frame, 4)
    return api_key, version, correlation


def end_txn_committed(frame: bytes) -> bool | None:
    """Whether an EndTxn request (v0-v2: client_id, transactional_id, producer_id, producer_epoch, committed)
    commits; None for another request or a version this does not read."""
    api_key, version, _ = request_header(frame)
    if api_key != END_TXN or version > 2:
        return None
    offset = 12
    try:
        for _ in range(2):  # client_id, transactional_id: int16 length (-1: null) and bytes
            (n,) = struct.unpack_from(">h", frame, offset)
            offset += 2 + max(n, 0)
    except struct.error:
        return None
    offset += 8 + 2
    return frame[offset] != 0 if offset < len(frame) else None


def matches(frame: bytes, kind: dict[str, Any]) -> bool:
    """Whether a request frame is of `kind` ({"api_key": k, optional "committed": bool for EndTxn})."""
    if len(frame) < 12 or request_header(frame)[0] != kind["api_key"]:
        return False
    return kind.get("committed") is None or end_txn_committed(frame) == kind["committed"]


def end_txn_error(frame: bytes) -> int | None:
    """The error code of an EndTxn response frame (v0-v2: header v0, throttle_time_ms, error_code)."""
    if len(frame) < 14:
        return None
    return int(struct.unpack_from(">h", frame, 12)[0])


class _Pipe:
    """One client connection and its upstream connection."""

    def __init__(self, proxy: HoldProxy, client: socket.socket, upstream: socket.socket) -> None:
        self.proxy, self.client, self.upstream = proxy, client, upstream
        self.held: list[bytes] = []
        self.hold: dict[str, Any] | None = None  # the hold this connection carries, once it caught its request
        self.released = threading.Event()
        self.answered = threading.Event()  # the held request's late answer came back
        self.client_open = True
        self.lock = threading.Lock()

    def start(self) -> None:
        threading.Thread(target=self._requests, daemon=True).start()
        threading.Thread(target=self._answers, daemon=True).start()

    def _requests(self) -> None:
        for done in _received_frames(self.client):
            for frame in done:
                self._forward(frame)
        with self.lock:
            self.client_open = False
            holding = self.hold is not None and not self.released.is_set()
        if holding:  # the client gave up on the held request: keep the upstream side for the late one
            self.proxy.note(self.hold, "client-closed")
            self.released.wait(MAX_HOLD_S)
            self._send_held()
            self._close_after(LATE_ANSWER_S)
        elif self.hold is not None:
            self._close_after(LATE_ANSWER_S)
        else:
            self._close_after(0)

    def _forward(self, frame: bytes) -> None:
        with self.lock:
            if self.hold is not None and not self.released.is_set():
                self.held.append(frame)
                return
            if self.hold is None:
                hold = self.proxy.take_arm(frame, self)
                if hold is not None:
                    self.hold = hold
                    self.held.append(frame)
                    return
        self.proxy.before(frame)
        self._send(frame)

    def release(self) -> None:
        """Called by the proxy: forward what is held now."""
        self.released.set()
        with self.lock:
            client_open = self.client_open
        if client_open:
            self._send_held()

    def _send_held(self) -> None:
        with self.lock:
            held, self.held = self.held, []
        for frame in held:
            self._send(frame)

    def _send(self, frame: bytes) -> None:
        with contextlib.suppress(OSError):
            self.upstream.sendall(frame)

    def _answers(self) -> None:
        for done in _received_frames(self.upstream):
            with self.lock:
                client_open = self.client_open
            hold = self.hold
            for frame in done:
                if hold is not None and struct.unpack_from(">i", frame, 4)[0] == hold["correlation_id"]:
                    error = end_txn_error(frame) if hold["api_key"] == END_TXN else None
                    self.proxy.note(hold, "late-answer", error_code=error, to_client=client_open)
                    self.answered.set()
            if client_open:
                with contextlib.suppress(OSError):
                    self.client.sendall(b"".join(done))
        for s in (self.client, self.upstream):
            _close(s)

    def _close_after(self, delay_s: float) -> None:
        if delay_s:
            time.sleep(delay_s)
        _close(self.upstream)
        _close(self.client)


def _received_frames(s: socket.socket) -> Iterator[list[bytes]]:
    """The whole frames each read from `s` completes, until it closes or fails."""
    buf = bytearray()
    while True:
        try:
            data = s.recv(65536)
        except OSError:
            data = b""
        if not data:
            return
        buf += data
        yield frames(buf)


def _close(s: socket.socket) -> None:
    with contextlib.suppress(OSError):
        s.shutdown(socket.SHUT_RDWR)
    s.close()


class HoldProxy:
    """Listens on `listen` (loopback port -> upstream "host:port"), forwards, holds on command."""

    def __init__(self, listen: Mapping[int, str], control: Path, events: Path, host: str = "127.0.0.1") -> None:
        self.listen, self.control, self.events, self.host = dict(listen), control, events, host
        self.armed: dict[str, Any] | None = None
        self.holding: list[tuple[dict[str, Any], _Pipe]] = []
        self.lock = threading.Lock()
        self.seen_seq = -1
        self.release_before: tuple[int, dict[str, Any]] | None = None  # (order, kind): release before such a request
        self.sockets: list[socket.socket] = []

    def start(self) -> None:
        for port, upstream in self.listen.items():
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((self.host, port))
            s.listen(64)
            self.sockets.append(s)
            threading.Thread(target=self._accept, args=(s, upstream), daemon=True).start()
        threading.Thread(target=self._watch, daemon=True).start()

    def _accept(self, listener: socket.socket, upstream: str) -> None:
        host, port = upstream.rsplit(":", 1)
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                up = socket.create_connection((host, int(port)), timeout=10)
                up.settimeout(None)
            except OSError:
                _close(client)  # the broker is unreachable: the client sees a refused connection, as it would
                continue
            for s in (client, up):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            _Pipe(self, client, up).start()

    def take_arm(self, frame: bytes, pipe: _Pipe) -> dict[str, Any] | None:
        """The armed hold, if `frame` is the request it waits for (then it is no longer armed)."""
        with self.lock:
            if self.armed is None or not matches(frame, self.armed):
                return None
            _, version, correlation = request_header(frame)
            hold = {**self.armed, "api_version": version, "correlation_id": correlation,
                    "committed": end_txn_committed(frame)}
            self.armed = None
            self.holding.append((hold, pipe))
        self.note(hold, "held")
        return hold

    def note(self, hold: dict[str, Any] | None, event: str, **detail: Any) -> None:
        line = {"event": event, "t": time.time_ns(), **(hold or {}), **detail}
        with self.lock, self.events.open("a") as f:
            f.write(json.dumps(line, sort_keys=True) + "\n")

    def _watch(self) -> None:
        stamp = None
        while True:
            time.sleep(POLL_S)
            try:
                st = os.stat(self.control)
            except FileNotFoundError:
                continue
            if (st.st_ino, st.st_mtime_ns, st.st_size) == stamp:
                continue
            stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
            try:
                order = json.loads(self.control.read_text())
            except (OSError, ValueError):
                stamp = None  # half written: read again
                continue
            self.command(order)

    def command(self, order: dict[str, Any]) -> None:
        seq = int(order.get("seq", -1))
        if seq <= self.seen_seq:
            return
        self.seen_seq = seq
        if order.get("action") == "hold":
            kind = {"api_key": int(order["api_key"]), "committed": order.get("committed")}
            with self.lock:
                self.armed = {"seq": seq, **kind}
            self.note(None, "armed", seq=seq, **kind)
        elif order.get("action") == "release" and order.get("before") is not None:
            before = {"api_key": int(order["before"]["api_key"]), "committed": order["before"].get("committed")}
            with self.lock:
                self.armed = None
                self.release_before = (seq, before)
            self.note(None, "release-armed", seq=seq, before=before)
        elif order.get("action") == "release":
            self._release(seq)

    def before(self, frame: bytes) -> None:
        """A request is about to go upstream: if a release waits for one of its kind, the held requests go first,
        and their late answers are awaited."""
        waiting = self.release_before
        if waiting is None or not matches(frame, waiting[1]):
            return
        with self.lock:
            waiting, self.release_before = self.release_before, None
            pipes = [pipe for _, pipe in self.holding]
        if waiting is not None:
            self._release(waiting[0], trigger=request_header(frame)[2])
            for pipe in pipes:
                pipe.answered.wait(BEFORE_WAIT_S)

    def _release(self, seq: int, **detail: Any) -> None:
        with self.lock:
            holding, self.holding = self.holding, []
            self.armed = None
        for hold, pipe in holding:
            self.note(hold, "released", release_seq=seq, **detail)  # first: its late answer cannot be noted before it
            pipe.release()
        if not holding:
            self.note(None, "released", seq=seq, release_seq=seq, nothing_held=True)
