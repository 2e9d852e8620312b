"""What a run learns of a cluster faultline did not make, and the one topic it makes and deletes there.

`learn` asks every broker of the inventory's node hosts its own metadata
(Metadata to that broker alone, `testbed.kafka.wire`) and the brokers'
configuration (DescribeConfigs: log directories, rack, the timeouts a story
depends on), and checks that the inventory and the cluster agree: the broker in
azN answers at its node host's address on the port faultline's clients use and
has id N-1, no broker lives outside the inventory's node hosts, the port is one
the inventory's `ports` names (so a partition cuts it), the metadata mode is the
spec's, and the run's topic does not exist. Anything else is one ClusterError
line naming the host, before the topic is made. Read-only.

`clean_own_topics` and `delete_leftover_topics` are `clean --inventory`'s: the topics of killed runs
(`faultline-fl<6 hex>`), no other. `create_topic` makes the run's topic (its name carries the run's prefix) with
the spec's topic-level settings (`min.insync.replicas`,
`unclean.leader.election.enable`, the flush policy); `delete_topic` removes it
and waits until no broker lists it.
Must never: create, alter or delete anything but the run's own topic.
"""

from __future__ import annotations

import logging
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from testbed.docker_inventory import load_any_inventory
from testbed.errors import ClusterError
from testbed.inventory import Inventory
from testbed.kafka import config as kcfg
from testbed.kafka.wire import broker_view, zookeeper_mode
from testbed.runtime.kinds import kind

if TYPE_CHECKING:
    from testbed.kafka.cluster import KafkaCluster

log = logging.getLogger("faultline.cluster")
# The broker keys learned (and kept in the run folder): where the data is, the rack, and the settings a story's
# timing depends on, which on a cluster of the user's are its own, not the spec's.
KEYS = ("log.dirs", "log.dir", "broker.rack", "zookeeper.session.timeout.ms", "broker.session.timeout.ms",
        "replica.lag.time.max.ms", "min.insync.replicas", "unclean.leader.election.enable")
DELETE_WAIT_S = 60.0
OWN_TOPIC = re.compile(r"^faultline-fl[0-9a-f]{6}$")  # a run's topic on a cluster of the user's (harness.run.own_topic)


def admin(cluster: KafkaCluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap, "socket.timeout.ms": 5000},
                       logger=logging.getLogger("rdkafka.admin"))


def learn(cluster: KafkaCluster) -> dict[str, Any]:
    """The cluster as its brokers describe it (see the module docstring); ClusterError on a disagreement."""
    port = kcfg.BROKER_PORT
    brokers: dict[str, dict[str, Any]] = {}
    views = {}
    for node in cluster.nodes:
        where = f"{node.name} ({node.address})"
        try:
            view = broker_view(node.address, port, None, timeout=5.0)
        except (OSError, ConnectionError, ValueError) as exc:
            raise ClusterError(f"{where}: no Kafka broker answers on {node.address}:{port} ({exc}); faultline's "
                               f"clients and views talk to each node host's broker there") from exc
        if view.broker is None:
            said = ", ".join(f"{b} at {hp}" for b, hp in sorted(view.brokers.items()))
            raise ClusterError(f"{where}: the broker answering on {node.address}:{port} advertises none of the "
                               f"cluster's brokers at that address (its metadata: {said})")
        if view.broker != node.broker_id:
            raise ClusterError(f"{where}: the broker there has id {view.broker}, but faultline's AZ model wants "
                               f"broker {node.broker_id} in {node.az} (azN holds broker N-1)")
        views[node.name] = view
        brokers[str(view.broker)] = {"node": node.name, "az": node.az, "address": f"{node.address}:{port}"}
    everyone = next(iter(views.values())).brokers
    outside = sorted(b for b in everyone if str(b) not in brokers)
    if outside:
        raise ClusterError(f"broker {outside[0]} at {everyone[outside[0]]} is on no node host of the inventory "
                           f"(a partition would not cut it): name its host as a node of an AZ")
    cut = cluster.plan.cut_ports
    if cut and str(port) not in cut:
        raise ClusterError(f"the brokers listen on {port}, which the inventory's ports ({', '.join(cut)}) do not "
                           f"name: a partition would not cut them")
    _check_metadata_mode(cluster)
    topics = sorted(set().union(*(v.partitions for v in views.values())))
    if cluster.topic in topics:
        raise ClusterError(f"topic {cluster.topic} already exists on the cluster; faultline makes only a topic of "
                           f"its own run")
    configs = describe_brokers(cluster, sorted(int(b) for b in brokers))
    for broker, info in brokers.items():
        info["config"] = configs[int(broker)]
        dirs = configs[int(broker)].get("log.dirs") or configs[int(broker)].get("log.dir") or ""
        info["log_dirs"] = [d.strip() for d in dirs.split(",") if d.strip()]
        info["rack"] = configs[int(broker)].get("broker.rack")
    controller = next(iter(views.values())).controller
    return {"brokers": brokers, "controller": controller, "topics": topics, "metadata": cluster.settings.metadata}


def _check_metadata_mode(cluster: KafkaCluster) -> None:
    if cluster.settings.kraft:
        return
    answers = {n.name: zookeeper_mode(n.address, kcfg.ZK_CLIENT_PORT, 2.0) for n in cluster.nodes}
    if not any(mode in ("leader", "follower", "standalone") for mode in answers.values()):
        raise ClusterError(f"the spec's metadata is zookeeper, but no ZooKeeper server answers on the node hosts' "
                           f"port {kcfg.ZK_CLIENT_PORT} ({', '.join(f'{h}: {m}' for h, m in answers.items())}); "
                           f"for a KRaft cluster say cluster.metadata: kraft")


def describe_brokers(cluster: KafkaCluster, ids: list[int]) -> dict[int, dict[str, str]]:
    """Each broker's values of `KEYS` (where set), by DescribeConfigs."""
    return {b: {k: v for k, v in entries.items() if k in KEYS and v is not None}
            for b, entries in describe_all(cluster, ids).items()}


def describe_all(cluster: KafkaCluster, ids: list[int]) -> dict[int, dict[str, str | None]]:
    """Every configuration entry of each broker, by DescribeConfigs (one broker per request: a broker's
    configuration is asked of that broker)."""
    client = admin(cluster)
    out: dict[int, dict[str, str | None]] = {}
    for broker in ids:
        resource = ConfigResource(ConfigResource.Type.BROKER, str(broker))
        try:
            entries = client.describe_configs([resource], request_timeout=20)[resource].result(timeout=30)
        except Exception as exc:  # KafkaException carries the broker's error
            raise ClusterError(f"describing broker {broker}'s configuration: {exc}") from exc
        out[broker] = {k: e.value for k, e in entries.items()}
    return out


def topic_configs(settings: kcfg.ClusterSettings) -> dict[str, str]:
    """The run's topic's own settings: the spec's that are topic-level (the cluster's defaults stay as they are)."""
    return {"min.insync.replicas": str(settings.min_insync_replicas),
            "unclean.leader.election.enable": str(settings.unclean_leader_election).lower(),
            **kcfg.flush_configs(settings)}


def create_topic(cluster: KafkaCluster) -> None:
    s = cluster.settings
    if s.replica_assignment is not None:
        new = NewTopic(s.topic, num_partitions=len(s.replica_assignment),
                       replica_assignment=[list(r) for r in s.replica_assignment], config=topic_configs(s))
    else:
        new = NewTopic(s.topic, num_partitions=s.partitions, replication_factor=s.replication_factor,
                       config=topic_configs(s))
    client = admin(cluster)  # held until the answer: a client destroyed first fails its futures
    future = client.create_topics([new], operation_timeout=20, request_timeout=25)[s.topic]
    try:
        future.result(timeout=30)
    except Exception as exc:  # KafkaException carries the broker's error
        raise ClusterError(f"creating topic {s.topic}: {exc}") from exc


def delete_topic(cluster: KafkaCluster) -> None:
    """Delete the run's topic and wait until the cluster no longer lists it; a topic already gone is fine."""
    client = admin(cluster)
    future = client.delete_topics([cluster.topic], operation_timeout=20, request_timeout=25)[cluster.topic]
    try:
        future.result(timeout=30)
    except Exception as exc:
        if "UNKNOWN_TOPIC" not in str(exc):
            raise ClusterError(f"deleting topic {cluster.topic}: {exc}") from exc
    deadline = time.monotonic() + DELETE_WAIT_S
    while cluster.topic in client.list_topics(timeout=10).topics:
        if time.monotonic() > deadline:
            raise ClusterError(f"topic {cluster.topic} is still listed {DELETE_WAIT_S:.0f} s after its deletion")
        time.sleep(0.5)
    log.info("deleted the run's topic %s", cluster.topic)


def clean_own_topics(path: str | Path, prefix: str | None = None) -> list[str]:
    """`clean --inventory PATH`: on a cluster of the user's (`provision: false`), the topics killed runs (or the run
    ``prefix``) made there (their names only); nothing for an inventory faultline provisions."""
    inventory = load_any_inventory(path)
    if inventory.provision:
        return []
    if isinstance(inventory, Inventory):
        nodes = [h.address for h in inventory.hosts if h.role == "node"]
    else:  # the containers' addresses, as their daemon says
        nodes = [h.address for h in kind("docker-existing").address_plan("", len(inventory.nodes), str(path)).nodes]
    return delete_leftover_topics(",".join(f"{address}:{kcfg.BROKER_PORT}" for address in nodes), prefix)


def delete_leftover_topics(bootstrap: str, prefix: str | None = None) -> list[str]:
    """`clean --inventory` of a cluster of the user's: delete the topics killed runs left (`OWN_TOPIC`'s names only,
    never another; with ``prefix``, that run's only); what was deleted, or why the brokers could not be asked."""
    client = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 5000},
                         logger=logging.getLogger("rdkafka.admin"))
    try:
        names = sorted(t for t in client.list_topics(timeout=10).topics
                       if OWN_TOPIC.match(t) and (prefix is None or t.endswith(f"-{prefix}")))
        if not names:
            return []
        for future in client.delete_topics(names, operation_timeout=20, request_timeout=25).values():
            future.result(timeout=30)
    except Exception as exc:  # KafkaException: the brokers' words
        return [f"topics of killed runs on {bootstrap}: not deleted ({exc})"]
    return [f"topic {name} on {bootstrap}" for name in names]
