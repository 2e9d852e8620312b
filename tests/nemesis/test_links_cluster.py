"""On real network namespaces: degraded links deliver what they say, measured, and leave nothing behind.

A bare netns runtime (no Kafka: the links are what is measured) with three
AZs. Through the nemesis's `Firewall`, as a run applies them: 50 ms each way
gives TCP round trips of 100 ms +- 15 ms; a throttled direction carries its
bandwidth within 20%; 30% loss drops about 30% of datagrams. The control plane
keeps its speed throughout, and healing removes every rule, qdisc and delay
process. These are assertions about what the kernel delivers, not timings of
our code.
"""

from __future__ import annotations

import os
import socket
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from nemesis import links
from nemesis.firewall import Firewall
from nemesis.links import Degradation
from testbed.addressing import make_plan
from testbed.runtime.base import new_prefix
from testbed.runtime.netns import NetnsRuntime, namespace_pids
from testbed.state import RunState
from tests.nemesis.nemesis_probe import in_netns

pytestmark = pytest.mark.cluster

NETWORK = os.environ.get("FAULTLINE_LINKS_TEST_NETWORK", "198.18.5.0/24")
ECHO_PORT, BULK_PORT, UDP_PORT, CONTROL_PORT = 7300, 7301, 7302, 7303
NONE = Degradation()


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NetnsRuntime]:
    if os.geteuid() != 0:
        pytest.fail("the link tests need root (network namespaces, tc, iptables)")
    plan = make_plan(NETWORK, 3)
    NetnsRuntime.preflight(plan)
    prefix = new_prefix()
    run_dir: Path = tmp_path_factory.mktemp("links")
    rt = NetnsRuntime(prefix, plan, RunState.create(run_dir, prefix, runtime="netns"))
    try:
        rt.create()
        yield rt
    finally:
        rt.destroy()


@pytest.fixture
def firewall(runtime: NetnsRuntime) -> Iterator[Firewall]:
    fw = Firewall(runtime)
    try:
        yield fw
    finally:
        fw.clear()
        assert runtime._links._delays == {}  # no delay process outlives a heal


def ns(runtime: NetnsRuntime, host: str) -> str:
    return runtime.namespace(runtime.plan.host(host))


def listen(namespace: str | None, port: int, kind: int = socket.SOCK_STREAM) -> socket.socket:
    def make() -> socket.socket:
        s = socket.socket(socket.AF_INET, kind)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("0.0.0.0", port))
        if kind == socket.SOCK_STREAM:
            s.listen(8)
        return s
    if namespace is None:
        return make()
    with in_netns(namespace):
        return make()


def connect(namespace: str, address: str, port: int, kind: int = socket.SOCK_STREAM) -> socket.socket:
    with in_netns(namespace):
        s = socket.socket(socket.AF_INET, kind)
        s.settimeout(10)
        s.connect((address, port))
        return s


def serve(server: socket.socket, handle: Callable[[socket.socket], None]) -> threading.Thread:
    def run() -> None:
        with server:
            conn, _ = server.accept()
            with conn:
                handle(conn)
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def echo(conn: socket.socket) -> None:
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    while data := conn.recv(4096):
        conn.sendall(data)


def round_trips(runtime: NetnsRuntime, src: str, dst: str, port: int, count: int = 20) -> list[float]:
    """Milliseconds of each of `count` 64-byte TCP echoes from `src` to `dst` (an echo server there)."""
    thread = serve(listen(ns(runtime, dst), port), echo)
    client = connect(ns(runtime, src), runtime.plan.host(dst).address, port)
    client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    times = []
    with client:
        for _ in range(count):
            started = time.perf_counter()
            client.sendall(b"x" * 64)
            got = b""
            while len(got) < 64:
                got += client.recv(64 - len(got))
            times.append((time.perf_counter() - started) * 1000)
    thread.join(5)
    return times


def control_connect_ms(runtime: NetnsRuntime, host: str) -> float:
    """How long the control plane takes to open a TCP connection to `host`."""
    server = listen(ns(runtime, host), CONTROL_PORT)
    with server:
        started = time.perf_counter()
        with socket.create_connection((runtime.plan.host(host).address, CONTROL_PORT), timeout=5):
            return (time.perf_counter() - started) * 1000


def test_50_ms_each_way_gives_100_ms_tcp_round_trips_and_the_control_plane_keeps_its_speed(
        runtime: NetnsRuntime, firewall: Firewall) -> None:
    slow = Degradation(delay_ms=50)
    firewall.add_links("slow", links.degrade_hosts(["az1-node"], ["az2-node"], slow, slow))
    rtts = round_trips(runtime, "az1-node", "az2-node", ECHO_PORT)
    assert 85 <= statistics.median(rtts) <= 115, rtts
    assert all(70 <= t <= 160 for t in rtts), rtts
    assert control_connect_ms(runtime, "az1-node") < 20 and control_connect_ms(runtime, "az2-node") < 20
    assert statistics.median(round_trips(runtime, "az1-node", "az3-node", ECHO_PORT)) < 20  # other links untouched
    firewall.remove("slow")
    assert statistics.median(round_trips(runtime, "az1-node", "az2-node", ECHO_PORT)) < 20
    assert not any("delayq" in _command(pid) for pid in namespace_pids(ns(runtime, "az2-node")))


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def bulk_kbit(runtime: NetnsRuntime, src: str, dst: str, seconds: float = 3.0) -> float:
    """The rate a bulk TCP transfer from `src` to `dst` reaches, measured at the receiver after a warm-up."""
    received: list[tuple[float, int]] = []

    def sink(conn: socket.socket) -> None:
        total = 0
        while data := conn.recv(1 << 16):
            total += len(data)
            received.append((time.monotonic(), total))

    thread = serve(listen(ns(runtime, dst), BULK_PORT), sink)
    client = connect(ns(runtime, src), runtime.plan.host(dst).address, BULK_PORT)
    chunk = b"y" * 65536
    deadline = time.monotonic() + seconds
    with client:
        while time.monotonic() < deadline:
            client.sendall(chunk)
    thread.join(10)
    start = next(i for i, (t, _) in enumerate(received) if t >= received[0][0] + 0.5)  # past the first burst
    (t0, b0), (t1, b1) = received[start], received[-1]
    return (b1 - b0) * 8 / 1000 / (t1 - t0)


def test_a_throttled_direction_carries_its_bandwidth_within_20_percent(
        runtime: NetnsRuntime, firewall: Firewall) -> None:
    firewall.add_links("thin", links.degrade_hosts(["az1-node"], ["az2-node"], Degradation(rate_kbit=8000), NONE))
    measured = bulk_kbit(runtime, "az1-node", "az2-node")
    assert 0.8 * 8000 <= measured <= 1.2 * 8000, measured
    assert bulk_kbit(runtime, "az2-node", "az1-node", 1.0) > 3 * 8000  # the other direction is not throttled
    firewall.remove("thin")
    assert bulk_kbit(runtime, "az1-node", "az2-node", 1.0) > 3 * 8000


def test_30_percent_loss_drops_about_30_percent_one_way(runtime: NetnsRuntime, firewall: Firewall) -> None:
    firewall.add_links("lossy", links.degrade_hosts(["az1-client"], ["az3-node"], Degradation(loss=0.3), NONE))
    assert drop_rate(runtime, "az1-client", "az3-node") == pytest.approx(0.3, abs=0.04)
    assert drop_rate(runtime, "az3-node", "az1-client") < 0.01
    firewall.remove("lossy")
    assert drop_rate(runtime, "az1-client", "az3-node") < 0.01


def drop_rate(runtime: NetnsRuntime, src: str, dst: str, count: int = 3000) -> float:
    """The share of `count` UDP datagrams from `src` that `dst` did not receive."""
    receiver = listen(ns(runtime, dst), UDP_PORT, socket.SOCK_DGRAM)
    receiver.settimeout(0.5)
    sender = connect(ns(runtime, src), runtime.plan.host(dst).address, UDP_PORT, socket.SOCK_DGRAM)
    got: set[int] = set()
    with receiver, sender:
        for i in range(count):
            sender.send(i.to_bytes(4, "big"))
            if i % 100 == 99:
                _drain(receiver, got)
        time.sleep(0.1)
        _drain(receiver, got)
    return 1 - len(got) / count


def _drain(receiver: socket.socket, got: set[int]) -> None:
    receiver.setblocking(False)
    try:
        while True:
            got.add(int.from_bytes(receiver.recv(16), "big"))
    except BlockingIOError:
        pass
    finally:
        receiver.settimeout(0.5)
