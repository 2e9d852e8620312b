"""Link latency without netem: a process that holds the packets a host's firewall queues, then lets them go.

The host's fault rules send the packets of a slowed link to an NFQUEUE queue
(`-j NFQUEUE --queue-num N --queue-bypass`, written by `nemesis.links`); this
process binds those queues in the host's network namespace, hears each
packet's id (metadata only: the packet stays in the kernel), and accepts it
once its delay has passed. Delays within one queue keep arrival order (a
packet never overtakes an earlier one: jitter stretches gaps, it does not
reorder), so one batch verdict ("every id up to this one") releases each due
prefix. A batch verdict also releases any packet whose announcement was lost
(a full socket buffer), so none is held for ever.

Run as `python -m testbed.runtime.delayq QUEUE:DELAY_MS:JITTER_MS ...` inside
the host (netns: `ip netns exec`). It prints `ready` once every queue is
bound, and on SIGTERM, SIGINT or end of stdin accepts every packet it holds
and exits. While no process holds a queue, `--queue-bypass` lets its packets
through undelayed. Must never: drop a packet (the only verdict it gives is
accept), or bind a queue it was not given.
"""

from __future__ import annotations

import argparse
import heapq
import os
import random
import select
import signal
import socket
import struct
import sys
import time
from collections import deque
from dataclasses import dataclass, field

NETLINK_NETFILTER = 12
NETLINK_NO_ENOBUFS = 5
SOL_NETLINK = 270
NFNL_SUBSYS_QUEUE = 3
NFQNL_MSG_PACKET, NFQNL_MSG_VERDICT, NFQNL_MSG_CONFIG, NFQNL_MSG_VERDICT_BATCH = 0, 1, 2, 3
NFQA_PACKET_HDR, NFQA_VERDICT_HDR = 1, 2
NFQA_CFG_CMD, NFQA_CFG_PARAMS, NFQA_CFG_QUEUE_MAXLEN, NFQA_CFG_MASK, NFQA_CFG_FLAGS = 1, 2, 3, 4, 5
NFQNL_CFG_CMD_BIND, NFQNL_CFG_CMD_UNBIND = 1, 2
NFQNL_COPY_META = 1
NFQA_CFG_F_GSO = 4  # hand us GSO packets whole: we never look inside, so nothing needs segmenting
NLM_F_REQUEST, NLM_F_ACK = 1, 4
NLMSG_ERROR = 2
NF_ACCEPT = 1
QUEUE_MAXLEN = 65536  # packets a queue may hold (the kernel's default, 1024, is 200 ms of a busy link)
RCVBUF = 8 << 20


@dataclass
class Queue:
    """One bound queue: its delay, and the packets it holds as (release time, packet id), oldest first."""

    number: int
    delay_s: float
    jitter_s: float
    held: deque[tuple[float, int]] = field(default_factory=deque)
    last_release: float = 0.0

    def hold(self, packet_id: int, now: float, rng: random.Random) -> None:
        wait = self.delay_s + (rng.uniform(-self.jitter_s, self.jitter_s) if self.jitter_s else 0.0)
        self.last_release = max(now + max(wait, 0.0), self.last_release)
        self.held.append((self.last_release, packet_id))

    def due(self, now: float) -> int | None:
        """Forget every packet due by `now`; the last one's id (None if none is due)."""
        last = None
        while self.held and self.held[0][0] <= now:
            last = self.held.popleft()[1]
        return last


def parse_queue(text: str) -> Queue:
    """`N:DELAY_MS:JITTER_MS` -> Queue; ValueError naming the text."""
    try:
        number, delay, jitter = text.split(":")
        queue = Queue(int(number), float(delay) / 1000, float(jitter) / 1000)
    except ValueError as exc:
        raise ValueError(f"{text!r} is not QUEUE:DELAY_MS:JITTER_MS") from exc
    if not 0 <= queue.number <= 65535 or queue.delay_s < 0 or queue.jitter_s < 0:
        raise ValueError(f"{text!r}: queue 0..65535, delay and jitter >= 0")
    return queue


def _attr(kind: int, payload: bytes) -> bytes:
    header = struct.pack("=HH", 4 + len(payload), kind)
    return header + payload + b"\0" * (-len(payload) % 4)


def _message(msg: int, queue: int, attrs: bytes, flags: int = NLM_F_REQUEST, family: int = socket.AF_INET) -> bytes:
    body = struct.pack("=BBH", family, 0, socket.htons(queue)) + attrs
    return struct.pack("=IHHII", 16 + len(body), (NFNL_SUBSYS_QUEUE << 8) | msg, flags, 0, 0) + body


def _attributes(data: bytes, start: int, end: int) -> dict[int, bytes]:
    found: dict[int, bytes] = {}
    while start + 4 <= end:
        length, kind = struct.unpack_from("=HH", data, start)
        if length < 4:
            break
        found[kind & 0x7FFF] = data[start + 4:start + length]
        start += (length + 3) & ~3
    return found


class DelayQueues:
    """The netlink side: bind queues, read packet ids, give batch verdicts."""

    def __init__(self, queues: list[Queue], seed: int | None = None) -> None:
        self.queues = {q.number: q for q in queues}
        self.rng = random.Random(seed)
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, 33, RCVBUF)  # SO_RCVBUFFORCE (root)
        except OSError:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
        self.sock.setsockopt(SOL_NETLINK, NETLINK_NO_ENOBUFS, 1)
        self.sock.bind((0, 0))
        for q in queues:
            self._configure(q.number, _attr(NFQA_CFG_CMD, struct.pack("=BxH", NFQNL_CFG_CMD_BIND, 0)))
            self._configure(q.number, _attr(NFQA_CFG_PARAMS, struct.pack(">IB", 0, NFQNL_COPY_META))
                            + _attr(NFQA_CFG_QUEUE_MAXLEN, struct.pack(">I", QUEUE_MAXLEN))
                            + _attr(NFQA_CFG_MASK, struct.pack(">I", NFQA_CFG_F_GSO))
                            + _attr(NFQA_CFG_FLAGS, struct.pack(">I", NFQA_CFG_F_GSO)))

    def _configure(self, queue: int, attrs: bytes) -> None:
        """Send one config message and wait for the kernel's acknowledgement; OSError with its errno."""
        self.sock.send(_message(NFQNL_MSG_CONFIG, queue, attrs, NLM_F_REQUEST | NLM_F_ACK, socket.AF_UNSPEC))
        while True:
            data = self.sock.recv(1 << 16)
            off = 0
            while off + 16 <= len(data):
                length, kind = struct.unpack_from("=IH", data, off)
                if kind == NLMSG_ERROR:
                    (err,) = struct.unpack_from("=i", data, off + 16)
                    if err:
                        raise OSError(-err, f"binding NFQUEUE {queue}: {os.strerror(-err)}")
                    return
                off += (length + 3) & ~3

    def read(self) -> None:
        """Hold every packet announced so far (never blocks)."""
        now = time.monotonic()
        while True:
            try:
                data = self.sock.recv(1 << 20, socket.MSG_DONTWAIT)
            except BlockingIOError:
                return
            off = 0
            while off + 20 <= len(data):
                length, kind = struct.unpack_from("=IH", data, off)
                if length < 16:
                    break
                if kind == (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET:
                    queue = socket.ntohs(struct.unpack_from("=H", data, off + 18)[0])
                    header = _attributes(data, off + 20, off + length).get(NFQA_PACKET_HDR)
                    if header is not None and queue in self.queues:
                        self.queues[queue].hold(struct.unpack_from(">I", header)[0], now, self.rng)
                off += (length + 3) & ~3

    def release_due(self, now: float) -> None:
        for q in self.queues.values():
            last = q.due(now)
            if last is not None:
                self._accept_up_to(q.number, last)

    def release_all(self) -> None:
        self.release_due(float("inf"))

    def _accept_up_to(self, queue: int, packet_id: int) -> None:
        self.sock.send(_message(NFQNL_MSG_VERDICT_BATCH, queue,
                                _attr(NFQA_VERDICT_HDR, struct.pack(">II", NF_ACCEPT, packet_id))))

    def next_release(self) -> float | None:
        heads = [q.held[0][0] for q in self.queues.values() if q.held]
        return heapq.nsmallest(1, heads)[0] if heads else None


def serve(delays: DelayQueues, stop: list[bool]) -> None:
    """Hold and release until `stop[0]` is set or stdin ends; then release everything."""
    poller = select.poll()
    poller.register(delays.sock, select.POLLIN)
    poller.register(sys.stdin, select.POLLIN | select.POLLHUP)
    while not stop[0]:
        due = delays.next_release()
        timeout_ms = 200.0 if due is None else max(0.0, (due - time.monotonic()) * 1000)
        for fd, _ in poller.poll(timeout_ms):
            if fd == delays.sock.fileno():
                delays.read()
            elif not os.read(sys.stdin.fileno(), 4096):
                stop[0] = True
        delays.release_due(time.monotonic())
    delays.release_all()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testbed.runtime.delayq", description=__doc__.splitlines()[0])
    parser.add_argument("queues", nargs="+", help="QUEUE:DELAY_MS:JITTER_MS")
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args(argv)
    try:
        queues = [parse_queue(q) for q in args.queues]
    except ValueError as exc:
        print(f"delayq: {exc}", file=sys.stderr)
        return 3
    stop = [False]

    def ask_stop(signum: int, frame: object) -> None:
        stop[0] = True

    signal.signal(signal.SIGTERM, ask_stop)
    signal.signal(signal.SIGINT, ask_stop)
    try:
        delays = DelayQueues(queues, args.seed)
    except OSError as exc:
        print(f"delayq: {exc}", file=sys.stderr)
        return 3
    print("ready", flush=True)
    serve(delays, stop)
    return 0


if __name__ == "__main__":
    sys.exit(main())
