"""A Kafka cluster in containers the test starts by itself with plain Docker calls, as a user's own would run: not
through faultline's runtime.

Three containers of the project's local Kafka image (`faultline/kafka:<version>`, no NET_ADMIN, no FAULTLINE_RUN)
named `<prefix>-yours-azN` on a network of their own (`<prefix>-yours`, internal, in 198.19.0.128/26): each runs
ZooKeeper and then its broker (ids 0..2, rack azN) from a script and configs copied in before it starts (the ssh
bed's own cluster's configs, tests/ssh/their_cluster.py). Broker 2 starts first (the others wait until it listens),
so it is the controller, as the catalogue's isolate-az-leader wants. A topic of the user's with records and a
consumer group with committed offsets are made on it. `look` is what a test compares before and after a run.

With `split=True` each AZ has two containers instead, as a compose file with a ZooKeeper service per AZ and a
broker service in its network namespace (`network_mode: service:zookeeper-azN`) would run them: the ZooKeeper's
(`<prefix>-yours-zk-azN`, service `zookeeper-azN`) holds the AZ's address on the network; the broker's
(`<prefix>-yours-azN`, service `kafka-azN`, network mode `container:<the ZooKeeper's id>`) starts the broker
from its own script once that ZooKeeper serves, so docker's own stop, start, kill and pause of it act on the
broker alone.
"""

from __future__ import annotations

import contextlib
import subprocess
from dataclasses import dataclass
from typing import Any

import docker
import docker.errors
import docker.types
from confluent_kafka.admin import AdminClient

from testbed.kafka.wire import zookeeper_mode
from tests.ssh.their_cluster import LOG4J, look_kafka, server_properties, tar_of, user_data, wait_for, zoo_cfg

HOME = "/opt/theirs"
SUBNET, GATEWAY = "198.19.0.128/26", "198.19.0.129"
ADDRESSES = ("198.19.0.141", "198.19.0.142", "198.19.0.143")  # az1..az3
CONTROLLER = 2
ZOOKEEPER = ("java -Xms96m -Xmx96m -Dlog4j.configuration=file:{home}/log4j-zookeeper.properties "
             "-cp '/opt/kafka/libs/*' org.apache.zookeeper.server.quorum.QuorumPeerMain {home}/zoo.cfg "
             ">>{home}/zookeeper.out 2>&1")
SERVES = ("until (exec 3<>/dev/tcp/{me}/2181 && echo srvr >&3 && grep -qE '^Mode: (leader|follower)' <&3) "
          "2>/dev/null; do sleep 0.5; done\n")  # the node's ZooKeeper serves
BROKER = ("java -Xms320m -Xmx320m -XX:+UseG1GC -Dlog4j.configuration=file:{home}/log4j-broker.properties "
          "-cp '/opt/kafka/libs/*' kafka.Kafka {home}/server.properties >>{home}/broker.out 2>&1\n")
START = "set -e\n" + ZOOKEEPER + " &\n" + SERVES + "{wait}exec " + BROKER  # one container for both
# Brokers other than the controller start once it listens (2.7 elects its controller before it accepts).
WAIT = "until (exec 3<>/dev/tcp/{controller}/9092) 2>/dev/null; do sleep 0.5; done\n"
# The split layout's containers: a ZooKeeper alone, a broker that waits for its node's ZooKeeper (its start order
# makes the controller).
START_ZOOKEEPER = "set -e\nexec " + ZOOKEEPER + "\n"
START_BROKER = "set -e\n" + SERVES + "exec " + BROKER


@dataclass
class TheirContainers:
    client: docker.DockerClient
    prefix: str
    image: str
    split: bool = False  # each AZ's ZooKeeper in a container of its own, the broker in its network namespace

    @property
    def network(self) -> str:
        return f"{self.prefix}-yours"

    def name(self, az: int) -> str:
        return f"{self.prefix}-yours-az{az}"

    @property
    def project(self) -> str:
        """The compose project the containers say they belong to (its labels, as `docker compose up` sets them)."""
        return f"{self.prefix}-shop"

    @staticmethod
    def service(az: int) -> str:
        return f"kafka-az{az}"

    def zookeeper_name(self, az: int) -> str:
        """The container of az's ZooKeeper (split: its own; else the broker's)."""
        return f"{self.prefix}-yours-zk-az{az}" if self.split else self.name(az)

    @staticmethod
    def zookeeper_service(az: int) -> str:
        return f"zookeeper-az{az}"

    def names(self) -> list[str]:
        """Every container of the cluster, the brokers' first."""
        return [self.name(az) for az in (1, 2, 3)] + ([self.zookeeper_name(az) for az in (1, 2, 3)] if self.split
                                                      else [])

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{a}:9092" for a in ADDRESSES)

    def container(self, az: int) -> Any:
        return self.client.containers.get(self.name(az))

    def stop(self) -> None:
        """Remove the test's containers and network (its own prefix only), the brokers' first."""
        for name in self.names():
            with contextlib.suppress(docker.errors.NotFound):
                self.client.containers.get(name).remove(force=True, v=True)
        with contextlib.suppress(docker.errors.NotFound):
            self.client.networks.get(self.network).remove()


def start_their_containers(client: docker.DockerClient, prefix: str, image: str,
                           split: bool = False) -> TheirContainers:
    cluster = TheirContainers(client, prefix, image, split)
    ipam = docker.types.IPAMConfig(pool_configs=[docker.types.IPAMPool(subnet=SUBNET, gateway=GATEWAY)])
    client.networks.create(cluster.network, driver="bridge", internal=True, ipam=ipam,
                           options={"com.docker.network.bridge.name": f"{prefix}-y"})
    if split:
        return _start_split(cluster)
    api = client.api
    for az in (3, 1, 2):  # the controller's first
        me = ADDRESSES[az - 1]
        wait = "" if az - 1 == CONTROLLER else WAIT.format(controller=ADDRESSES[CONTROLLER])
        api.start(_create(cluster, cluster.name(az), cluster.service(az), START.format(home=HOME, me=me, wait=wait),
                          _files(az), networking_config=api.create_networking_config(
                              {cluster.network: api.create_endpoint_config(ipv4_address=me)})))
    return _ready(cluster)


def _ready(cluster: TheirContainers) -> TheirContainers:
    """Wait for the quorum and every broker (the controller CONTROLLER), then make the user's topic and group."""
    wait_for(lambda: sorted(zookeeper_mode(a, 2181) for a in ADDRESSES) == ["follower", "follower", "leader"],
             "ZooKeeper quorum")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    wait_for(lambda: len(admin.list_topics(timeout=5).brokers) == 3, "every broker registered")
    assert admin.list_topics(timeout=5).controller_id == CONTROLLER
    user_data(cluster.bootstrap)
    return cluster


def _files(az: int) -> dict[str, str]:
    """What az's node runs from: the bed's configs (tests/ssh/their_cluster.py), its myid, the log4j files."""
    zk = ",".join(f"{a}:2181" for a in ADDRESSES)
    return {"zoo.cfg": zoo_cfg(list(ADDRESSES)), "zk/myid": f"{az}\n",
            "server.properties": server_properties(az - 1, ADDRESSES[az - 1], zk),
            **{f"log4j-{role}.properties": LOG4J.format(role=role) for role in ("zookeeper", "broker")}}


def _create(cluster: TheirContainers, name: str, service: str, script: str, files: dict[str, str],
            networking_config: Any = None, network_mode: str | None = None) -> str:
    """A container of the image running `script` (written with `files` under HOME before it starts), labelled as
    `service` of the bed's compose project, on a network (`networking_config`) or in another container's network
    namespace (`network_mode` container:<id>, which takes that container's hostname too); its id (not started)."""
    api = cluster.client.api
    created = api.create_container(
        cluster.image, command=["bash", f"{HOME}/start.sh"], name=name,
        hostname=None if network_mode else "yours-" + name.split("-yours-")[1],
        labels={"com.docker.compose.project": cluster.project, "com.docker.compose.service": service},
        host_config=api.create_host_config(init=True, network_mode=network_mode),
        networking_config=networking_config)
    cluster.client.containers.get(created["Id"]).put_archive("/", tar_of(
        {f"{HOME.lstrip('/')}/{n}": text for n, text in {**files, "start.sh": script}.items()}))
    return str(created["Id"])


def _start_split(cluster: TheirContainers) -> TheirContainers:
    """The split layout (the module docstring): ZooKeepers first, then the controller's broker, then the others."""
    api = cluster.client.api
    brokers = {}
    for az in (1, 2, 3):
        me = ADDRESSES[az - 1]
        zookeeper = _create(cluster, cluster.zookeeper_name(az), cluster.zookeeper_service(az),
                            START_ZOOKEEPER.format(home=HOME), _files(az), networking_config=(
                                api.create_networking_config({cluster.network: api.create_endpoint_config(
                                    ipv4_address=me)})))
        api.start(zookeeper)
        brokers[az] = _create(cluster, cluster.name(az), cluster.service(az), START_BROKER.format(home=HOME, me=me),
                              _files(az), network_mode=f"container:{zookeeper}")
    wait_for(lambda: sorted(zookeeper_mode(a, 2181) for a in ADDRESSES) == ["follower", "follower", "leader"],
             "ZooKeeper quorum")
    api.start(brokers[CONTROLLER + 1])
    admin = AdminClient({"bootstrap.servers": ADDRESSES[CONTROLLER] + ":9092"})
    wait_for(lambda: admin.list_topics(timeout=5).controller_id == CONTROLLER, f"broker {CONTROLLER} as controller")
    for az in (1, 2):
        api.start(brokers[az])
    return _ready(cluster)


def iptables_of(container: Any) -> str:
    """The filter table inside the container's network namespace, read from this machine (the container has no
    NET_ADMIN to read it itself)."""
    container.reload()
    pid = container.attrs["State"]["Pid"]
    return subprocess.run(["nsenter", f"--net=/proc/{pid}/ns/net", "iptables", "-S"], capture_output=True,
                          text=True, check=True).stdout


def look(cluster: TheirContainers) -> dict[str, Any]:
    """What a run must leave as it was: each container (id, state, start, pid, its configuration and network mode)
    and its iptables, the containers on the network, and the cluster's brokers, configurations, topics, end
    offsets, groups and committed offsets."""
    containers = {}
    for name in cluster.names():
        c = cluster.client.containers.get(name)
        state = c.attrs["State"]
        containers[c.name] = {"id": c.id, "status": state["Status"], "started": state["StartedAt"],
                              "pid": state["Pid"], "restarts": c.attrs["RestartCount"], "iptables": iptables_of(c),
                              "config": c.attrs["Config"], "network mode": c.attrs["HostConfig"]["NetworkMode"]}
    network = cluster.client.networks.get(cluster.network)
    on_network = sorted(c.name for c in network.containers)
    return {"containers": containers, "network": on_network, **look_kafka(cluster.bootstrap)}
