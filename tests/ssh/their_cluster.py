"""A Kafka cluster the ssh test bed starts by itself, as a user's own would run: not through faultline.

On each node host of the bed: Kafka's jars under /opt/theirs/libs, a zoo.cfg and
a server.properties written here, and start scripts that launch ZooKeeper and
the broker with plain `java` (no FAULTLINE_RUN in their environment, nothing
under faultline's root), each recording its pid in /opt/theirs/<role>.pid; the
inventory's commands (`commands`) are the ones a user would give (kill by that
pid, the start script). `look` is what a test compares before and after a run:
the pids, every broker's configuration, every topic with its configuration and
end offsets, the consumer groups' committed offsets, every host's iptables and
what is under faultline's root on the node hosts.
"""

from __future__ import annotations

import io
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from testbed.dist.kafka import ensure_kafka, libs_dir
from testbed.kafka.wire import zookeeper_mode
from testbed.sshbed import SshTestBed

HOME = "/opt/theirs"
USER_TOPIC, USER_GROUP = "orders", "billing"
JAVA = {"zookeeper": ("-Xms128m -Xmx128m", "org.apache.zookeeper.server.quorum.QuorumPeerMain", "zoo.cfg"),
        "broker": ("-Xms384m -Xmx384m", "kafka.Kafka", "server.properties")}
LOG4J = ("log4j.rootLogger=INFO, file\nlog4j.appender.file=org.apache.log4j.FileAppender\n"
         "log4j.appender.file.File=" + HOME + "/{role}.log\nlog4j.appender.file.layout=org.apache.log4j.PatternLayout\n"
         "log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n\n")


@dataclass
class TheirCluster:
    bed: SshTestBed
    nodes: list[str]  # the node hosts' addresses, az1 first

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{a}:9092" for a in self.nodes)

    def commands(self) -> dict[str, dict[str, str]]:
        """The inventory's `commands` of a node host, as a user would write them."""
        return {role: {"kill": f"kill -9 $(cat {HOME}/{role}.pid)", "stop": f"kill $(cat {HOME}/{role}.pid)",
                       "start": f"sh {HOME}/start-{role}.sh", "pause": f"kill -STOP $(cat {HOME}/{role}.pid)",
                       "resume": f"kill -CONT $(cat {HOME}/{role}.pid)"} for role in JAVA}

    def start(self, role: str, address: str) -> None:
        self.bed.exec(address, f"sh {HOME}/start-{role}.sh")

    def pids(self) -> dict[str, int]:
        """Each node's ZooKeeper and broker pid, each checked alive."""
        out = {}
        for i, address in enumerate(self.nodes, 1):
            for role in JAVA:
                pid = int(self.bed.exec(address, f"cat {HOME}/{role}.pid").strip())
                self.bed.exec(address, f"kill -0 {pid}")
                out[f"az{i}/{role}"] = pid
        return out

    def stop(self) -> None:
        for address in self.nodes:
            self.bed.exec(address, f"for r in broker zookeeper; do [ -f {HOME}/$r.pid ] && kill -9 $(cat {HOME}/$r.pid)"
                                   f"; done; rm -rf {HOME}", check=False)


def start_their_cluster(bed: SshTestBed, version: str, controller: int) -> TheirCluster:
    """ZooKeeper and a broker on each node host of the bed; broker `controller` started first (so it is the
    controller, as the catalogue's spec would have it), then the others; a topic and a group of the user's."""
    nodes = sorted((a for a, (_, role) in bed.roles.items() if role == "node"), key=lambda a: bed.roles[a][0])
    jars = _jars(version)
    cluster = TheirCluster(bed, nodes)
    zk = ",".join(f"{a}:2181" for a in nodes)
    for i, address in enumerate(nodes, 1):
        files = {"zoo.cfg": zoo_cfg(nodes), "zk/myid": f"{i}\n", "server.properties": server_properties(i - 1, address, zk)}
        for role, (heap, main, config) in JAVA.items():
            files[f"log4j-{role}.properties"] = LOG4J.format(role=role)
            files[f"start-{role}.sh"] = (
                f"cd {HOME} && setsid nohup java {heap} -XX:+UseG1GC "
                f"-Dlog4j.configuration=file:{HOME}/log4j-{role}.properties -cp '{HOME}/libs/*' {main} "
                f"{HOME}/{config} >>{HOME}/{role}.out 2>&1 </dev/null &\necho $! > {HOME}/{role}.pid\n")
        container = bed.containers[address]
        container.put_archive("/", jars)
        container.put_archive("/", tar_of({f"{HOME.lstrip('/')}/{name}": text for name, text in files.items()}))
    for address in nodes:
        cluster.start("zookeeper", address)
    wait_for(lambda: sorted(zookeeper_mode(a, 2181) for a in nodes) == ["follower", "follower", "leader"],
          "ZooKeeper quorum")
    cluster.start("broker", nodes[controller])
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    wait_for(lambda: admin.list_topics(timeout=5).controller_id == controller, f"broker {controller} as controller")
    for i, address in enumerate(nodes):
        if i != controller:
            cluster.start("broker", address)
    wait_for(lambda: len(admin.list_topics(timeout=5).brokers) == len(nodes), "every broker registered")
    user_data(cluster.bootstrap)
    return cluster


def user_data(bootstrap: str) -> None:
    """A topic of the user's with records in it, and a consumer group that committed offsets on it."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(USER_TOPIC, num_partitions=3, replication_factor=3,
                                  config={"retention.ms": "86400000"})])[USER_TOPIC].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(300):
        producer.produce(USER_TOPIC, value=f"order-{i}".encode(), partition=i % 3)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": USER_GROUP,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(USER_TOPIC, p, 0) for p in range(3)])
    read = 0
    deadline = time.monotonic() + 60
    while read < 200 and time.monotonic() < deadline:
        if (message := consumer.poll(1.0)) is not None and message.error() is None:
            read += 1
    consumer.commit(asynchronous=False)
    consumer.close()


def look(cluster: TheirCluster) -> dict[str, Any]:
    """What a run must leave as it was (see the module docstring)."""
    bed = cluster.bed
    hosts = {a: {"iptables": bed.exec(a, "iptables -S"),
                 "faultline root": bed.exec(a, "ls -a /var/lib/faultline /var/lib/faultline/runs 2>&1 || true")
                 if bed.roles[a][1] == "node" else ""} for a in bed.containers}
    return {"pids": cluster.pids(), **look_kafka(cluster.bootstrap), "hosts": hosts}


def look_kafka(bootstrap: str) -> dict[str, Any]:
    """The cluster's side of what a run must leave as it was: brokers, every broker's and topic's configuration,
    the topics' end offsets, the consumer groups and the user's group's committed offsets."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    metadata = admin.list_topics(timeout=10)
    brokers = sorted(metadata.brokers)
    configs = {}
    for broker in brokers:  # one broker per request (librdkafka's rule)
        [(_, future)] = admin.describe_configs([ConfigResource(ConfigResource.Type.BROKER, str(broker))]).items()
        configs[f"broker {broker}"] = {k: e.value for k, e in future.result(30).items()}
    topics = sorted(metadata.topics)
    configs |= {f"topic {r.name}": {k: e.value for k, e in f.result(30).items()} for r, f in admin.describe_configs(
        [ConfigResource(ConfigResource.Type.TOPIC, t) for t in topics]).items()}
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": USER_GROUP})
    ends = {f"{t}-{p}": consumer.get_watermark_offsets(TopicPartition(t, p), timeout=10)
            for t in topics if not t.startswith("__") for p in metadata.topics[t].partitions}
    committed = {f"{tp.topic}-{tp.partition}": tp.offset for tp in consumer.committed(
        [TopicPartition(USER_TOPIC, p) for p in range(3)], timeout=10)}
    consumer.close()
    groups = sorted(g.group_id for g in admin.list_consumer_groups().result(30).valid)
    return {"brokers": brokers, "topics": topics, "configs": configs, "end offsets": ends, "groups": groups,
            "committed": committed}


def _jars(version: str) -> bytes:
    ensure_kafka(version)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(str(libs_dir(version)), arcname=f"{HOME.lstrip('/')}/libs")
    return buffer.getvalue()


def tar_of(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for directory in sorted({str(p) for name in files for p in Path(name).parents if str(p) != "."}):
            info = tarfile.TarInfo(directory)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def zoo_cfg(nodes: list[str]) -> str:
    servers = "".join(f"server.{i}={a}:2888:3888\n" for i, a in enumerate(nodes, 1))
    return (f"tickTime=500\ninitLimit=20\nsyncLimit=10\nminSessionTimeout=1000\nmaxSessionTimeout=60000\n"
            f"dataDir={HOME}/zk\nclientPort=2181\n4lw.commands.whitelist=srvr,ruok\nadmin.enableServer=false\n"
            f"{servers}")


def server_properties(broker_id: int, address: str, zk: str) -> str:
    props = {"broker.id": broker_id, "broker.rack": f"az{broker_id + 1}", "listeners": f"PLAINTEXT://{address}:9092",
             "log.dirs": f"{HOME}/kafka-logs", "zookeeper.connect": zk, "zookeeper.session.timeout.ms": 6000,
             "zookeeper.connection.timeout.ms": 30000, "replica.lag.time.max.ms": 10000,
             "offsets.topic.replication.factor": 3, "offsets.topic.num.partitions": 3,
             "transaction.state.log.replication.factor": 3, "transaction.state.log.min.isr": 2,
             "auto.create.topics.enable": "false", "group.initial.rebalance.delay.ms": 0,
             "num.network.threads": 2, "num.io.threads": 4, "num.replica.fetchers": 1}
    return "".join(f"{k}={v}\n" for k, v in props.items())


def wait_for(check: Any, what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if check():
                return
        except Exception:  # not up yet: the client's errors say so
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"the bed's own cluster: no {what} within {timeout:.0f} s")
        time.sleep(0.5)
