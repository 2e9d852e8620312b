"""`python -m harness compose` without a daemon: the project a KRaft spec gets (storage formatted with the cluster id
of .env, then controller, then broker, with the runtime's command lines), the version's TopicCommand, the committed
example as compose writes it now (in the fast set: a broker setting changed without it failed CI at stop 51), bad
specs. Compose itself bringing the file up is tests/docker/test_compose.py."""

from __future__ import annotations

import re
import shlex
import subprocess
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.compose import (
    CLUSTER_ID,
    CLUSTER_ID_RE,
    COMPOSE_FILE,
    ENV_FILE,
    NODE_SOFTWARE,
    container_path,
    load_cluster,
    write_project,
)
from testbed.dist.versions import topic_command
from testbed.kafka import kraft
from testbed.kafka.cluster import NodeRole
from testbed.kafka.node_files import java_argv
from testbed.runfolder import RunFolder
from tests.conftest import REPO, faultline

SMOKE = REPO / "scenarios" / "smoke.yaml"


def kraft_spec(tmp_path: Path, controllers: str = "separate", version: str = "4.1.1") -> Path:
    raw = yaml.safe_load(SMOKE.read_text())
    raw["cluster"].update(kafka_version=version, metadata="kraft", kraft_controllers=controllers)
    spec = tmp_path / f"kraft-{controllers}.yaml"
    spec.write_text(yaml.safe_dump(raw))
    return spec


def env_of(out: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in (out / ENV_FILE).read_text().splitlines()
                if line and not line.startswith("#"))


def scripts(out: Path) -> dict[str, str]:
    """Each node's script as its container's bash runs it: Compose's ${VAR} from .env filled in, $$ made $."""
    env = env_of(out)
    services: dict[str, Any] = yaml.safe_load((out / COMPOSE_FILE).read_text())["services"]
    found = {}
    for name, entry in services.items():
        if entry["command"][:2] == ["bash", "-c"]:
            text = re.sub(r"(?<!\$)\$\{(\w+)\}", lambda m: env[m.group(1)], entry["command"][2])
            found[name] = text.replace("$$", "$")
    return found


@pytest.mark.parametrize("controllers", ["separate", "combined"])
def test_a_kraft_project_formats_each_process_with_the_env_cluster_id_then_starts_quorum_first(
        tmp_path: Path, controllers: str) -> None:
    cluster = load_cluster(kraft_spec(tmp_path, controllers), None)
    out = tmp_path / "project"
    write_project(cluster, out)
    cluster_id = env_of(out)[CLUSTER_ID]
    assert CLUSTER_ID_RE.match(cluster_id), cluster_id
    folder = RunFolder(out)
    on_container = partial(container_path, folder)
    roles: tuple[NodeRole, ...] = ("controller", "broker") if controllers == "separate" else ("broker",)
    for node in cluster.plan.nodes:
        script = scripts(out)[node.name]
        f = folder.node(node.name)
        lines = script.splitlines()
        formats = [shlex.join(kraft.format_argv(NODE_SOFTWARE, on_container(f.config(r)), cluster_id)) for r in roles]
        starts = [shlex.join(java_argv(cluster.settings, node, r, f, NODE_SOFTWARE, on_container)) for r in roles]
        # set -e, every format before any JVM of the node, the controller in the background and waited for on its
        # port, the broker last (exec: the container lives as long as it does).
        expected = ["set -e", *formats]
        if controllers == "separate":
            expected += [f"{starts[0]} &", f"until (exec 3<>/dev/tcp/{node.address}/9093) 2>/dev/null; "
                         "do sleep 0.5; done"]
        assert lines == [*expected, f"exec {starts[-1]}"], node.name
        assert subprocess.run(["bash", "-n", "-c", script]).returncode == 0, node.name
        for role in roles:  # the configs the commands name are the KRaft ones render_node_configs wrote
            assert "process.roles=" in f.config(role).read_text(), (node.name, role)
        assert not f.data("zookeeper").exists(), node.name
    header = (out / COMPOSE_FILE).read_text().split("services:", 1)[0]
    assert "Kafka 4.1.1 + KRaft cluster" in header and "controller quorum " in header and "ZooKeeper " not in header
    assert "java org.apache.kafka.tools.TopicCommand " in header


def test_writing_a_kraft_project_again_keeps_its_cluster_id_and_prefix(tmp_path: Path) -> None:
    cluster = load_cluster(kraft_spec(tmp_path), None)
    out = tmp_path / "project"
    first = (write_project(cluster, out), env_of(out)[CLUSTER_ID])
    assert (write_project(cluster, out), env_of(out)[CLUSTER_ID]) == first  # nodes/ was formatted with that id
    other = tmp_path / "other"
    write_project(cluster, other)
    assert env_of(other)[CLUSTER_ID] != first[1]


def test_a_zookeeper_project_has_no_cluster_id_and_no_format() -> None:
    out_env = (REPO / "compose" / ENV_FILE).read_text()  # the committed smoke example (ZooKeeper, 2.7.2)
    assert CLUSTER_ID not in out_env
    text = (REPO / "compose" / COMPOSE_FILE).read_text()
    assert "StorageTool" not in text and "java kafka.admin.TopicCommand " in text


@pytest.mark.parametrize(("version", "main_class"), [
    ("2.7.2", "kafka.admin.TopicCommand"), ("3.6.2", "kafka.admin.TopicCommand"),
    ("3.7.0", "org.apache.kafka.tools.TopicCommand"), ("4.4.0", "org.apache.kafka.tools.TopicCommand"),
])
def test_topic_command_is_the_class_of_the_version_jars(version: str, main_class: str) -> None:
    assert topic_command(version) == main_class


EXAMPLE = REPO / "compose"
REGENERATE = "python -m harness compose scenarios/smoke.yaml -o compose"


def generate(out: Path, spec: Path = SMOKE) -> Path:
    faultline("compose", str(spec), "-o", str(out), check=True)
    return out


def test_the_committed_example_is_what_compose_writes_for_smoke(tmp_path: Path) -> None:
    out = generate(tmp_path / "smoke")
    assert (EXAMPLE / COMPOSE_FILE).read_text() == (out / COMPOSE_FILE).read_text(), f"stale: {REGENERATE}"
    for path in sorted(p for p in out.rglob("*") if p.is_file() and p.name != ENV_FILE):
        committed = EXAMPLE / path.relative_to(out)
        assert committed.is_file() and committed.read_text() == path.read_text(), f"{committed} stale: {REGENERATE}"

    def env(path: Path) -> list[str]:
        return [line for line in path.read_text().splitlines() if not line.startswith("COMPOSE_PROJECT_NAME=")]
    assert env(EXAMPLE / ENV_FILE) == env(out / ENV_FILE), f"stale: {REGENERATE}"


def bogus_key(tmp_path: Path) -> Path:
    raw = yaml.safe_load(SMOKE.read_text())
    raw["cluster"]["bogus"] = 1
    (tmp_path / "bogus.yaml").write_text(yaml.safe_dump(raw))
    return tmp_path / "bogus.yaml"


def netns_network(tmp_path: Path) -> Path:
    raw = yaml.safe_load(SMOKE.read_text())
    raw["cluster"]["network"] = "198.18.0.0/24"
    (tmp_path / "netns.yaml").write_text(yaml.safe_dump(raw))
    return tmp_path / "netns.yaml"


@pytest.mark.parametrize(("make_spec", "says"), [
    (lambda tmp: tmp / "missing.yaml", "cannot read"),
    (bogus_key, "cluster.bogus: unknown key"),
    (netns_network, "is not inside 198.19.0.0/24"),
], ids=["missing-file", "unknown-key", "netns-network"])
def test_a_bad_spec_is_one_line_and_writes_nothing(tmp_path: Path, make_spec: Any, says: str) -> None:
    out = tmp_path / "out"
    proc = faultline("compose", str(make_spec(tmp_path)), "-o", str(out))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and proc.stderr.startswith("faultline: "), proc.stderr
    assert says in proc.stderr, proc.stderr
    assert not out.exists()
