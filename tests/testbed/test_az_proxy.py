"""The per-AZ bootstrap: the brokers' AZ listeners, the AZ's forwarding proxy process, FaultlineCluster's refusals.

The cluster test is tests/docker/test_app_client_az.py (a real producer through az1's proxy, cut off by
isolate_az("az1")); here the pieces it rests on, without a JVM.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from faultline.testing import FaultlineCluster
from testbed.addressing import Host, make_plan
from testbed.errors import ClusterError, DistributionError, RuntimeFailure, UsageError
from testbed.kafka import az_proxy
from testbed.kafka.config import ClusterSettings, az_bootstrap, server_properties
from tests.conftest import REPO

PLAN = make_plan("198.19.0.0/24", 3)


def props_of(settings: ClusterSettings, broker: int = 1) -> dict[str, str]:
    text = server_properties(PLAN, PLAN.nodes[broker], settings, "/data")
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def test_each_broker_listens_per_az_and_advertises_that_azs_client_host() -> None:
    node = PLAN.nodes[1]  # broker 1, 198.19.0.12
    props = props_of(ClusterSettings(az_listeners=True))
    assert props["listeners"] == (f"PLAINTEXT://{node.address}:9092,AZ1://{node.address}:9101,"
                                  f"AZ2://{node.address}:9102,AZ3://{node.address}:9103")
    assert props["advertised.listeners"] == (f"PLAINTEXT://{node.address}:9092,AZ1://198.19.0.21:19111,"
                                             f"AZ2://198.19.0.22:19121,AZ3://198.19.0.23:19131")
    assert props["listener.security.protocol.map"] == "PLAINTEXT:PLAINTEXT,AZ1:PLAINTEXT,AZ2:PLAINTEXT,AZ3:PLAINTEXT"
    assert props["inter.broker.listener.name"] == "PLAINTEXT"  # the brokers keep replicating on their own listener
    plain = server_properties(PLAN, node, ClusterSettings(), "/data")
    assert "AZ1" not in plain and "inter.broker.listener.name" not in plain
    assert "az_listeners" not in ClusterSettings().to_json() and ClusterSettings(az_listeners=True).to_json()[
        "az_listeners"]


@pytest.mark.parametrize("controllers", ["separate", "combined"])
def test_kraft_brokers_get_the_az_listeners_beside_their_controller_listener(controllers: str) -> None:
    props = props_of(ClusterSettings(az_listeners=True, metadata="kraft", kraft_controllers=controllers,
                                     kafka_version="4.1.1"))
    assert props["listener.security.protocol.map"] == ("CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,AZ1:PLAINTEXT,"
                                                       "AZ2:PLAINTEXT,AZ3:PLAINTEXT")
    assert ("CONTROLLER://" in props["listeners"]) == (controllers == "combined")
    assert "CONTROLLER" not in props["advertised.listeners"]
    assert props["advertised.listeners"].endswith("AZ3://198.19.0.23:19131")


def test_an_azs_bootstrap_names_its_proxy_once_per_broker_and_the_proxy_routes_each_to_that_brokers_listener() -> None:
    assert az_bootstrap(PLAN, "az2") == "198.19.0.22:19120,198.19.0.22:19121,198.19.0.22:19122"
    cluster = SimpleNamespace(plan=PLAN, nodes=PLAN.nodes)
    assert az_proxy.routes(cluster, "az2") == {  # type: ignore[arg-type]
        ("198.19.0.22", 19120): ("198.19.0.11", 9102),
        ("198.19.0.22", 19121): ("198.19.0.12", 9102),
        ("198.19.0.22", 19122): ("198.19.0.13", 9102)}


def test_start_refuses_an_unknown_az_and_a_cluster_without_az_listeners() -> None:
    cluster = SimpleNamespace(plan=PLAN, nodes=PLAN.nodes, settings=ClusterSettings(az_listeners=True))
    with pytest.raises(UsageError, match=r"no AZ 'az7': the cluster's AZs are az1, az2, az3"):
        az_proxy.start(cluster, "az7")  # type: ignore[arg-type]
    cluster.settings = ClusterSettings()
    with pytest.raises(UsageError, match="no AZ listeners"):
        az_proxy.start(cluster, "az1")  # type: ignore[arg-type]


def test_faultline_cluster_takes_docker_or_netns_and_refuses_an_inventorys_runtime() -> None:
    with pytest.raises(UsageError, match=r"FaultlineCluster\(runtime='ssh'\): .*use runtime='docker' or 'netns'"):
        FaultlineCluster(runtime="ssh")
    with pytest.raises(UsageError, match="runtime 'vm' does not exist"):
        FaultlineCluster(runtime="vm")
    docker, netns = FaultlineCluster(), FaultlineCluster(runtime="netns", metadata="kraft", kafka_version="3.9.1")
    assert docker.settings.az_listeners and docker.settings.network == "198.19.0.0/24"
    assert netns.settings.network == "198.18.0.0/24" and netns.settings.kraft
    assert FaultlineCluster(kafka_version="4.1.1").settings.kraft  # KRaft only from 4.0
    with pytest.raises(DistributionError, match="Kafka 2.7.2 has no production KRaft"):
        FaultlineCluster(metadata="kraft")
    with pytest.raises(ClusterError, match="use FaultlineCluster as a context manager"):
        docker.bootstrap("az1")


# -- the proxy process, on loopback -------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def echo() -> Iterator[tuple[int, list[socket.socket]]]:
    """An upstream that echoes every byte back; yields its port and the connections it accepted."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            accepted.append(conn)
            threading.Thread(target=lambda c=conn: [c.sendall(d) for d in iter(lambda: c.recv(4096), b"")],
                             daemon=True).start()
    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1], accepted
    server.close()


def proxy(routes: dict[int, int]) -> subprocess.Popen[str]:
    args = [f"127.0.0.1:{listen}=127.0.0.1:{upstream}" for listen, upstream in routes.items()]
    process = subprocess.Popen([sys.executable, "-m", "testbed.kafka.az_proxy", *args], cwd=REPO,
                               stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and "carrying" in process.stdout.readline()
    return process


def test_the_proxy_carries_bytes_both_ways_per_port_and_ends_the_client_when_upstream_ends(
        echo: tuple[int, list[socket.socket]]) -> None:
    upstream, accepted = echo
    carried, dead = free_port(), free_port()
    process = proxy({carried: upstream, dead: free_port()})  # nothing listens behind `dead`
    try:
        with socket.create_connection(("127.0.0.1", carried), timeout=5) as client:
            payload = bytes(range(256)) * 1000
            client.sendall(payload)
            got = b""
            while len(got) < len(payload):
                got += client.recv(65536)
            assert got == payload
            deadline = time.monotonic() + 5
            while not accepted and time.monotonic() < deadline:
                time.sleep(0.01)
            accepted[0].shutdown(socket.SHUT_RDWR)  # the broker's side ends: so does the client's
            assert client.recv(1) == b""
        with socket.create_connection(("127.0.0.1", dead), timeout=5) as client:
            assert client.recv(1) == b"", "an upstream the proxy cannot reach ends the client's connection"
    finally:
        process.terminate()
        process.wait(5)


def test_docs_api_shows_the_docker_test_as_it_runs() -> None:
    """docs/api.md's application test is tests/docker/test_app_client_az.py's marked part, character for character."""
    test = (REPO / "tests/docker/test_app_client_az.py").read_text()
    marked = test.split("# --- docs/api.md's example, from here ---\n")[1].split("# --- to here ---")[0]
    doc = (REPO / "docs/api.md").read_text()
    assert "```python\n" + marked.rstrip() + "\n```" in doc


def test_a_proxy_that_does_not_listen_is_one_error_naming_it_and_its_logs_end(tmp_path: Path) -> None:
    from testbed.runfolder import RunFolder

    folder = RunFolder(tmp_path)
    started: list[list[str]] = []

    class DeadOnArrival:
        kind = "fake"

        def process(self, name: str) -> None:
            return None

        def spawn(self, host: Host, name: str, argv: list[str], log: Path, env: object = None) -> SimpleNamespace:
            started.append(argv)
            log.parent.mkdir(parents=True, exist_ok=True)
            log.write_text("OSError: [Errno 99] Cannot assign requested address\n")
            return SimpleNamespace(alive=lambda: False)

        def fetch(self, host: Host, path: Path) -> None:
            return None

    plan = make_plan("127.0.0.0/24", 3)  # nothing listens on 127.0.0.21's proxy ports
    cluster = SimpleNamespace(plan=plan, nodes=plan.nodes, settings=ClusterSettings(az_listeners=True),
                              runtime=DeadOnArrival(), folder=folder,
                              software=lambda host: SimpleNamespace(python=("python3",)))
    with pytest.raises(RuntimeFailure, match=r"az-proxy-az1 on az1-client does not accept on 127\.0\.0\.21:19110: "
                                             r"OSError: \[Errno 99\]"):
        az_proxy.start(cluster, "az1")  # type: ignore[arg-type]
    assert started == [["python3", "-m", "testbed.kafka.az_proxy", "127.0.0.21:19110=127.0.0.11:9101",
                        "127.0.0.21:19111=127.0.0.12:9101", "127.0.0.21:19112=127.0.0.13:9101"]]
