"""A ZooKeeper cluster's migration to KRaft (KIP-866, Kafka 3.4 to 3.9): the configs of each phase, the KRaft
controllers started beside the ZooKeeper servers, and the moment the metadata is migrated.

The phases, as 3.9's "ZooKeeper to KRaft Migration" prescribes (each driven by `nemesis.migrate`):
1. `controllers`: one KRaft controller per node (node id broker id + 100, the static quorum
   `controller.quorum.voters`, as a KRaft cluster's: testbed.kafka.config), its storage formatted with the
   ZooKeeper cluster's id (`/cluster/id`), started with `zookeeper.metadata.migration.enable=true`,
   `zookeeper.connect` and the brokers' listener (`inter.broker.listener.name`, to send them LeaderAndIsr and
   UpdateMetadata).
2. `migrating`: each broker restarted, still in ZooKeeper mode, with the migration enabled, the quorum's voters,
   the CONTROLLER listener's name and protocol, and `inter.broker.protocol.version` at the version's own (3.4 on
   is required). Once every broker has registered with the quorum the active controller copies ZooKeeper's
   metadata into its log and says `MIGRATED_LINE` in its server.log; from then it is the cluster's controller
   (ZooKeeper's /controller names it, with its `kraftControllerEpoch`) and writes every change to ZooKeeper too.
3. `kraft`: each broker restarted as a KRaft broker (`process.roles=broker`, `node.id` its broker id, no
   `zookeeper.*`: `KafkaCluster.set_broker(..., kraft=True)`).
4. `finalized`: each controller restarted without the migration keys (the active one last); ZooKeeper is no
   longer written and stays up, unused.

Must never: format a directory that holds a controller's data, or touch a broker's data (a broker keeps its log
directories through every phase; only its server.properties changes, while it is down).
"""

from __future__ import annotations

import json
import logging
import re
from functools import partial
from typing import TYPE_CHECKING

from kazoo.exceptions import KazooException, NoNodeError

from testbed.addressing import AddressPlan, Host
from testbed.dist.versions import protocol_version
from testbed.errors import ClusterError, RuntimeFailure
from testbed.kafka import config as kcfg
from testbed.kafka import kraft
from testbed.kafka.waiting import wait_for
from testbed.kafka.zk import zk_session

if TYPE_CHECKING:
    from testbed.kafka.cluster import KafkaCluster

log = logging.getLogger("faultline.cluster")
# The active controller's server.log once ZooKeeper's metadata is in its log (KRaftMigrationDriver, 3.9.1's
# kafka-metadata jar; 3.4 to 3.6 spell it "Zookeeper").
MIGRATED_LINE = "Completed migration of metadata from ZooKeeper to KRaft"
MIGRATED_PATTERN = r"Completed migration of metadata from Zoo[kK]eeper to KRaft"
ROLES = ("zookeeper", "controller", "broker")  # a migrating node's JVMs, the quorums first


def controller_properties(plan: AddressPlan, node: Host, settings: kcfg.ClusterSettings, log_dir: str,
                          migrating: bool) -> str:
    """`node`'s KRaft controller, as a KRaft cluster's separate controller; `migrating`: with the migration keys."""
    text = kcfg.controller_properties(plan, node, settings, log_dir)
    if not migrating:
        return text
    return text + "\n".join([
        "zookeeper.metadata.migration.enable=true",
        f"zookeeper.connect={kcfg.zookeeper_connect(plan)}",
        f"zookeeper.session.timeout.ms={settings.zookeeper_session_timeout_ms}",
        "inter.broker.listener.name=PLAINTEXT"]) + "\n"


def migrating_broker_keys(plan: AddressPlan, settings: kcfg.ClusterSettings, version: str) -> dict[str, str]:
    """What a ZooKeeper-mode broker adds to take part in the migration (phase 2)."""
    return {"zookeeper.metadata.migration.enable": "true",
            "controller.quorum.voters": kcfg.quorum_voters(plan, settings),
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "inter.broker.protocol.version": protocol_version(version)}


def zookeeper_cluster_id(cluster: KafkaCluster) -> str:
    """The id the ZooKeeper-mode brokers wrote to /cluster/id (the controllers are formatted with it)."""
    try:
        with zk_session(cluster.zk_connect) as zk:
            data, _ = zk.get("/cluster/id")
    except (KazooException, NoNodeError) as exc:
        raise ClusterError(f"reading /cluster/id from ZooKeeper at {cluster.zk_connect}: {exc!r}") from exc
    found = json.loads(data.decode()).get("id")
    if not isinstance(found, str) or not found:
        raise ClusterError(f"ZooKeeper's /cluster/id holds no id: {data!r}")
    return found


def kraft_leads(cluster: KafkaCluster) -> bool:
    """Whether the KRaft quorum is the cluster's controller: from the `migrated` phase on, and before it once
    ZooKeeper's /controller names a KRaft controller (its `kraftControllerEpoch`; False when ZooKeeper does not
    say). Never before a migration started."""
    if cluster.migration_phase is None:
        return False
    if cluster.migration_phase not in ("controllers", "migrating"):
        return True
    try:
        with zk_session(cluster.zk_connect, 2.0) as zk:
            data, _ = zk.get("/controller")
        return "kraftControllerEpoch" in json.loads(data.decode())
    except (KazooException, NoNodeError, ClusterError, ValueError):
        return False


def write_controller_config(cluster: KafkaCluster, node: Host, migrating: bool) -> None:
    """`node`'s controller config (with or without the migration keys), its log4j and directories, put on its host
    (read at the controller's next start)."""
    f = cluster.node_folder(node)
    on_host = partial(cluster.runtime.host_path, node)
    for d in (f.data("controller"), f.logs("controller")):
        d.mkdir(parents=True, exist_ok=True)
    f.config("controller").write_text(controller_properties(cluster.plan, node, cluster.settings,
                                                            on_host(f.data("controller")), migrating))
    f.log4j("controller").write_text(kcfg.log4j_properties(on_host(f.logs("controller"))))
    for path in (f.config_dir, f.data("controller"), f.logs("controller")):
        cluster.runtime.put(node, path)


def start_controllers(cluster: KafkaCluster, timeout: float, interval: float = 0.5) -> int:
    """Phase 1: the controllers' configs written, their storage formatted with ZooKeeper's cluster id, each started
    (the cluster's roles now hold them); returns the active controller's broker id once the quorum has one with
    every voter caught up."""
    cluster_id = zookeeper_cluster_id(cluster)
    for node in cluster.nodes:
        write_controller_config(cluster, node, migrating=True)
    kraft.format_storage(cluster, cluster_id, roles=("controller",))
    cluster.roles = ROLES  # type: ignore[assignment]  # from here collect, power and liveness checks see them
    cluster.migration_phase = "controllers"
    for node in cluster.nodes:
        cluster.start(node, "controller")
    return kraft.wait_quorum(cluster, timeout, interval)


def wait_rejoined(cluster: KafkaCluster, node: Host, timeout: float, interval: float) -> int:
    """Once `node`'s controller, started again, answers DescribeQuorum and the quorum has an active controller with
    every voter caught up: that controller's broker id. (The quorum alone would say ready at once: the leader
    still counts the restarted voter's offset from before its stop.)"""
    def rejoined() -> int | None:
        if kraft.quorum_views(cluster, 1.0).get(node.name) is None:
            return None
        return kraft.quorum_ready(cluster)
    found: int = wait_for(f"{node.name}'s KRaft controller back in the quorum", rejoined, timeout, interval)
    return found


def migrated(cluster: KafkaCluster) -> str | None:
    """The node whose controller's server.log says the metadata was migrated (`MIGRATED_LINE`), or None."""
    for node in cluster.nodes:
        logs = cluster.node_folder(node).logs("controller")
        try:
            cluster.runtime.fetch(node, logs)
            text = (logs / "server.log").read_text(errors="replace")
        except (RuntimeFailure, OSError):
            continue
        if re.search(MIGRATED_PATTERN, text):
            return node.name
    return None
