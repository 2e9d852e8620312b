"""`python -m harness compose SPEC -o DIR`: a spec's cluster as a Compose project, to bring up by hand.

For someone who wants to poke at the cluster a scenario runs on, or attach it
to a bug report, without the harness: DIR gets `docker-compose.yml`, `.env`
(project name, spec, Kafka version), a `.gitignore`, and each node's folder
`nodes/<node>/` laid out as in a run folder (`RunFolder.node`). The configs and
the java command lines come from the code a run uses
(`testbed.kafka.cluster.render_node_configs`, `java_argv`) with the paths the
docker runtime gives them inside a container (`/faultline/run/...`), where each
node's folder is bind-mounted; ZooKeeper (KRaft: controller) and broker write
their data and logs there. A KRaft project's `.env` also holds its cluster id
(`KAFKA_CLUSTER_ID`): each node container formats its storage with it
(`kraft.format_argv`, which leaves formatted storage alone) before its
controller and broker start. Images, internal network, addresses, host names, NET_ADMIN and init are
the docker runtime's too. The project name is a run prefix, so the containers
are `<prefix>-az1-node`, ..., the network `<prefix>-net`, and `python -m harness
clean` finds them.

Must never: write anything before the spec and its plan are valid, talk to a
Docker daemon, or describe a network that is not internal or outside 198.19.0.0/24.
"""

from __future__ import annotations

import ipaddress
import re
import shlex
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import yaml

from harness.spec import load_specs
from testbed.addressing import AddressPlan, Host, make_plan
from testbed.dist.versions import topic_command
from testbed.errors import UsageError
from testbed.files import write_text_atomic
from testbed.kafka import config as kcfg
from testbed.kafka import kraft
from testbed.kafka.config import ClusterSettings
from testbed.kafka.node_files import java_argv, render_node_configs
from testbed.paths import REPO_ROOT
from testbed.runfolder import RunFolder
from testbed.runtime.base import PREFIX_RE, RUN_ENV, Software, new_prefix
from testbed.runtime.docker import CLIENT_IMAGE, KAFKA_IMAGE, LABEL, NODE_CLASSPATH, NODE_JAVA
from testbed.runtime.docker import container_path as docker_container_path
from testbed.runtime.dockerd import NETWORK_RANGE

if TYPE_CHECKING:
    from testbed.kafka.cluster import NodeRole

COMPOSE_FILE = "docker-compose.yml"
ENV_FILE = ".env"
PROJECT = "${COMPOSE_PROJECT_NAME}"
CLUSTER_ID = "KAFKA_CLUSTER_ID"  # the .env variable of a KRaft project's cluster id
# A KRaft cluster id as `kraft.new_cluster_id` draws it (base64url of 16 bytes), safe unquoted in a shell line.
CLUSTER_ID_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]{21}$")
# What `DockerRuntime.install` names for a node: the image's java and Kafka's jars (compose/kafka/Dockerfile).
NODE_SOFTWARE = Software(java=NODE_JAVA, kafka_classpath=NODE_CLASSPATH, python=())
# What the cluster writes while it runs; the configs and myid are what `compose` wrote.
GITIGNORE = ("# written by the running cluster, not by `python -m harness compose`\n"
             "nodes/*/kafka-data/\nnodes/*/controller-data/\nnodes/*/logs/\nnodes/*/zookeeper-data/*\n"
             "!nodes/*/zookeeper-data/myid\n")


@dataclass(frozen=True)
class ComposeCluster:
    """The validated inputs of one compose project: which spec, which cluster, laid out how."""

    spec_path: Path
    run_name: str  # the spec's name, "/<configuration>" when one was named
    settings: ClusterSettings
    plan: AddressPlan


def load_cluster(spec_path: Path, configuration: str | None) -> ComposeCluster:
    """The spec's cluster as the docker runtime would lay it out; SpecError/UsageError before anything is written."""
    specs = load_specs(spec_path, configuration, runtime="docker")
    spec = specs[0]
    if any(other.cluster != spec.cluster for other in specs):
        raise UsageError(f"{spec_path}: its configurations run different clusters "
                         f"({', '.join(str(other.configuration) for other in specs)}): name one with --configuration")
    settings = spec.cluster
    subnet = ipaddress.ip_network(settings.network)
    if not (isinstance(subnet, ipaddress.IPv4Network) and subnet.subnet_of(NETWORK_RANGE)):
        raise UsageError(f"{spec_path}: cluster.network {settings.network} is not inside {NETWORK_RANGE}, "
                         "where the docker runtime's networks live")
    run_name = spec.run_name if configuration is not None else spec.name
    return ComposeCluster(spec_path, run_name, settings, make_plan(settings.network, settings.nodes))


def write_project(cluster: ComposeCluster, out_dir: Path) -> str:
    """Write the project into `out_dir` (created if missing); return its project name.

    Writing into a folder written before keeps its project name, so `down` still finds what `up` made."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"-o {out_dir}: cannot create it: {exc.strerror}") from exc
    prefix = _previous(out_dir / ENV_FILE, "COMPOSE_PROJECT_NAME", PREFIX_RE) or new_prefix()
    cluster_id = (_previous(out_dir / ENV_FILE, CLUSTER_ID, CLUSTER_ID_RE) or kraft.new_cluster_id()) \
        if cluster.settings.kraft else None
    folder = RunFolder(out_dir)
    for node in cluster.plan.nodes:
        render_node_configs(cluster.plan, cluster.settings, node, folder.node(node.name),
                            partial(container_path, folder))
    write_text_atomic(out_dir / ".gitignore", GITIGNORE)
    write_text_atomic(out_dir / ENV_FILE, env_file(cluster, prefix, cluster_id))
    write_text_atomic(out_dir / COMPOSE_FILE, compose_file(cluster, folder))
    return prefix


def container_path(folder: RunFolder, path: Path) -> str:
    """Where a container keeps `path` of the project's folder: as `DockerRuntime.host_path` puts a run's."""
    return docker_container_path(folder.root, path)


def env_file(cluster: ComposeCluster, prefix: str, cluster_id: str | None) -> str:
    kraft_id = "" if cluster_id is None else \
        (f"# KRaft: the cluster id every node's storage is formatted with at its first start (kept in nodes/).\n"
         f"{CLUSTER_ID}={cluster_id}\n")
    return (f"# Values for {COMPOSE_FILE}; the environment overrides them. COMPOSE_PROJECT_NAME must be a run\n"
            "# prefix (fl + 6 hex digits): containers and network are named with it, as the docker runtime names a run's.\n"
            f"COMPOSE_PROJECT_NAME={prefix}\nFAULTLINE_SPEC={cluster.run_name}\n"
            f"KAFKA_VERSION={cluster.settings.kafka_version}\n{kraft_id}")


def _previous(env: Path, name: str, form: re.Pattern[str]) -> str | None:
    """The value of `name` in a project's .env written before, if it has the form `form`."""
    try:
        found = re.search(rf"^{name}=(\S+)$", env.read_text(), re.MULTILINE)
    except OSError:
        return None
    return found.group(1) if found and form.match(found.group(1)) else None


def node_script(settings: ClusterSettings, node: Host, folder: RunFolder) -> str:
    """The node's ZooKeeper server, then, once that server serves (it is in a quorum), its broker. KRaft: each
    process's storage formatted (once), then its controller and, once that listens, its broker (combined: the one
    broker JVM that is also its controller)."""
    on_container = partial(container_path, folder)
    f = folder.node(node.name)
    roles = cast("tuple[NodeRole, ...]", settings.roles)
    argv: dict[str, str] = {role: shlex.join(java_argv(settings, node, role, f, NODE_SOFTWARE, on_container))
                            for role in roles}
    if not settings.kraft:
        serving = (f"(exec 3<>/dev/tcp/{node.address}/{kcfg.ZK_CLIENT_PORT} && echo srvr >&3 "
                   f'&& grep -qE "^Mode: (leader|follower)" <&3)')
        script = (f"{argv['zookeeper']} &\n"
                  f"until {serving} 2>/dev/null; do sleep 0.5; done\n"
                  f"exec {argv['broker']}\n")
        return script.replace("$", "$$")  # Compose would read $NAME as one of its variables
    # The id's placeholder is a plain word shlex leaves unquoted; it becomes Compose's ${KAFKA_CLUSTER_ID} below,
    # after the escaping, so Compose fills it in from .env.
    formats = [shlex.join(kraft.format_argv(NODE_SOFTWARE, on_container(f.config(role)), CLUSTER_ID))
               for role in roles]
    script = "set -e\n" + "".join(f"{line}\n" for line in formats)  # a format that fails ends the container
    if settings.quorum_role is not None:
        listening = f"(exec 3<>/dev/tcp/{node.address}/{kcfg.CONTROLLER_PORT})"
        script += (f"{argv[settings.quorum_role]} &\n"
                   f"until {listening} 2>/dev/null; do sleep 0.5; done\n")
    script += f"exec {argv['broker']}\n"
    return script.replace("$", "$$").replace(f" -t {CLUSTER_ID} ", f" -t ${{{CLUSTER_ID}}} ")


def service(cluster: ComposeCluster, host: Host, folder: RunFolder) -> dict[str, Any]:
    """One host as the docker runtime creates it (`DockerRuntime.create`), its node folder mounted."""
    entry: dict[str, Any] = {
        "image": KAFKA_IMAGE.format(version="${KAFKA_VERSION}") if host.role == "node" else CLIENT_IMAGE,
        "container_name": f"{PROJECT}-{host.name}",
        "hostname": host.name,
        "init": True,
        "cap_add": ["NET_ADMIN"],
        "environment": {RUN_ENV: PROJECT},
        "labels": {LABEL: PROJECT, "faultline.host": host.name, "faultline.spec": "${FAULTLINE_SPEC}"},
        "networks": {"net": {"ipv4_address": host.address}},
    }
    if host.role != "node":
        return {**entry, "command": ["sleep", "infinity"]}
    node_dir = folder.node(host.name).root
    return {**entry, "volumes": [f"./{node_dir.relative_to(folder.root)}:{container_path(folder, node_dir)}"],
            "command": ["bash", "-c", node_script(cluster.settings, host, folder)]}


def compose_file(cluster: ComposeCluster, folder: RunFolder) -> str:
    plan = cluster.plan
    network = {
        "name": f"{PROJECT}-net", "driver": "bridge", "internal": True,
        "driver_opts": {"com.docker.network.bridge.name": f"{PROJECT}-net",
                        "com.docker.network.bridge.enable_ip_masquerade": "false"},
        "labels": {"faultline.prefix": PROJECT},
        "ipam": {"config": [{"subnet": plan.network, "gateway": plan.control}]},
    }
    document = {"services": {host.name: service(cluster, host, folder) for host in plan.hosts},
                "networks": {"net": network}}
    return header(cluster) + yaml.dump(document, Dumper=_Dumper, sort_keys=False, width=10_000)


def header(cluster: ComposeCluster) -> str:
    spec = cluster.spec_path.resolve()
    shown = spec.relative_to(REPO_ROOT) if spec.is_relative_to(REPO_ROOT) else spec
    s, plan = cluster.settings, cluster.plan
    quorum = "KRaft" if s.kraft else "ZooKeeper"
    processes = ("one JVM, broker and controller" if s.quorum_role is None else "its KRaft controller, then its broker"
                 ) if s.kraft else "its ZooKeeper server, then its broker"
    configuration = f" --configuration {cluster.run_name.split('/', 1)[1]}" if "/" in cluster.run_name else ""
    layout = (f"--replica-assignment {','.join(':'.join(map(str, r)) for r in s.replica_assignment)}"
              if s.replica_assignment else f"--partitions {s.partitions} --replication-factor {s.replication_factor}")
    bootstrap = f"{plan.nodes[0].address}:{kcfg.BROKER_PORT}"
    lines = [
        f"The Kafka {s.kafka_version} + {quorum} cluster of the faultline spec {cluster.run_name} ({shown}),",
        "as the harness's docker runtime runs it: same images, internal network, addresses, configs and java",
        f"command lines. One node per AZ ({processes}), one client container per AZ.",
        "Generate it again rather than edit it; values are in .env.",
        "",
        f"  python -m harness compose {shown}{configuration} -o DIR",
        "  make docker-images                   # faultline/kafka:<KAFKA_VERSION>, faultline/client:latest",
        "  docker compose up -d                 # or Debian's docker-compose; up to ~20 s until the brokers serve",
        f"  docker compose exec az1-node java {topic_command(s.kafka_version)} --bootstrap-server {bootstrap} --create"
        f" --topic {s.topic} {layout}",
        "  docker compose exec az1-client bash  # python -m testbed.kafka.probe ..., python -m workloads ...",
        "  docker compose down                  # containers and network go; data and logs stay in nodes/",
        "",
        f"Bootstrap servers {kcfg.bootstrap_servers(plan)}; " + (
            f"controller quorum {kcfg.quorum_voters(plan, s)}." if s.kraft else
            f"ZooKeeper {kcfg.zookeeper_connect(plan)}."),
    ]
    if s.controller is not None:
        lines.append(f"Not reproduced: the spec makes broker {s.controller} controller (started first); here they race.")
    return "".join(f"# {line}".rstrip() + "\n" for line in lines)


class _Dumper(yaml.SafeDumper):
    """Block style, lists indented under their key, multi-line strings as literal blocks (the node scripts)."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_Dumper.add_representer(str, _represent_str)
