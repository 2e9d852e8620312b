"""ZooKeeper and broker configuration for one node, generated from the cluster settings.

Pure functions of the settings and the address plan: no I/O besides writing
the files `write_node_configs` is asked to write.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from testbed.addressing import AddressPlan, Host
from testbed.dist.kafka import DEFAULT_VERSION
from testbed.dist.versions import ZOOKEEPER_35_KEYS, release
from testbed.runtime.kinds import DEFAULT_KIND, default_network

ZK_CLIENT_PORT = 2181
ZK_PEER_PORT = 2888
ZK_ELECTION_PORT = 3888
BROKER_PORT = 9092
# The second listener (PROXIED) that only a producer with a request-holding proxy uses (workloads/holdproxy.py):
# each broker listens on PROXIED_PORT and advertises 127.0.0.1:PROXY_LOOPBACK_BASE + its id, the proxy's port in
# the producer's own loopback, so every Metadata and FindCoordinator answer that producer gets points at its proxy.
PROXIED_PORT = 9094
PROXY_LOOPBACK_BASE = 19090
# The AZ listeners (AZ1..AZ9, only with `az_listeners`: faultline.testing's per-AZ bootstrap): broker b listens for
# AZ i on AZ_LISTENER_BASE + i and advertises AZ i's client host at AZ_PROXY_BASE + 10 * i + b, where the AZ's
# forwarding proxy (testbed.kafka.az_proxy) listens and carries the connection to the broker from inside the AZ.
AZ_LISTENER_BASE = 9100
AZ_PROXY_BASE = 19100
CONTROLLER_PORT = 9093  # KRaft: each controller's listener (CONTROLLER), the quorum's and the brokers' way to it
# KRaft, separate controllers: the controller beside broker N is node N + CONTROLLER_ID_BASE (combined: N itself).
CONTROLLER_ID_BASE = 100


@dataclass(frozen=True)
class ClusterSettings:
    """Everything about the cluster a test spec may set. Defaults are Kafka 2.7's unless noted."""

    nodes: int = 3
    runtime: str = DEFAULT_KIND  # where the hosts live (testbed.runtime.kinds.KIND_NAMES)
    kafka_version: str = DEFAULT_VERSION
    # Where the cluster's metadata lives: "zookeeper" (one ZooKeeper server per node) or "kraft" (one KRaft
    # controller per node, or, with kraft_controllers "combined", the broker JVM is also the controller).
    metadata: str = "zookeeper"
    kraft_controllers: str = "separate"
    # KRaft: "static" (controller.quorum.voters) or "dynamic" (KIP-853, 3.9 on: controller.quorum.bootstrap.servers,
    # the voters formatted in with --initial-controllers, and changed by the remove/add-controller faults).
    kraft_quorum: str = "static"
    network: str = default_network(DEFAULT_KIND)
    topic: str = "faultline"
    # Further topics (a consume-transform-produce pipeline's input), made like `topic`: created at bring-up,
    # settled, drained in every view, observed and dumped per topic.
    extra_topics: tuple[str, ...] = ()
    partitions: int = 3
    replication_factor: int = 3
    min_insync_replicas: int = 2
    unclean_leader_election: bool = False
    replica_lag_time_max_ms: int = 30000
    # ZooKeeper: zookeeper.session.timeout.ms. KRaft: broker.session.timeout.ms, its counterpart (how long the
    # active controller waits for a cut-off broker's heartbeat before it fences it and moves its leaderships).
    zookeeper_session_timeout_ms: int = 18000
    broker_heap_mb: int = 512
    zookeeper_heap_mb: int = 256
    # Replica placement, as broker ids per partition; None lets Kafka choose.
    replica_assignment: tuple[tuple[int, ...], ...] | None = None
    # The broker that must be controller once the cluster is up (started first); None lets them race.
    controller: int | None = None
    broker_overrides: dict[str, str] = field(default_factory=dict)
    # Kafka's flush policy (None: Kafka's default, never forced; durability comes from replication):
    # fsync a partition's log after this many messages / this many ms (flush.messages / flush.ms).
    flush_messages: int | None = None
    flush_ms: int | None = None
    # Log directories per broker (JBOD, KIP-112): with more than one, log.dirs lists dir-0 .. dir-N-1 inside the
    # node's kafka-data (one unsyncfs mount: a disk fault fails one of them by its path), so a failed directory is
    # one of several and the broker keeps serving the partitions of the others.
    log_dirs: int = 1
    zookeeper_force_sync: bool = True  # ZooKeeper's forceSync: fsync its transaction log before acknowledging
    # A power-off drops every write a node had not fsynced, where the runtime can (data dirs on unsyncfs).
    lose_unsynced_writes: bool = True
    # The spec's nemesis may power nodes off (a `power-off` event, or chaos that can draw one): what a runtime whose
    # hosts differ (ssh) checks before a run, and prepares its power-offs for.
    power_offs: bool = False
    # Derived from the nemesis (its `rolling-upgrade`s): the versions the brokers are upgraded to mid-run, whose jars
    # and Java are fetched before anything starts.
    upgrade_versions: tuple[str, ...] = ()
    # Derived from a KRaft `rolling-downgrade`: metadata.log.max.snapshot.interval.ms of every KRaft process, so that
    # each holds a snapshot past the lowered level before the roll (testbed.kafka.snapshots); None: Kafka's hour.
    metadata_snapshot_interval_ms: int | None = None
    # Derived from `clients.confluent_kafka` and the nemesis's `upgrade-client`s: the client versions a runtime whose
    # client hosts make their own venvs (ssh) checks at preflight and makes at bring-up.
    client_versions: tuple[str, ...] = ()
    # The node processes whose clocks the spec's nemesis shifts (its `clock` faults' roles: "broker", "zookeeper" for
    # the metadata quorum's process): each such JVM starts with its wall clock on an offset file
    # (testbed.runtime.clocks), at 0 until a fault moves it. The others start without libfaketime.
    shifted_clocks: tuple[str, ...] = ()
    # The ssh runtime's hosts (testbed.inventory) and the known_hosts file vouching for them (None: trust on first use).
    inventory: str | None = None
    known_hosts: str | None = None
    # Derived from the workloads (a producer with `proxy: true`): the brokers' second listener, PROXIED.
    proxied_listener: bool = False
    # One listener per AZ whose advertised addresses are that AZ's forwarding proxy (faultline.testing's bootstrap).
    az_listeners: bool = False
    # False: the inventory's node hosts run a cluster of the user's (inventory `provision: false`): faultline
    # installs and configures nothing there and makes only its own topic (testbed.kafka.existing).
    provision: bool = True

    @property
    def topics(self) -> tuple[str, ...]:
        """Every topic of the run: `topic` first, then `extra_topics`."""
        return (self.topic, *self.extra_topics)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        if not self.extra_topics:  # a run of one topic keeps its manifest as it was
            del out["extra_topics"]
        for flag in ("proxied_listener", "az_listeners", "shifted_clocks"):  # a run without them keeps its manifest as it was
            if not out[flag]:
                del out[flag]
        if self.provision:
            del out["provision"]
        for derived in ("upgrade_versions", "client_versions"):  # a run without them keeps its manifest as it was
            if not out[derived]:
                del out[derived]
        if self.kraft_quorum == "static":
            del out["kraft_quorum"]
        if self.metadata_snapshot_interval_ms is None:
            del out["metadata_snapshot_interval_ms"]
        return out

    @property
    def kraft(self) -> bool:
        return self.metadata == "kraft"

    @property
    def roles(self) -> tuple[str, ...]:
        """The JVMs of each node, the metadata quorum's first: its ZooKeeper server or KRaft controller and its
        broker, or (KRaft, combined) the one broker that is also a controller."""
        if not self.kraft:
            return ("zookeeper", "broker")
        return ("broker",) if self.kraft_controllers == "combined" else ("controller", "broker")

    @property
    def quorum_role(self) -> str | None:
        """The process a fault's `role: zookeeper` names: the node's ZooKeeper server or KRaft controller
        (None: combined KRaft, where the controller is the broker's own JVM)."""
        return self.roles[0] if len(self.roles) == 2 else None


def flush_configs(settings: ClusterSettings) -> dict[str, str]:
    """The topic's flush settings (`flush.messages`, `flush.ms`), where the spec sets them."""
    out = {}
    if settings.flush_messages is not None:
        out["flush.messages"] = str(settings.flush_messages)
    if settings.flush_ms is not None:
        out["flush.ms"] = str(settings.flush_ms)
    return out


def broker_flush_props(settings: ClusterSettings) -> dict[str, str]:
    """The same as broker defaults (every topic, __consumer_offsets included); `flush.ms` needs the flusher
    to look (log.flush.scheduler.interval.ms, never by default)."""
    props = {f"log.flush.interval.{k.removeprefix('flush.')}": v for k, v in flush_configs(settings).items()}
    if settings.flush_ms is not None:
        props["log.flush.scheduler.interval.ms"] = str(settings.flush_ms)
    return props


def zoo_cfg(plan: AddressPlan, node: Host, data_dir: str, force_sync: bool = True,
            kafka_version: str = DEFAULT_VERSION) -> str:
    """zoo.cfg of `node`'s ZooKeeper, for the ZooKeeper Kafka `kafka_version` brings (3.4 knows fewer keys)."""
    text = _zoo_cfg(plan, node, data_dir, force_sync)
    if release(kafka_version).zookeeper_35:
        return text
    return "".join(line for line in text.splitlines(keepends=True) if line.split("=", 1)[0] not in ZOOKEEPER_35_KEYS)


def _zoo_cfg(plan: AddressPlan, node: Host, data_dir: str, force_sync: bool) -> str:
    servers = "\n".join(f"server.{n.index}={n.address}:{ZK_PEER_PORT}:{ZK_ELECTION_PORT}" for n in plan.nodes)
    return f"""# generated by faultline for {node.name}
tickTime=500
initLimit=20
syncLimit=10
# A short tick makes the quorum react fast; without these bounds it would also cap every
# session at 20 ticks (10 s) and silently override zookeeper.session.timeout.ms.
minSessionTimeout=1000
maxSessionTimeout=120000
dataDir={data_dir}
clientPort={ZK_CLIENT_PORT}
clientPortAddress={node.address}
maxClientCnxns=0
4lw.commands.whitelist=srvr,ruok,mntr,stat
admin.enableServer=false
quorumListenOnAllIPs=false
autopurge.purgeInterval=0
forceSync={"yes" if force_sync else "no"}
# ZooKeeper 3.5 writes its snapshots without fsync: after a power cut the newest can be empty while the
# (fsynced) transaction log holds every change since the start, and it then refuses to start ("No snapshot
# found, but there are log entries") unless told to rebuild from the log (ZOOKEEPER-3056). The log is never
# purged here (autopurge off), so it holds everything.
snapshot.trust.empty=true
{servers}
"""


def zookeeper_connect(plan: AddressPlan) -> str:
    return ",".join(f"{n.address}:{ZK_CLIENT_PORT}" for n in plan.nodes)


def bootstrap_servers(plan: AddressPlan) -> str:
    return ",".join(f"{n.address}:{BROKER_PORT}" for n in plan.nodes)


def server_properties(plan: AddressPlan, node: Host, settings: ClusterSettings, log_dir: str) -> str:
    props = broker_props(plan, node, settings, log_dir)
    if settings.kraft:
        for key in [k for k in props if k.startswith("zookeeper.")] + ["broker.id", "controlled.shutdown.enable"]:
            props.pop(key, None)
        props.update(kraft_broker_props(plan, node, settings))
    if settings.proxied_listener:
        props.update(proxied_listener_props(node, props))
    if settings.az_listeners:
        props.update(az_listener_props(plan, node, props))
    props.update(settings.broker_overrides)
    body = "\n".join(f"{k}={v}" for k, v in props.items())
    return f"# generated by faultline for {node.name}\n{body}\n"


def proxied_listener_props(node: Host, props: dict[str, str]) -> dict[str, str]:
    """The PROXIED listener added to a broker's keys: the brokers keep talking to each other on PLAINTEXT."""
    protocols = props.get("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT")
    return {"listeners": f"{props['listeners']},PROXIED://{node.address}:{PROXIED_PORT}",
            "advertised.listeners": f"{props.get('advertised.listeners', props['listeners'])},"
                                    f"PROXIED://127.0.0.1:{proxy_port(node.broker_id)}",
            "listener.security.protocol.map": f"{protocols},PROXIED:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT"}


def proxy_port(broker_id: int) -> int:
    """The loopback port a producer's proxy listens on for broker `broker_id` (what the broker advertises)."""
    return PROXY_LOOPBACK_BASE + broker_id


def az_listener_props(plan: AddressPlan, node: Host, props: dict[str, str]) -> dict[str, str]:
    """The AZ listeners added to a broker's keys: AZ<i> on its own port, advertised as AZ i's proxy for this broker,
    so every Metadata and FindCoordinator answer a client of that proxy gets points back into the same proxy."""
    azs = plan.clients
    protocols = props.get("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT")
    return {"listeners": ",".join([props["listeners"]] + [f"AZ{c.index}://{node.address}:{az_listener_port(c.index)}"
                                                            for c in azs]),
            "advertised.listeners": ",".join([props.get("advertised.listeners", props["listeners"])]
                                             + [f"AZ{c.index}://{c.address}:{az_proxy_port(c.index, node.broker_id)}"
                                                for c in azs]),
            "listener.security.protocol.map": ",".join([protocols] + [f"AZ{c.index}:PLAINTEXT" for c in azs]),
            "inter.broker.listener.name": "PLAINTEXT"}


def az_listener_port(az_index: int) -> int:
    """The port every broker listens on for the clients of AZ `az_index` (1-based), reached through its proxy."""
    return AZ_LISTENER_BASE + az_index


def az_proxy_port(az_index: int, broker_id: int) -> int:
    """The port AZ `az_index`'s proxy listens on, on its client host, for broker `broker_id` (what it advertises)."""
    return AZ_PROXY_BASE + 10 * az_index + broker_id


def az_bootstrap(plan: AddressPlan, az: str) -> str:
    """The bootstrap servers of a client in `az`: its proxy's port for every broker, on the AZ's client host."""
    client = plan.client_of_az(az)
    return ",".join(f"{client.address}:{az_proxy_port(client.index, n.broker_id)}" for n in plan.nodes)


def controller_id(settings: ClusterSettings, broker_id: int) -> int:
    """The KRaft node id of the controller on broker `broker_id`'s node."""
    return broker_id if settings.kraft_controllers == "combined" else broker_id + CONTROLLER_ID_BASE


def broker_of_controller(settings: ClusterSettings, node_id: int) -> int:
    """The broker id of the node whose controller is KRaft node `node_id` (controller_id's inverse)."""
    return node_id if settings.kraft_controllers == "combined" else node_id - CONTROLLER_ID_BASE


def quorum_voters(plan: AddressPlan, settings: ClusterSettings) -> str:
    return ",".join(f"{controller_id(settings, n.broker_id)}@{n.address}:{CONTROLLER_PORT}" for n in plan.nodes)


def quorum_bootstrap(plan: AddressPlan) -> str:
    """A dynamic quorum's way in (KIP-853): every node's controller listener, whichever of them are voters now."""
    return ",".join(f"{n.address}:{CONTROLLER_PORT}" for n in plan.nodes)


DOWNGRADE_SNAPSHOT_INTERVAL_MS = 5000  # a KRaft downgrade waits seconds for its snapshots (testbed.kafka.snapshots)


def _kraft_common(plan: AddressPlan, settings: ClusterSettings) -> dict[str, str]:
    """Keys every KRaft process gets: the static quorum (controller.quorum.voters works from 3.3 to 4.x) or a
    dynamic one's bootstrap servers, the
    CONTROLLER listener's name, and the fencing timeout, which the active controller applies: the
    counterpart of zookeeper.session.timeout.ms (a broker cut off from it this long is fenced and loses its
    leaderships), its heartbeat a third of it (Kafka's 2 s at most); and, before a KRaft downgrade, a short
    snapshot interval."""
    session = settings.zookeeper_session_timeout_ms
    snapshots = ({} if settings.metadata_snapshot_interval_ms is None else
                 {"metadata.log.max.snapshot.interval.ms": str(settings.metadata_snapshot_interval_ms)})
    quorum = ({"controller.quorum.bootstrap.servers": quorum_bootstrap(plan)} if settings.kraft_quorum == "dynamic"
              else {"controller.quorum.voters": quorum_voters(plan, settings)})
    return {**quorum, "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "broker.session.timeout.ms": str(session),
            "broker.heartbeat.interval.ms": str(max(500, min(2000, session // 3))), **snapshots}


def kraft_broker_props(plan: AddressPlan, node: Host, settings: ClusterSettings) -> dict[str, str]:
    """What a KRaft broker (or, combined, broker and controller) has in place of broker.id and zookeeper.*."""
    combined = settings.kraft_controllers == "combined"
    props = {"process.roles": "broker,controller" if combined else "broker", "node.id": str(node.broker_id),
             **_kraft_common(plan, settings), "inter.broker.listener.name": "PLAINTEXT"}
    if combined:
        props["listeners"] = (f"PLAINTEXT://{node.address}:{BROKER_PORT},"
                              f"CONTROLLER://{node.address}:{CONTROLLER_PORT}")
    return props


def controller_properties(plan: AddressPlan, node: Host, settings: ClusterSettings, log_dir: str) -> str:
    """A KRaft controller's own server.properties (separate controllers: one beside each broker). The topic
    defaults are here too: in KRaft the controller creates topics and elects leaders."""
    rf = settings.replication_factor
    props = {"process.roles": "controller", "node.id": str(controller_id(settings, node.broker_id)),
             "listeners": f"CONTROLLER://{node.address}:{CONTROLLER_PORT}", **_kraft_common(plan, settings),
             "log.dirs": log_dir, "min.insync.replicas": str(settings.min_insync_replicas),
             "unclean.leader.election.enable": str(settings.unclean_leader_election).lower(),
             "default.replication.factor": str(rf), "num.partitions": str(settings.partitions),
             "auto.create.topics.enable": "false", "num.network.threads": "2", "num.io.threads": "2",
             "background.threads": "2"}
    body = "\n".join(f"{k}={v}" for k, v in props.items())
    return f"# generated by faultline for {node.name}'s KRaft controller\n{body}\n"


def log_dir_names(settings: ClusterSettings) -> tuple[str, ...]:
    """The broker's log directories inside its kafka-data ("": kafka-data itself, the one log directory)."""
    return ("",) if settings.log_dirs == 1 else tuple(f"dir-{i}" for i in range(settings.log_dirs))


def broker_props(plan: AddressPlan, node: Host, settings: ClusterSettings, log_dir: str) -> dict[str, str]:
    """A ZooKeeper-mode broker's keys (server_properties turns them into a KRaft broker's)."""
    rf = settings.replication_factor
    props: dict[str, str] = {
        "broker.id": str(node.broker_id),
        "broker.rack": node.az,
        "listeners": f"PLAINTEXT://{node.address}:{BROKER_PORT}",
        "advertised.listeners": f"PLAINTEXT://{node.address}:{BROKER_PORT}",
        "log.dirs": ",".join(f"{log_dir}/{name}" if name else str(log_dir) for name in log_dir_names(settings)),
        "zookeeper.connect": zookeeper_connect(plan),
        "zookeeper.session.timeout.ms": str(settings.zookeeper_session_timeout_ms),
        # Kafka's default (the session timeout), not shorter: a broker started while the ensemble re-elects (a rolling
        # step as an AZ is cut off) must outlast a hung connect to the cut server and the election, or it exits.
        "zookeeper.connection.timeout.ms": str(settings.zookeeper_session_timeout_ms),
        "min.insync.replicas": str(settings.min_insync_replicas),
        "unclean.leader.election.enable": str(settings.unclean_leader_election).lower(),
        "replica.lag.time.max.ms": str(settings.replica_lag_time_max_ms),
        "default.replication.factor": str(rf),
        "num.partitions": str(settings.partitions),
        "auto.create.topics.enable": "false",
        "group.initial.rebalance.delay.ms": "0",
        "offsets.topic.replication.factor": str(min(3, settings.nodes)),
        "offsets.topic.num.partitions": "3",
        "transaction.state.log.replication.factor": str(min(3, settings.nodes)),
        "transaction.state.log.min.isr": "2",
        "transaction.state.log.num.partitions": "3",
        # Small thread pools: six JVMs share two cores.
        "num.network.threads": "2",
        "num.io.threads": "4",
        "num.replica.fetchers": "1",
        "background.threads": "4",
        "log.segment.bytes": str(64 * 1024 * 1024),
        "controlled.shutdown.enable": "true",
        **broker_flush_props(settings),
    }
    for key in release(settings.kafka_version).unknown_broker_keys:  # keys this Kafka does not know yet
        props.pop(key, None)
    return props


def log4j_properties(log_dir: str) -> str:
    def appender(name: str, file: str) -> str:
        return (f"log4j.appender.{name}=org.apache.log4j.FileAppender\n"
                f"log4j.appender.{name}.File={log_dir}/{file}\n"
                f"log4j.appender.{name}.layout=org.apache.log4j.PatternLayout\n"
                f"log4j.appender.{name}.layout.ConversionPattern=[%d] %p %m (%c)%n\n")

    return ("log4j.rootLogger=INFO, main\n" + appender("main", "server.log")
            + appender("stateChange", "state-change.log") + appender("controller", "controller.log")
            + "log4j.logger.state.change.logger=TRACE, stateChange\n"
            + "log4j.additivity.state.change.logger=false\n"
            + "log4j.logger.kafka.controller=TRACE, controller\n"
            + "log4j.additivity.kafka.controller=false\n"
            + "log4j.logger.kafka.request.logger=WARN\n"
            + "log4j.logger.org.apache.zookeeper=INFO\n")
