"""The docker runtime's second Kafka version without a daemon: a rolling upgrade's jars are put in each node
container once, at its first install, from this machine's archive; the image's version keeps the image's jars;
client containers get none."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from typing import Any

import pytest

from testbed.addressing import Host, make_plan
from testbed.dist import archives
from testbed.runtime import docker_versions
from testbed.runtime.docker_versions import IMAGE_CLASSPATH, NodeVersions

PLAN = make_plan("198.19.0.0/24", 3)


@pytest.fixture
def archive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """kafka_archive of a fake 3.9.1: one jar under libs/, as testbed.dist.archives makes it."""
    libs = tmp_path / "kafka-3.9.1" / "libs"
    libs.mkdir(parents=True)
    (libs / "kafka_2.13-3.9.1.jar").write_bytes(b"jar")
    target = tmp_path / "kafka-3.9.1.tar"
    digest = archives.tar_dir(libs, target, "libs")
    monkeypatch.setattr(docker_versions, "kafka_archive", lambda version: (target, digest))
    return target


def versions(settings: dict[str, Any]) -> tuple[NodeVersions, list[tuple[str, str, bytes]]]:
    puts: list[tuple[str, str, bytes]] = []
    return NodeVersions("/faultline", lambda h, where, data: puts.append((h.name, where, data)),
                        lambda: settings), puts


def test_an_upgrade_version_is_put_in_each_node_once_at_its_first_install(archive: Path) -> None:
    nv, puts = versions({"kafka_version": "2.7.2", "upgrade_versions": ["3.9.1"]})
    nodes: list[Host] = [h for h in PLAN.hosts if h.role == "node"]
    for node in nodes:
        nv.install(node)
    assert [(name, where) for name, where, _ in puts] == [(n.name, "/faultline/kafka-3.9.1") for n in nodes]
    with tarfile.open(fileobj=io.BytesIO(puts[0][2])) as tar:
        assert tar.getnames() == ["libs", "libs/kafka_2.13-3.9.1.jar"]  # unpacked at /faultline/kafka-3.9.1/libs
    assert nv.classpath(nodes[0], "3.9.1") == "/faultline/kafka-3.9.1/libs/*"
    assert nv.classpath(nodes[0], "2.7.2") == IMAGE_CLASSPATH == "/opt/kafka/libs/*"
    assert len(puts) == 3  # asking for the classpath puts nothing again


def test_the_image_version_and_client_hosts_get_nothing(archive: Path) -> None:
    nv, puts = versions({"kafka_version": "2.7.2"})
    nv.install(PLAN.node_of_az("az1"))
    assert nv.classpath(PLAN.node_of_az("az1"), "2.7.2") == IMAGE_CLASSPATH and puts == []
    nv, puts = versions({"kafka_version": "2.7.2", "upgrade_versions": ["3.9.1"]})
    nv.install(PLAN.client_of_az("az1"))
    assert puts == []


def test_a_version_not_named_before_the_run_is_put_when_first_asked_for(archive: Path) -> None:
    nv, puts = versions({"kafka_version": "2.7.2"})
    assert nv.classpath(PLAN.node_of_az("az2"), "3.9.1") == "/faultline/kafka-3.9.1/libs/*"
    assert [(name, where) for name, where, _ in puts] == [("az2-node", "/faultline/kafka-3.9.1")]
