"""`python -m harness compose`: a file Compose accepts, the cluster it brings up (ZooKeeper and KRaft). The committed
example and bad specs need no daemon: tests/harness/test_compose_file.py.

Debian's docker-compose (1.29, `make setup-docker`) talks to the package's own dockerd (DOCKER_HOST).
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import docker
import pytest
import yaml

from harness.compose import COMPOSE_FILE, ENV_FILE, load_cluster
from testbed.kafka import config as kcfg
from testbed.kafka.cluster import ROLES, KafkaCluster
from testbed.kafka.quorum import QuorumView, describe_quorum
from testbed.kafka.waiting import wait_for
from testbed.kafka.wire import broker_view
from testbed.kafka.zk import zk_snapshot
from testbed.runfolder import RunFolder
from testbed.runtime.base import PREFIX_RE, new_prefix
from testbed.runtime.docker import DockerRuntime
from testbed.runtime.dockerd import remove_prefixed_resources
from testbed.state import RunState
from testbed.status import cluster_status
from tests.conftest import REPO
from tests.harness.test_compose_file import generate

pytestmark = pytest.mark.docker

SMOKE = REPO / "scenarios" / "smoke.yaml"
T = TypeVar("T")


def docker_compose(project: Path, *args: str, prefix: str | None = None,
                   timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Debian's docker-compose on `project`'s file, run from elsewhere; `prefix` overrides the .env project name."""
    if shutil.which("docker-compose") is None:
        pytest.fail("docker-compose is missing: make setup-docker (apt-get install docker-compose)")
    env = {**os.environ, **({"COMPOSE_PROJECT_NAME": prefix} if prefix else {})}
    return subprocess.run(["docker-compose", "-f", str(project / COMPOSE_FILE), *args], cwd="/", env=env,
                          capture_output=True, text=True, timeout=timeout)


def ours(client: docker.DockerClient, prefix: str) -> list[str]:
    return [f"container {c.name}" for c in client.containers.list(all=True) if c.name.startswith(prefix)] + \
        [f"network {n.name}" for n in client.networks.list() if n.name.startswith(prefix)]


@contextlib.contextmanager
def brought_up(out: Path) -> Iterator[tuple[str, docker.DockerClient]]:
    """`docker-compose up -d` of `out` under a fresh run prefix; then `down`, which must leave nothing of it."""
    prefix = new_prefix()
    client = docker.from_env()
    try:
        up = docker_compose(out, "up", "-d", prefix=prefix)
        assert up.returncode == 0, up.stderr
        yield prefix, client
    finally:
        down = docker_compose(out, "down", prefix=prefix)
        left = ours(client, prefix)
        remove_prefixed_resources(client, prefix)
    assert down.returncode == 0, down.stderr
    assert left == [], left


def test_compose_accepts_the_file_and_reads_the_runtime_layout_from_it(tmp_path: Path) -> None:
    out = generate(tmp_path / "smoke")
    checked = docker_compose(out, "config")
    assert checked.returncode == 0, checked.stderr
    config: dict[str, Any] = yaml.safe_load(checked.stdout)
    prefix = re.search(r"^COMPOSE_PROJECT_NAME=(\S+)$", (out / ENV_FILE).read_text(), re.MULTILINE)
    assert prefix is not None and PREFIX_RE.match(prefix.group(1))
    net = config["networks"]["net"]
    assert net["name"] == f"{prefix.group(1)}-net" and net["internal"] is True
    assert net["ipam"]["config"] == [{"subnet": "198.19.0.0/24", "gateway": "198.19.0.1"}]
    plan = load_cluster(SMOKE, None).plan
    assert sorted(config["services"]) == sorted(h.name for h in plan.hosts)
    for host in plan.hosts:
        entry = config["services"][host.name]
        assert entry["container_name"] == f"{prefix.group(1)}-{host.name}" and entry["hostname"] == host.name
        assert entry["networks"]["net"]["ipv4_address"] == host.address
        assert entry["cap_add"] == ["NET_ADMIN"] and entry["init"] is True
        assert entry["image"] == ("faultline/kafka:2.7.2" if host.role == "node" else "faultline/client:latest")


def test_up_brings_up_the_cluster_the_harness_reads_and_down_removes_it(tmp_path: Path) -> None:
    out = generate(tmp_path / "smoke")
    compose = load_cluster(SMOKE, None)
    with brought_up(out) as (prefix, client):
        def registered() -> dict[str, Any] | None:
            snap = zk_snapshot(kcfg.zookeeper_connect(compose.plan), None, timeout=2.0)
            return snap if snap["brokers"] == [0, 1, 2] and snap["controller"] is not None else None
        controller = wait_for("three brokers registered in ZooKeeper", registered, 120)["controller"]

        def agreed() -> bool | None:
            views = [broker_view(n.address, kcfg.BROKER_PORT) for n in compose.plan.nodes]
            return True if all(v.controller == controller and sorted(v.brokers) == [0, 1, 2]
                               for v in views) else None
        wait_for(f"every broker answering, knowing all three and controller {controller}", agreed, 60)

        # The harness's own way in: the docker runtime finds the containers by name, `cluster status`
        # asks each node from inside it, and the runtime would start exactly the same java command lines.
        state = RunState(out, {"prefix": prefix, "processes": {}, "docker_host": os.environ["DOCKER_HOST"],
                               "settings": compose.settings.to_json()})
        runtime = DockerRuntime(prefix, compose.plan, state, client)
        cluster = KafkaCluster(runtime, compose.settings, RunFolder(out))
        status = cluster_status(cluster, runtime)
        assert sorted(z["mode"] for z in status["zookeeper"]) == ["follower", "follower", "leader"], status
        assert [b["controller"] for b in status["brokers"]] == [controller] * 3, status
        scripts = {name: " ".join(entry["command"]) for name, entry in
                   yaml.safe_load((out / COMPOSE_FILE).read_text())["services"].items()}
        for node in compose.plan.nodes:
            for role in ROLES:
                assert shlex.join(cluster._argv(node, role)) in scripts[node.name], (node.name, role)
        assert (out / "nodes" / "az1-node" / "logs" / "broker" / "server.log").stat().st_size > 0


KRAFT_VERSION = "4.1.1"  # KRaft only; the image tests/docker/test_docker_kraft.py builds too


@pytest.mark.versions  # a Kafka other than the default (its image built here): `make test-versions`, `make test-docker`
def test_a_kraft_project_comes_up_formatted_with_one_quorum_and_down_removes_it(tmp_path: Path) -> None:
    built = subprocess.run([sys.executable, "compose/build_images.py", "--kafka-version", KRAFT_VERSION,
                            "--only", "kafka"], cwd=REPO, capture_output=True, text=True, timeout=1200)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    raw = yaml.safe_load(SMOKE.read_text())
    raw["cluster"].update(kafka_version=KRAFT_VERSION, metadata="kraft")
    (tmp_path / "kraft.yaml").write_text(yaml.safe_dump(raw))
    out = generate(tmp_path / "kraft", tmp_path / "kraft.yaml")
    cluster_id = re.search(r"^KAFKA_CLUSTER_ID=(\S+)$", (out / ENV_FILE).read_text(), re.MULTILINE)
    assert cluster_id is not None
    compose = load_cluster(tmp_path / "kraft.yaml", None)
    with brought_up(out) as (prefix, client):
        def one_quorum() -> QuorumView | None:  # one controller leads (the others answer NOT_LEADER) a quorum of
            views = [describe_quorum(n.address, kcfg.CONTROLLER_PORT) for n in compose.plan.nodes]  # three voters,
            leading = [v for v in views if v.leading]  # every one caught up (as kraft.quorum_ready asks)
            return leading[0] if len(leading) == 1 and len(leading[0].voters) == 3 and \
                all(end >= 0 for end in leading[0].voters.values()) else None

        def unfenced() -> bool | None:  # a KRaft broker's Metadata lists the unfenced brokers only
            views = [broker_view(n.address, kcfg.BROKER_PORT) for n in compose.plan.nodes]
            return True if all(sorted(v.brokers) == [0, 1, 2] for v in views) else None
        lead = wait_for("one KRaft controller quorum of three voters", lambda: _answering(one_quorum), 120)
        assert lead.leader_id in (100, 101, 102), lead
        wait_for("every broker registered and unfenced, known to every broker", lambda: _answering(unfenced), 120)
        for node in compose.plan.nodes:  # formatted with .env's id, once per process (the storage tool's file)
            for data in ("controller-data", "kafka-data"):
                meta = (out / "nodes" / node.name / data / "meta.properties").read_text()
                assert f"cluster.id={cluster_id.group(1)}" in meta, (node.name, data)
            assert (out / "nodes" / node.name / "logs" / "controller" / "server.log").stat().st_size > 0
            assert not (out / "nodes" / node.name / "zookeeper-data").exists()


def _answering(check: Callable[[], T | None]) -> T | None:
    """`check()`, or None while what it asks does not answer yet (a JVM still starting)."""
    try:
        return check()
    except (OSError, ConnectionError, ValueError):
        return None
