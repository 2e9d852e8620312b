"""A Kafka cluster in containers the test starts by itself with plain Docker calls, as a user's own would run: not
through faultline's runtime.

Three containers of the project's local Kafka image (`faultline/kafka:<version>`, no NET_ADMIN, no FAULTLINE_RUN)
named `<prefix>-yours-azN` on a network of their own (`<prefix>-yours`, internal, in 198.19.0.128/26): each runs
ZooKeeper and then its broker (ids 0..2, rack azN) from a script and configs copied in before it starts (the ssh
bed's own cluster's configs, tests/ssh/their_cluster.py). Broker 2 starts first (the others wait until it listens),
so it is the controller, as the catalogue's isolate-az-leader wants. A topic of the user's with records and a
consumer group with committed offsets are made on it. `look` is what a test compares before and after a run.
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
START = """set -e
java -Xms96m -Xmx96m -Dlog4j.configuration=file:{home}/log4j-zookeeper.properties -cp '/opt/kafka/libs/*' \\
  org.apache.zookeeper.server.quorum.QuorumPeerMain {home}/zoo.cfg >>{home}/zookeeper.out 2>&1 &
until (exec 3<>/dev/tcp/{me}/2181 && echo srvr >&3 && grep -qE '^Mode: (leader|follower)' <&3) 2>/dev/null; do
  sleep 0.5; done
{wait}exec java -Xms320m -Xmx320m -XX:+UseG1GC -Dlog4j.configuration=file:{home}/log4j-broker.properties \\
  -cp '/opt/kafka/libs/*' kafka.Kafka {home}/server.properties >>{home}/broker.out 2>&1
"""
# Brokers other than the controller start once it listens (2.7 elects its controller before it accepts).
WAIT = "until (exec 3<>/dev/tcp/{controller}/9092) 2>/dev/null; do sleep 0.5; done\n"


@dataclass
class TheirContainers:
    client: docker.DockerClient
    prefix: str
    image: str

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

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{a}:9092" for a in ADDRESSES)

    def container(self, az: int) -> Any:
        return self.client.containers.get(self.name(az))

    def stop(self) -> None:
        """Remove the test's containers and network (its own prefix only)."""
        for az in (1, 2, 3):
            with contextlib.suppress(docker.errors.NotFound):
                self.container(az).remove(force=True, v=True)
        with contextlib.suppress(docker.errors.NotFound):
            self.client.networks.get(self.network).remove()


def start_their_containers(client: docker.DockerClient, prefix: str, image: str) -> TheirContainers:
    cluster = TheirContainers(client, prefix, image)
    ipam = docker.types.IPAMConfig(pool_configs=[docker.types.IPAMPool(subnet=SUBNET, gateway=GATEWAY)])
    client.networks.create(cluster.network, driver="bridge", internal=True, ipam=ipam,
                           options={"com.docker.network.bridge.name": f"{prefix}-y"})
    zk = ",".join(f"{a}:2181" for a in ADDRESSES)
    api = client.api
    for az in (3, 1, 2):  # the controller's first
        me = ADDRESSES[az - 1]
        files = {"zoo.cfg": zoo_cfg(list(ADDRESSES)), "zk/myid": f"{az}\n",
                 "server.properties": server_properties(az - 1, me, zk),
                 "start.sh": START.format(home=HOME, me=me, wait="" if az - 1 == CONTROLLER else
                                          WAIT.format(controller=ADDRESSES[CONTROLLER])),
                 **{f"log4j-{role}.properties": LOG4J.format(role=role) for role in ("zookeeper", "broker")}}
        created = api.create_container(
            image, command=["bash", f"{HOME}/start.sh"], name=cluster.name(az), hostname=f"yours-az{az}",
            labels={"com.docker.compose.project": cluster.project, "com.docker.compose.service": cluster.service(az)},
            host_config=api.create_host_config(init=True),
            networking_config=api.create_networking_config({cluster.network: api.create_endpoint_config(
                ipv4_address=me)}))
        client.containers.get(created["Id"]).put_archive("/", tar_of(
            {f"{HOME.lstrip('/')}/{name}": text for name, text in files.items()}))
        api.start(created["Id"])
    wait_for(lambda: sorted(zookeeper_mode(a, 2181) for a in ADDRESSES) == ["follower", "follower", "leader"],
             "ZooKeeper quorum")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    wait_for(lambda: len(admin.list_topics(timeout=5).brokers) == 3, "every broker registered")
    assert admin.list_topics(timeout=5).controller_id == CONTROLLER
    user_data(cluster.bootstrap)
    return cluster


def iptables_of(container: Any) -> str:
    """The filter table inside the container's network namespace, read from this machine (the container has no
    NET_ADMIN to read it itself)."""
    container.reload()
    pid = container.attrs["State"]["Pid"]
    return subprocess.run(["nsenter", f"--net=/proc/{pid}/ns/net", "iptables", "-S"], capture_output=True,
                          text=True, check=True).stdout


def look(cluster: TheirContainers) -> dict[str, Any]:
    """What a run must leave as it was: each container (id, state, start, pid) and its iptables, the containers on
    the network, and the cluster's brokers, configurations, topics, end offsets, groups and committed offsets."""
    containers = {}
    for az in (1, 2, 3):
        c = cluster.container(az)
        state = c.attrs["State"]
        containers[c.name] = {"id": c.id, "status": state["Status"], "started": state["StartedAt"],
                              "pid": state["Pid"], "restarts": c.attrs["RestartCount"], "iptables": iptables_of(c)}
    network = cluster.client.networks.get(cluster.network)
    on_network = sorted(c.name for c in network.containers)
    return {"containers": containers, "network": on_network, **look_kafka(cluster.bootstrap)}
