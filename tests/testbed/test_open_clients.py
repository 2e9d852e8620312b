"""FaultlineCluster's guard against a client left open: the connections it finds, and the network it then keeps.

A Kafka client still open after the block reconnects to the gone hosts' addresses through the machine's default
route. So the block's end lists this process's connections to the cluster's network (real sockets on loopback
here) and, if there are any, has the runtime keep the network when it removes the hosts, and raises (warns when
the block raised). The runtime and the nemesis are fakes: no cluster, no JVM.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from faultline import open_clients, testing
from faultline.open_clients import connections_to
from faultline.testing import FaultlineCluster
from testbed.errors import ClusterError

# A loopback address of these tests' own: other loopback connections of the test process (Spark's py4j gateway on
# 127.0.0.1, say) stay outside the network the fake cluster is given, whatever ran before in the same process.
HERE = "127.0.0.37"


@pytest.fixture
def server() -> Iterator[socket.socket]:
    with socket.create_server((HERE, 0)) as listening:
        yield listening


def connect(server: socket.socket) -> socket.socket:
    """A connection to ``server`` from HERE, so both of its ends lie in HERE/32."""
    return socket.create_connection(server.getsockname(), source_address=(HERE, 0))


def test_a_connection_to_the_network_is_found_until_it_is_closed(server: socket.socket) -> None:
    port = server.getsockname()[1]
    assert f"{HERE}:{port}" not in connections_to(f"{HERE}/32")  # a listening socket has no peer
    client = connect(server)
    accepted, _ = server.accept()
    mine = client.getsockname()[1]
    assert set(connections_to(f"{HERE}/32")) == {f"{HERE}:{port}", f"{HERE}:{mine}"}  # both ends are ours
    assert connections_to("198.18.0.0/24") == []  # peers outside the network are not
    client.close()
    accepted.close()
    assert connections_to(f"{HERE}/32") == []


def test_only_this_processs_sockets_count_and_the_address_is_read_as_the_kernel_writes_it(tmp_path: Path) -> None:
    (tmp_path / "fd").mkdir()
    (tmp_path / "net").mkdir()
    (tmp_path / "fd" / "7").symlink_to("socket:[5001]")
    (tmp_path / "fd" / "8").symlink_to("/dev/null")
    peer = f"{int.from_bytes(socket.inet_aton('198.18.0.21'), 'little' if socket.htonl(1) != 1 else 'big'):08X}"
    header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode"
    rows = [f"   0: 0100007F:9C40 {peer}:4A9B 01 00000000:00000000 00:00000000 00000000 0 0 5001",  # ours
            f"   1: 0100007F:9C41 {peer}:4A9C 02 00000000:00000000 00:00000000 00000000 0 0 5002",  # another's
            "   2: 00000000:4A9B 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 5001"]  # listening
    (tmp_path / "net" / "tcp").write_text("\n".join([header, *rows]) + "\n")
    assert connections_to("198.18.0.0/24", proc=tmp_path) == ["198.18.0.21:19099"]
    assert connections_to("198.19.0.0/24", proc=tmp_path) == []


class FakeRuntime:
    """Records what the block's end asks of it, in order."""

    def __init__(self, events: list[str]) -> None:
        self.events = events

    def set_firewall(self, host: Any, rules: str) -> None: ...

    def clear_firewall(self, host: Any) -> None: ...

    def keep_network(self) -> None:
        self.events.append("keep_network")


class FakeNemesis:
    def __init__(self, cluster: Any, runtime: FakeRuntime, journal: Path, seed: int) -> None:
        self.runtime = runtime

    def heal_all(self) -> None:
        self.runtime.events.append("heal")

    def close(self) -> None:
        self.runtime.events.append("nemesis closed")


@pytest.fixture
def events(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """FaultlineCluster over a fake runtime: `events` says what happened; its network is loopback's."""
    happened: list[str] = []

    @contextlib.contextmanager
    def provision(settings: Any, run_dir: Path) -> Iterator[tuple[Any, FakeRuntime]]:
        runtime = FakeRuntime(happened)
        yield SimpleNamespace(folder=SimpleNamespace(nemesis_journal=tmp_path / "nemesis.jsonl")), runtime
        happened.append("hosts removed")  # the runtime's destroy

    monkeypatch.setattr(testing, "provision", provision)
    monkeypatch.setattr(testing, "Nemesis", FakeNemesis)
    monkeypatch.setattr(testing, "connections_to", lambda network: open_clients.connections_to(f"{HERE}/32"))
    return happened


def test_a_block_that_closed_its_clients_removes_everything(events: list[str], server: socket.socket,
                                                            tmp_path: Path) -> None:
    with FaultlineCluster(run_dir=tmp_path, runtime="netns") as c:
        client = connect(server)
        server.accept()[0].close()
        client.close()
    assert events == ["heal", "nemesis closed", "hosts removed"] and c.left_open == []


def test_a_client_left_open_keeps_the_network_and_fails_the_block(events: list[str], server: socket.socket,
                                                                  tmp_path: Path) -> None:
    port = server.getsockname()[1]
    with pytest.raises(ClusterError, match=r"FaultlineCluster: 2 connection\(s\) of this process to the cluster's "
                                           r"network 198\.18\.0\.0/24 still open .*close it inside the block\. "
                                           r"The hosts are gone; the network stays"), \
            FaultlineCluster(run_dir=tmp_path, runtime="netns") as c:
        client = connect(server)
        accepted, _ = server.accept()
    # Looked for once the nemesis was closed, the network kept before the hosts went.
    assert events == ["heal", "nemesis closed", "keep_network", "hosts removed"]
    assert f"{HERE}:{port}" in c.left_open
    client.close()
    accepted.close()


def test_a_block_that_raised_keeps_its_error_and_warns(events: list[str], server: socket.socket,
                                                       tmp_path: Path) -> None:
    with pytest.warns(RuntimeWarning, match="still open when the block ended"), pytest.raises(AssertionError), \
            FaultlineCluster(run_dir=tmp_path, runtime="netns"):
        client = connect(server)
        accepted, _ = server.accept()
        raise AssertionError("the test's own failure")
    assert "keep_network" in events
    client.close()
    accepted.close()
