"""The project's own dockerd and images (testbed.runtime.dockerd, compose/): needs root and `make docker-images`.

One module-wide daemon serves the image tests; the last tests stop it, then
kill another one with SIGKILL and clean up after it. Before and after, the
machine's firewall, forwarding sysctls and routes must be exactly as they were.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import docker
import docker.errors
import pytest

from testbed.dist.kafka import DEFAULT_VERSION
from testbed.errors import RuntimeFailure
from testbed.runtime.dockerd import (
    DATA_ROOT,
    DockerdPaths,
    OwnDockerd,
    create_internal_network,
    docker_client,
    find_leftover_dockerds,
    start_dockerd,
    stop_leftover_dockerds,
)
from tests.conftest import REPO, faultline

pytestmark = pytest.mark.docker

KAFKA_IMAGE = f"faultline/kafka:{DEFAULT_VERSION}"
CLIENT_IMAGE = "faultline/client:latest"
SUBNET = "198.19.0.0/28"
OTHER_RUNS = re.compile(r"fl[0-9a-f]{6}\S*")  # another run's links (a netns cluster may come and go meanwhile)


def host_network_state(prefix: str) -> dict[str, str]:
    """What an own dockerd must leave as it found it, from the machine's side."""

    def run(*argv: str) -> str:
        return subprocess.run(argv, capture_output=True, text=True, check=True).stdout

    def rules(text: str) -> str:  # without the timestamp comments and the chains' packet counters
        return "\n".join(re.sub(r"\[\d+:\d+\]", "[-]", line) for line in text.splitlines() if not line.startswith("#"))

    def routes(text: str) -> str:
        mine = [line for line in text.splitlines() if prefix in line]
        others = sorted(line for line in text.splitlines() if not OTHER_RUNS.search(line))
        return "\n".join(others + [f"OURS: {line}" for line in mine])

    state = {"iptables-save": rules(run("iptables-save")), "ip6tables-save": rules(run("ip6tables-save")),
             "routes": routes(run("ip", "route", "show", "table", "all")),
             "routes6": routes(run("ip", "-6", "route", "show", "table", "all")),
             "links": "\n".join(sorted(line for line in run("ip", "-o", "link", "show").splitlines()
                                       if prefix in line))}
    for sysctl in ("net/ipv4/ip_forward", "net/ipv6/conf/all/forwarding", "net/bridge/bridge-nf-call-iptables",
                   "net/bridge/bridge-nf-call-ip6tables"):
        path = Path("/proc/sys") / sysctl
        state[sysctl] = path.read_text().strip() if path.exists() else "absent"
    return state


@pytest.fixture(scope="module")
def prefix() -> str:
    return "fl" + secrets.token_hex(3)


@pytest.fixture(scope="module")
def before(prefix: str) -> dict[str, str]:
    if os.geteuid() != 0:
        pytest.fail("docker tests need root (they start a dockerd)")
    return host_network_state(prefix)


@pytest.fixture(scope="module")
def daemon(prefix: str, before: dict[str, str]) -> Iterator[OwnDockerd]:
    own = start_dockerd(prefix)
    try:
        yield own
    finally:
        own.stop()


@pytest.fixture(scope="module")
def client(daemon: OwnDockerd) -> Iterator[docker.DockerClient]:
    with contextlib.closing(daemon.client()) as c:
        for image in (KAFKA_IMAGE, CLIENT_IMAGE):
            try:
                c.images.get(image)
            except docker.errors.ImageNotFound:
                pytest.fail(f"{image} is not in {daemon.data_root}: run 'make docker-images' first")
        yield c


@pytest.fixture(scope="module")
def network(daemon: OwnDockerd, client: docker.DockerClient, prefix: str) -> Iterator[object]:
    net = create_internal_network(client, f"{prefix}-net", SUBNET)
    yield net  # pytest runs the rest whatever the tests did
    if daemon.alive():  # else stopped by test_stop_leaves_nothing, which removed what carries the prefix
        for container in client.containers.list(all=True, filters={"network": net.name}):
            container.remove(force=True)
        net.remove()


def connect_outcome(host: str, port: int = 53) -> str:
    """How a TCP connect to `host` ends; run here (the machine's view) and, as source, in a container."""
    import socket

    try:
        socket.create_connection((host, port), 2).close()
        return "connected"
    except ConnectionRefusedError:
        return "refused"
    except TimeoutError:
        return "timeout"
    except OSError:
        return "unreachable"


def exec_ok(container: object, cmd: str) -> str:
    code, out = container.exec_run(["/bin/sh", "-c", cmd])  # type: ignore[attr-defined]
    text = out.decode(errors="replace")
    assert code == 0, f"{cmd!r} exited {code}: {text[-1500:]}"
    return text


def test_daemon_runs_with_its_own_paths_and_no_host_networking(daemon: OwnDockerd, prefix: str) -> None:
    paths = DockerdPaths(prefix)
    argv = Path(f"/proc/{daemon.pid}/cmdline").read_bytes().decode().split("\0")
    assert Path(argv[0]).name == "dockerd" and argv[0] in ("/usr/sbin/dockerd", "/usr/bin/dockerd")
    for flag in ("--bridge=none", "--iptables=false", "--ip-forward=false", "--ip-masq=false",
                 f"--host=unix://{paths.socket}", f"--pidfile={paths.pidfile}", f"--exec-root={paths.exec_root}",
                 f"--data-root={DATA_ROOT}", f"--config-file={paths.config}"):
        assert flag in argv, f"{flag} missing from {argv}"
    assert daemon.host == f"unix:///run/faultline/dockerd-{prefix}/docker.sock"
    assert paths.socket.is_socket()
    assert int(paths.pidfile.read_text()) == daemon.pid
    assert [(d.prefix, d.pid, d.data_root) for d in find_leftover_dockerds(prefix)] == [(prefix, daemon.pid, DATA_ROOT)]
    with contextlib.closing(docker_client(daemon.host)) as c:
        info = c.info()
        assert info["DockerRootDir"] == str(DATA_ROOT)
        assert sorted(n.name for n in c.networks.list()) == ["host", "none"]  # no docker0 / bridge network
    assert daemon.started_s < 30


def test_refusals(daemon: OwnDockerd) -> None:
    with pytest.raises(RuntimeFailure, match="in use by faultline dockerd"):
        start_dockerd("fl" + secrets.token_hex(3))  # the shared data root is taken
    with pytest.raises(RuntimeFailure, match="already runs"):
        start_dockerd(daemon.prefix)
    with pytest.raises(RuntimeFailure, match="bad dockerd prefix"):
        start_dockerd("docker0")
    with pytest.raises(RuntimeFailure, match="no Docker daemon answers at unix:///nonexistent.sock"):
        docker_client("unix:///nonexistent.sock")
    with contextlib.closing(docker_client(daemon.host)) as c:
        for name, subnet in ((f"{daemon.prefix}-net2", "10.0.0.0/24"), ("mynet", "198.19.0.0/28"),
                             (f"{daemon.prefix}-much-too-long", "198.19.0.0/28")):
            with pytest.raises(RuntimeFailure):
                create_internal_network(c, name, subnet)
        assert not any(n.name.startswith(f"{daemon.prefix}-net2") for n in c.networks.list())


def test_kafka_image_on_internal_network(client: docker.DockerClient, network: object, prefix: str) -> None:
    net = client.networks.get(f"{prefix}-net")
    assert net.attrs["Internal"] is True
    assert net.attrs["IPAM"]["Config"][0]["Subnet"] == SUBNET
    bridge = subprocess.run(["ip", "-o", "-4", "addr", "show", "dev", f"{prefix}-net"], capture_output=True,
                            text=True, check=True).stdout
    assert "198.19.0.1/28" in bridge  # the host side of the network carries the prefix
    kafka = client.containers.run(KAFKA_IMAGE, name=f"{prefix}-node", network=f"{prefix}-net", cap_add=["NET_ADMIN"],
                                  detach=True, hostname="node")
    assert exec_ok(kafka, "java -version 2>&1").startswith("openjdk version \"17")
    assert f"kafka_2.13-{DEFAULT_VERSION}.jar" in exec_ok(kafka, "ls /opt/kafka/libs").split()
    assert exec_ok(kafka, "java kafka.Kafka --version 2>/dev/null").startswith(DEFAULT_VERSION)
    assert "Chain INPUT (policy ACCEPT)" in exec_ok(kafka, "iptables -L -n")
    exec_ok(kafka, "printf '*filter\\n:FAULTLINE - [0:0]\\n-A INPUT -j FAULTLINE\\n"
                   "-A FAULTLINE -s 198.19.0.9/32 -j DROP\\nCOMMIT\\n' | iptables-restore")
    assert "-A FAULTLINE -s 198.19.0.9/32 -j DROP" in exec_ok(kafka, "iptables-save -t filter")
    # The machine's gateway answers the machine (connects or refuses) but not the container: no forwarding, no NAT.
    gateway = (subprocess.run(["ip", "-4", "route", "show", "default"], capture_output=True, text=True).stdout.split()
               or ["", "", "192.0.2.1"])[2]
    assert connect_outcome(gateway) in ("connected", "refused"), f"the machine itself cannot reach {gateway}"
    script = f"{inspect.getsource(connect_outcome)}\nprint(connect_outcome({gateway!r}))"
    code, out = kafka.exec_run(["python3", "-c", script])
    assert code == 0 and out.decode().strip() in ("timeout", "unreachable"), out
    # The container has NET_ADMIN and nothing more.
    caps = kafka.attrs["HostConfig"]
    assert caps["CapAdd"] == ["NET_ADMIN"] and not caps["Privileged"]


def test_client_image_runs_the_project_code(client: docker.DockerClient, prefix: str) -> None:
    out = client.containers.run(
        CLIENT_IMAGE, name=f"{prefix}-imports", network_mode="none", remove=True,
        command=["python", "-c", "import confluent_kafka, pyarrow, workloads.producer, workloads.history, "
                 "testbed.kafka.probe, sys; print(sys.executable, confluent_kafka.__version__, pyarrow.__version__)"])
    exe, ck, pa = out.decode().split()
    assert exe == "/opt/faultline/venv/bin/python" and ck == "2.16.1" and pa
    code = client.containers.run(CLIENT_IMAGE, ["sh", "-c", "python -m workloads; echo exit=$?"],
                                 name=f"{prefix}-usage", network_mode="none", remove=True, stderr=True)
    assert b"usage: python -m workloads CONFIG.json" in code and b"exit=3" in code  # a usage error: 3, as every CLI of the project


BROKER = """set -e
mkdir -p /tmp/zk
printf 'dataDir=/tmp/zk\\nclientPort=2181\\n4lw.commands.whitelist=*\\nadmin.enableServer=false\\n' > /tmp/zoo.cfg
printf 'broker.id=0\\nlisteners=PLAINTEXT://0.0.0.0:9092\\nadvertised.listeners=PLAINTEXT://{name}:9092\\n\
zookeeper.connect=localhost:2181\\nlog.dirs=/tmp/kafka-logs\\noffsets.topic.replication.factor=1\\n\
group.initial.rebalance.delay.ms=0\\n' > /tmp/server.properties
java -Xmx128m org.apache.zookeeper.server.quorum.QuorumPeerMain /tmp/zoo.cfg > /tmp/zk.log 2>&1 &
exec java -Xmx384m -Dlog4j.configuration=file:/opt/kafka/config/log4j.properties kafka.Kafka /tmp/server.properties
"""

ROUND_TRIP = """
import json, time
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
conf = {"bootstrap.servers": "%s:9092"}
admin = AdminClient(conf)
admin.create_topics([NewTopic("t", 1, 1)])["t"].result(30)
p = Producer({**conf, "acks": "all", "enable.idempotence": True})
acked = []
for i in range(10):
    p.produce("t", str(i).encode(), on_delivery=lambda e, m: acked.append(m.offset()) if e is None else None)
p.flush(30)
c = Consumer({**conf, "group.id": "g", "auto.offset.reset": "earliest"})
c.subscribe(["t"])
got, deadline = [], time.time() + 30
while len(got) < 10 and time.time() < deadline:
    m = c.poll(1.0)
    if m is not None and m.error() is None:
        got.append(m.value().decode())
c.close()
print(json.dumps({"acked": sorted(acked), "read": got}))
"""


def test_broker_in_kafka_image_serves_the_client_image_and_iptables_cuts_it(
        client: docker.DockerClient, network: object, prefix: str) -> None:
    name = f"{prefix}-broker"
    broker = client.containers.run(KAFKA_IMAGE, ["sh", "-c", BROKER.format(name=name)], name=name,
                                   network=f"{prefix}-net", cap_add=["NET_ADMIN"], detach=True)
    deadline = time.monotonic() + 90
    while b"started (kafka.server.KafkaServer)" not in broker.logs() and time.monotonic() < deadline:
        broker.reload()
        assert broker.status in ("created", "running"), broker.logs()[-2000:].decode(errors="replace")
        time.sleep(0.5)
    assert b"started (kafka.server.KafkaServer)" in broker.logs(), broker.logs()[-2000:].decode(errors="replace")

    def in_client(*argv: str) -> str:
        return client.containers.run(CLIENT_IMAGE, list(argv), name=f"{prefix}-c{secrets.token_hex(2)}",
                                     network=f"{prefix}-net", remove=True).decode()

    result = json.loads(in_client("python", "-c", ROUND_TRIP % name).strip().splitlines()[-1])
    assert result == {"acked": list(range(10)), "read": [str(i) for i in range(10)]}
    view = json.loads(in_client("python", "-m", "testbed.kafka.probe", name, "9092", name, "2181", "t"))
    assert view["zookeeper_mode"] == "standalone" and view["broker"] is not None, view
    # A fault rule inside the node's container cuts the broker, not ZooKeeper; removing it heals.
    exec_ok(broker, "printf '*filter\\n:FAULTLINE - [0:0]\\n-A INPUT -j FAULTLINE\\n"
                    "-A FAULTLINE -p tcp --dport 9092 -j DROP\\nCOMMIT\\n' | iptables-restore")
    cut = json.loads(in_client("python", "-m", "testbed.kafka.probe", name, "9092", name, "2181", "t"))
    assert cut["broker"] is None and "timed out" in cut["broker_error"] and cut["zookeeper_mode"] == "standalone"
    exec_ok(broker, "iptables -F FAULTLINE")
    healed = json.loads(in_client("python", "-m", "testbed.kafka.probe", name, "9092", name, "2181", "t"))
    assert healed["broker"] is not None, healed


def test_clean_stops_an_orphaned_dockerd_and_keeps_a_live_ones(daemon: OwnDockerd, tmp_path: Path) -> None:
    """A dockerd whose starter was killed goes with `harness clean`; one whose starter lives (this test's) stays."""
    orphan = "fl" + secrets.token_hex(3)
    started = subprocess.run(
        [sys.executable, "-c", "import sys; from pathlib import Path; from testbed.runtime.dockerd import "
         "start_dockerd; start_dockerd(sys.argv[1], data_root=Path(sys.argv[2]))", orphan, str(tmp_path / "root")],
        cwd=REPO, capture_output=True, text=True, timeout=120)
    assert started.returncode == 0, started.stderr
    assert find_leftover_dockerds(orphan), "the starter exited and left its daemon running"
    proc = faultline("clean", timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert f"dockerd {orphan}" in proc.stdout and not find_leftover_dockerds(orphan)
    assert find_leftover_dockerds(daemon.prefix), "the daemon of a live starter stays"


def test_stop_leaves_nothing(daemon: OwnDockerd, client: docker.DockerClient, before: dict[str, str],
                             prefix: str) -> None:
    client.containers.run(CLIENT_IMAGE, name=f"{prefix}-left", network_mode="none", detach=True)  # stop() removes it
    pid, paths = daemon.pid, DockerdPaths(prefix)
    began = time.monotonic()
    daemon.stop()
    assert time.monotonic() - began < 20
    assert not Path(f"/proc/{pid}").exists()
    assert not paths.socket.exists() and not paths.run_dir.exists()
    assert find_leftover_dockerds(prefix) == []
    assert not list(Path("/sys/fs/cgroup").glob(f"*/faultline-{prefix}"))
    mounts = Path("/proc/self/mountinfo").read_text()
    assert str(paths.run_dir) not in mounts and f"{DATA_ROOT}/" not in mounts
    daemon.stop()  # idempotent
    assert host_network_state(prefix) == before


def test_a_killed_daemon_is_cleaned_up(before: dict[str, str]) -> None:
    # Runs after test_stop_leaves_nothing: one own daemon per data root at a time.
    prefix = "fl" + secrets.token_hex(3)
    paths = DockerdPaths(prefix)
    own = start_dockerd(prefix)
    try:
        with contextlib.closing(own.client()) as c:
            victim = c.containers.run(KAFKA_IMAGE, ["sleep", "600"], name=f"{prefix}-victim", network_mode="none",
                                      detach=True)
            victim.reload()
            container_pid = victim.attrs["State"]["Pid"]
        assert container_pid > 0 and Path(f"/proc/{container_pid}").exists()
        os.kill(own.pid, signal.SIGKILL)
        assert own.process is not None
        own.process.wait(10)
        assert find_leftover_dockerds(prefix) == []  # the daemon is gone ...
        assert b"sleep\x00600" in Path(f"/proc/{container_pid}/cmdline").read_bytes()  # ... its container is not
        removed = stop_leftover_dockerds(prefix)
        assert removed == [f"dockerd directory {paths.run_dir}"]
        state = Path(f"/proc/{container_pid}/stat")
        assert not state.exists() or state.read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
        assert not paths.run_dir.exists()
        mounts = Path("/proc/self/mountinfo").read_text()
        assert str(paths.run_dir) not in mounts and f"{DATA_ROOT}/" not in mounts
        assert not list(Path("/sys/fs/cgroup").glob(f"*/faultline-{prefix}"))
        # The next daemon on the data root finds the dead container (named with a prefix) and removes it.
        again = start_dockerd("fl" + secrets.token_hex(3))
        try:
            assert f"container {prefix}-victim" in again.cleaned
            with contextlib.closing(again.client()) as c:
                assert not c.containers.list(all=True, filters={"name": prefix})
        finally:
            again.stop()
    finally:
        stop_leftover_dockerds(prefix)
    assert host_network_state(prefix) == before
