"""Probing which hosts of a running cluster can reach which, from inside their own namespaces.

Test helper, not harness code. A thread enters a host's network namespace
with setns(2) (which affects only that thread), so sockets it creates live in
that host's network: listeners on every host are plain sockets of this
process, and probes are non-blocking connects made from each host's thread,
all at once. TCP probes tell whether a connection can be set up (both
directions must pass); UDP datagrams tell each direction apart.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import selectors
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from nemesis import shapes
from testbed.addressing import AddressPlan, Host

CLONE_NEWNET = 0x40000000
NEUTRAL_PORT = 7070  # no scope names it
UDP_PORT = 7071
CLIENT_PORTS = (9092, 2181, 3888)  # node hosts have the real broker and ZooKeeper listening on these
CONTROL = "control"
_libc = ctypes.CDLL(None, use_errno=True)


def _setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


@contextlib.contextmanager
def in_netns(namespace: str) -> Iterator[None]:
    """Run the body in `namespace` (this thread only); back to the thread's own namespace after."""
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(f"/run/netns/{namespace}", os.O_RDONLY)
    try:
        _setns(target)
        try:
            yield
        finally:
            _setns(own)
    finally:
        os.close(own)
        os.close(target)


@dataclass
class Listeners:
    """TCP listeners (accepting and closing) and UDP receivers on every host, plus one on the control plane."""

    control_port: int = 0
    received: set[tuple[str, str]] = field(default_factory=set)  # (sender, receiver) of UDP datagrams
    _sockets: list[socket.socket] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        for s in self._sockets:
            s.close()


def start_listeners(plan: AddressPlan, namespace_of: dict[str, str]) -> Listeners:
    lst = Listeners()
    sel = selectors.DefaultSelector()

    def listen(address: str, port: int, udp_owner: str | None = None) -> socket.socket:
        kind = socket.SOCK_DGRAM if udp_owner else socket.SOCK_STREAM
        s = socket.socket(socket.AF_INET, kind)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((address, port))
        if not udp_owner:
            s.listen(512)
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ, udp_owner)
        lst._sockets.append(s)
        return s

    for host in plan.hosts:
        with in_netns(namespace_of[host.name]):
            listen(host.address, NEUTRAL_PORT)
            listen(host.address, UDP_PORT, udp_owner=host.name)
            if host.role == "client":
                for port in CLIENT_PORTS:
                    listen(host.address, port)
    lst.control_port = listen(plan.control, 0).getsockname()[1]

    def serve() -> None:
        while not lst._stop.is_set():
            for key, _ in sel.select(0.1):
                sock: socket.socket = key.fileobj  # type: ignore[assignment]
                try:
                    if key.data is None:
                        conn, _ = sock.accept()
                        conn.close()
                    else:
                        data = sock.recv(256).decode()
                        sender, receiver = data.split("|")[:2]
                        if receiver == key.data:
                            lst.received.add((sender, receiver))
                except (BlockingIOError, OSError, ValueError):
                    pass
        sel.close()

    lst._thread = threading.Thread(target=serve, name="probe-listeners", daemon=True)
    lst._thread.start()
    return lst


def ports_of(host: Host) -> tuple[int, ...]:
    return (NEUTRAL_PORT, *CLIENT_PORTS)


def _connect_all(
    targets: list[tuple[str, str, int, str]], timeout: float
) -> dict[tuple[str, str, int], bool]:
    """Non-blocking connects to (src, dst, port, address) all at once, from the calling thread's namespace."""
    pending: dict[socket.socket, tuple[str, str, int]] = {}
    results: dict[tuple[str, str, int], bool] = {}
    for src, dst, port, address in targets:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        err = s.connect_ex((address, port))
        if err in (0, 115):  # connected, or EINPROGRESS
            pending[s] = (src, dst, port)
        else:
            results[(src, dst, port)] = False
            s.close()
    deadline = time.monotonic() + timeout
    sel = selectors.DefaultSelector()
    for s in pending:
        sel.register(s, selectors.EVENT_WRITE)
    while pending and time.monotonic() < deadline:
        for key, _ in sel.select(max(0.0, deadline - time.monotonic())):
            s = key.fileobj  # type: ignore[assignment]
            assert isinstance(s, socket.socket)
            results[pending.pop(s)] = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0
            sel.unregister(s)
            s.close()
    for s, key3 in pending.items():
        results[key3] = False
        s.close()
    sel.close()
    return results


@dataclass
class Reachability:
    tcp: dict[tuple[str, str, int], bool]  # (src, dst, port) -> connected
    udp: set[tuple[str, str]]  # (sender, receiver) pairs whose datagram arrived


def probe(
    plan: AddressPlan, namespace_of: dict[str, str], listeners: Listeners, timeout: float = 1.0
) -> Reachability:
    """Every host to every other host on every probe port, plus control plane to and from every host."""
    listeners.received.clear()
    nonce = os.urandom(4).hex()

    def from_host(src: Host) -> dict[tuple[str, str, int], bool]:
        targets = [
            (src.name, dst.name, port, dst.address)
            for dst in plan.hosts
            if dst != src
            for port in ports_of(dst)
        ]
        targets.append((src.name, CONTROL, listeners.control_port, plan.control))
        with in_netns(namespace_of[src.name]):
            udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            for dst in plan.hosts:
                if dst != src:
                    with contextlib.suppress(OSError):
                        udp.sendto(f"{src.name}|{dst.name}|{nonce}".encode(), (dst.address, UDP_PORT))
            udp.close()
            return _connect_all(targets, timeout)

    def from_control() -> dict[tuple[str, str, int], bool]:
        return _connect_all([(CONTROL, h.name, NEUTRAL_PORT, h.address) for h in plan.hosts], timeout)

    with ThreadPoolExecutor(len(plan.hosts) + 1) as pool:
        futures = [pool.submit(from_host, h) for h in plan.hosts] + [pool.submit(from_control)]
        tcp: dict[tuple[str, str, int], bool] = {}
        for f in futures:
            tcp.update(f.result())
    time.sleep(0.2)  # let the last datagrams land
    return Reachability(tcp, set(listeners.received))


def expected(
    plan: AddressPlan, cuts: list[tuple[shapes.Grudge, shapes.Scope]], control_port: int
) -> Reachability:
    """What `probe` must find under `cuts`: a TCP probe fails when either direction is cut on its port."""
    tcp: dict[tuple[str, str, int], bool] = {}
    for src in plan.hosts:
        for dst in plan.hosts:
            if dst == src:
                continue
            for port in ports_of(dst):
                blocked = any(
                    (shapes.is_cut(g, src.name, dst.name) or shapes.is_cut(g, dst.name, src.name))
                    and shapes.scope_covers(scope, port)
                    for g, scope in cuts
                )
                tcp[(src.name, dst.name, port)] = not blocked
        tcp[(src.name, CONTROL, control_port)] = True
        tcp[(CONTROL, src.name, NEUTRAL_PORT)] = True
    udp = {
        (s.name, d.name)
        for s in plan.hosts
        for d in plan.hosts
        if s != d and not any(scope == "all" and shapes.is_cut(g, s.name, d.name) for g, scope in cuts)
    }
    return Reachability(tcp, udp)


def differences(found: Reachability, want: Reachability) -> list[str]:
    """Human-readable mismatches, empty when the network is exactly as expected."""
    out = [
        f"tcp {s}->{d}:{p}: {'open' if found.tcp.get((s, d, p)) else 'cut'}, expected "
        f"{'open' if ok else 'cut'}"
        for (s, d, p), ok in sorted(want.tcp.items())
        if found.tcp.get((s, d, p)) != ok
    ]
    out += [f"udp {s}->{d}: arrived, expected cut" for s, d in sorted(found.udp - want.udp)]
    out += [f"udp {s}->{d}: cut, expected to arrive" for s, d in sorted(want.udp - found.udp)]
    return out
