"""A new cluster's bring-up: every process started as early as is safe, and where its seconds went.

The order (`bring_up`): configs written; every ZooKeeper server started, and
the brokers only once all of them serve in one quorum; with a wanted controller
(`cluster.controller`), that broker starts alone and the others the moment
/controller names it (the first broker to register wins the /controller
znode). Then the brokers registered and known to each other, the topic
created, and its partitions led with a full ISR agreed by every broker.

Why not start the brokers with the ZooKeeper servers (it saved ~0.5 s): their
first writes (/cluster/id, /brokers) could then reach a server that joined the
quorum late by a snapshot sync instead of through its fsynced transaction log;
that snapshot is not fsynced, so a power cut (unsyncfs) took those znodes from
it, and after the cut brokers found no /cluster/id (seen in power-cut-cluster).
Every write must reach every server's transaction log, as on a real cluster
whose ensemble was up long before its brokers.

A broker whose ZooKeeper client finds no quorum within
zookeeper.connection.timeout.ms exits before it has done anything (no
registration, no log directory opened: `KafkaServer.startup` connects first);
during bring-up only, such a broker is started again (`BrokerRestarts`), so a
quorum that breaks costs time, never the run. Every read of ZooKeeper goes
through one session held for the whole bring-up, not one per poll.
KRaft (`cluster.metadata: kraft`): configs written and storage formatted, the
controllers started (the wanted node's first: testbed.kafka.kraft.start_quorum)
until one leads with every voter caught up, then the brokers, registered and
unfenced, then the topic as above.
Must never: restart a process outside bring-up, restart a broker that exited
for any other reason, or start a broker before every ZooKeeper server serves.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from testbed.addressing import Host
from testbed.errors import ClusterError, RuntimeFailure
from testbed.kafka import config as kcfg
from testbed.kafka.kraft import start_quorum
from testbed.kafka.waiting import wait_for
from testbed.kafka.zk import read_snapshot, zk_session

if TYPE_CHECKING:
    from testbed.kafka.cluster import KafkaCluster

log = logging.getLogger("faultline.cluster")
# What a broker's server.log says when its ZooKeeper client gave up waiting for a quorum at start-up.
ZK_CONNECT_TIMEOUT = "ZooKeeperClientTimeoutException"
MAX_RESTARTS = 3  # per broker, per bring-up
POLL_S = 0.05  # ZooKeeper and metadata polls of the bring-up: cheap reads on one session or one socket


class StepClock:
    """Seconds of each named step, each from the end of the one before."""

    def __init__(self) -> None:
        self.steps: dict[str, float] = {}
        self._mark = time.monotonic()

    def step(self, name: str) -> None:
        now = time.monotonic()
        self.steps[name] = now - self._mark
        self._mark = now


class BrokerRestarts:
    """Start again a broker that exited because its ZooKeeper client timed out waiting for a quorum."""

    def __init__(self, cluster: KafkaCluster) -> None:
        self.cluster = cluster
        self.counts: dict[str, int] = {}

    def __call__(self, node: Host) -> bool:
        """Whether the broker of `node` (found exited) was started again."""
        if self.counts.get(node.name, 0) >= MAX_RESTARTS or not self._timed_out_on_zookeeper(node):
            return False
        self.counts[node.name] = self.counts.get(node.name, 0) + 1
        log.info("broker %s exited waiting for a ZooKeeper quorum at start-up; starting it again (%d)",
                              node.broker_id, self.counts[node.name])
        self.cluster.start(node, "broker")
        return True

    def _timed_out_on_zookeeper(self, node: Host) -> bool:
        cluster = self.cluster
        if cluster.processes.exit_status(cluster.process_name(node, "broker")) != 1:
            return False  # Kafka exits 1 on a fatal start-up error; a signal or anything else is not this
        logs = cluster.node_folder(node).logs("broker")
        try:
            cluster.runtime.fetch(node, logs)
            lines = (logs / "server.log").read_text(errors="replace").splitlines()
        except (RuntimeFailure, OSError):
            return False
        return any(ZK_CONNECT_TIMEOUT in line for line in lines[-40:])


def bring_up(cluster: KafkaCluster, timeout: float) -> dict[str, float]:
    """Start every process of a new cluster and create its topic; return the seconds of each step."""
    clock = StepClock()
    cluster.write_configs()
    clock.step("configs")
    deadline = time.monotonic() + timeout
    wanted = cluster.settings.controller
    restarts = BrokerRestarts(cluster)
    cluster.readiness.restart_exited_broker = restarts
    try:
        if cluster.settings.kraft:
            _bring_up_kraft(cluster, clock, deadline)
            return clock.steps
        for node in cluster.nodes:
            cluster.start(node, "zookeeper")
        cluster.readiness.wait_quorum(deadline - time.monotonic(), interval=POLL_S)
        clock.step("quorum")
        for node in [cluster.node(wanted)] if wanted is not None else cluster.nodes:
            cluster.start(node, "broker")
        with zk_session(cluster.zk_connect, max(1.0, deadline - time.monotonic())) as zk:
            if wanted is not None:
                wait_for(f"broker {wanted} to become controller", lambda: _controller_is(cluster, zk, wanted),
                         deadline - time.monotonic(), interval=POLL_S)
                clock.step("controller")
                for node in cluster.nodes:
                    if cluster.process(node, "broker") is None:
                        cluster.start(node, "broker")
            cluster.readiness.wait_brokers(deadline - time.monotonic(), zk=zk, interval=POLL_S)
            clock.step("brokers")
        create_topics(cluster)
        clock.step("topic created")
        cluster.readiness.wait_topic_ready(deadline - time.monotonic(), interval=POLL_S)
        clock.step("topic ready")
    finally:
        cluster.readiness.restart_exited_broker = None
    return clock.steps


def _bring_up_kraft(cluster: KafkaCluster, clock: StepClock, deadline: float) -> None:
    start_quorum(cluster, cluster.settings.controller, deadline, POLL_S)
    clock.step("quorum")
    for node in cluster.nodes:
        if cluster.process(node, "broker") is None:
            cluster.start(node, "broker")
    cluster.readiness.wait_brokers(deadline - time.monotonic(), interval=POLL_S)
    clock.step("brokers")
    create_topics(cluster)
    clock.step("topic created")
    cluster.readiness.wait_topic_ready(deadline - time.monotonic(), interval=POLL_S)
    clock.step("topic ready")


def _controller_is(cluster: KafkaCluster, zk: KazooClient, broker_id: int) -> bool | None:
    cluster.readiness.check_processes()
    return True if read_snapshot(zk, cluster.zk_connect)["controller"] == broker_id else None


def create_topics(cluster: KafkaCluster) -> None:
    """Create the run's topics (`topic` and any `extra_topics`), each with the same layout and settings."""
    s = cluster.settings
    # librdkafka's own lines (e.g. a BGQUEUE notice on close) through logging: harness.log, not the terminal.
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "socket.timeout.ms": 5000},
                        logger=logging.getLogger("rdkafka.admin"))
    new = []
    for topic in s.topics:
        if s.replica_assignment is not None:
            new.append(NewTopic(topic, num_partitions=len(s.replica_assignment),
                                replica_assignment=[list(r) for r in s.replica_assignment],
                                config=kcfg.flush_configs(s)))
        else:
            new.append(NewTopic(topic, num_partitions=s.partitions, replication_factor=s.replication_factor,
                                config=kcfg.flush_configs(s)))
    futures = admin.create_topics(new, operation_timeout=20, request_timeout=25)
    for topic in s.topics:
        try:
            futures[topic].result(timeout=30)
        except Exception as exc:  # KafkaException carries the broker's error
            raise ClusterError(f"creating topic {topic}: {exc}") from exc
