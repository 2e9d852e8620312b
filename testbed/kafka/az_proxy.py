"""An AZ's forwarding proxy: the application's own client reaches the brokers through it, from inside the AZ.

A test's client runs on the harness's machine, on the control address, which
no fault rule names; bootstrapped there it would never be cut off. Bootstrapped
through an AZ's proxy (`faultline.testing.FaultlineCluster.bootstrap`), every
connection it opens runs through a process on that AZ's client host, and so
through that host's fault rules, as any client of the AZ: `isolate-az az1` cuts
a client of az1's proxy off from az2 and az3 and keeps it with az1's broker.

The proxy listens on its client host's address, one port per broker
(`config.az_proxy_port`), and carries each connection, bytes unchanged, to that
broker's listener for the AZ (`config.az_listener_port`, with the cluster's
`az_listeners`). Those listeners advertise the same proxy ports, so every
Metadata and FindCoordinator answer the client gets names the proxy again: no
connection leaves the AZ's proxy after the bootstrap. The leg from the test to
the proxy is on the control plane (never cut); the leg from the proxy to a
broker is the AZ's. A broker the AZ cannot reach answers nothing: the client's
connection is held until the proxy's connect gives up (`CONNECT_TIMEOUT_S`),
and a connection whose packets are dropped later just stalls, as TCP does.

`start` runs it through the runtime (a process of the run like any other:
teardown and `clean` end it); `python -m testbed.kafka.az_proxy LISTEN=UPSTREAM ...`
is the process itself (stdlib only).
Must never: listen anywhere but its own host's address, or connect anywhere but the brokers' AZ listeners.
"""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
import time
from typing import TYPE_CHECKING

from testbed.addressing import Host
from testbed.errors import RuntimeFailure, UsageError
from testbed.kafka import config as kcfg
from testbed.processes import ProcessGroup
from testbed.runtime.base import Process

if TYPE_CHECKING:
    from testbed.kafka.cluster import KafkaCluster

CONNECT_TIMEOUT_S = 30.0  # librdkafka's own connection set-up timeout (socket.connection.setup.timeout.ms)
READY_TIMEOUT_S = 20.0
CHUNK = 65536

Address = tuple[str, int]


# -- the process ---------------------------------------------------------------------
def _pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy `source` to `sink` until either side ends or fails, then end both (Kafka never half-closes)."""
    try:
        while data := source.recv(CHUNK):
            sink.sendall(data)
    except OSError:
        pass
    for s in (source, sink):
        with contextlib.suppress(OSError):
            s.shutdown(socket.SHUT_RDWR)


def _carry(client: socket.socket, upstream: Address) -> None:
    try:
        server = socket.create_connection(upstream, timeout=CONNECT_TIMEOUT_S)
    except OSError:
        client.close()  # the broker cannot be reached from this AZ: the client sees its connection end
        return
    for s in (client, server):
        s.settimeout(None)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    back = threading.Thread(target=_pump, args=(server, client), daemon=True)
    back.start()
    _pump(client, server)
    back.join()
    for s in (client, server):
        s.close()


def _accept(listener: socket.socket, upstream: Address) -> None:
    while True:
        client, _ = listener.accept()
        threading.Thread(target=_carry, args=(client, upstream), daemon=True).start()


def serve(routes: dict[Address, Address]) -> None:
    """Listen on every key of `routes`, carry each connection to its value; runs until the process is ended."""
    listeners = []
    for listen in routes:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(listen)
        listener.listen(128)
        listeners.append(listener)
    threads = [threading.Thread(target=_accept, args=(lst, routes[listen]), daemon=True)
               for lst, listen in zip(listeners, routes, strict=True)]
    for t in threads:
        t.start()
    print(f"az_proxy: carrying {len(routes)} ports", flush=True)
    for t in threads:
        t.join()


def _address(text: str) -> Address:
    host, _, port = text.rpartition(":")
    return host, int(port)


def routes_of(args: list[str]) -> dict[Address, Address]:
    """`LISTEN_HOST:PORT=UPSTREAM_HOST:PORT` arguments as routes."""
    out = {}
    for arg in args:
        listen, _, upstream = arg.partition("=")
        out[_address(listen)] = _address(upstream)
    return out


# -- the harness's side ---------------------------------------------------------------
def routes(cluster: KafkaCluster, az: str) -> dict[Address, Address]:
    """Where `az`'s proxy listens (its client host, a port per broker) and, for each, that broker's AZ listener."""
    client = cluster.plan.client_of_az(az)
    return {(client.address, kcfg.az_proxy_port(client.index, node.broker_id)):
            (node.address, kcfg.az_listener_port(client.index)) for node in cluster.nodes}


def process_name(az: str) -> str:
    return f"az-proxy-{az}"


def start(cluster: KafkaCluster, az: str) -> Process:
    """Start `az`'s proxy on its client host (unless it runs) and return once every port accepts from here."""
    if not cluster.settings.az_listeners:
        raise UsageError("the cluster has no AZ listeners (ClusterSettings.az_listeners): no per-AZ bootstrap")
    if az not in {h.az for h in cluster.plan.clients}:
        raise UsageError(f"no AZ {az!r}: the cluster's AZs are {', '.join(h.az for h in cluster.plan.clients)}")
    group = ProcessGroup(cluster.runtime, cluster.folder.client_log)
    name = process_name(az)
    running = group.running(name)
    if running is not None:
        return running
    host = cluster.plan.client_of_az(az)
    ports = routes(cluster, az)
    argv = [*cluster.software(host).python, "-m", "testbed.kafka.az_proxy",
            *(f"{a}:{p}={ua}:{up}" for (a, p), (ua, up) in ports.items())]
    process = group.start(host, name, argv)
    deadline = time.monotonic() + READY_TIMEOUT_S
    waiting = list(ports)
    while waiting:
        try:
            socket.create_connection(waiting[0], timeout=1.0).close()
            waiting.pop(0)
        except OSError:
            if not process.alive() or time.monotonic() > deadline:
                raise RuntimeFailure(f"{name} on {host.name} does not accept on {waiting[0][0]}:{waiting[0][1]}: "
                                     f"{_log_tail(cluster, host, name)}") from None
            time.sleep(0.1)
    return process


def _log_tail(cluster: KafkaCluster, host: Host, name: str) -> str:
    """The end of the proxy's log, brought back from its host."""
    log = cluster.folder.client_log(name)
    with contextlib.suppress(RuntimeFailure, OSError):
        cluster.runtime.fetch(host, log)
    try:
        return log.read_text(errors="replace").strip()[-300:] or f"{log} is empty"
    except OSError:
        return f"no log at {log}"


if __name__ == "__main__":
    serve(routes_of(sys.argv[1:]))
