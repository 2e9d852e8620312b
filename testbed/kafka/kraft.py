"""A KRaft cluster's own steps: its storage formatted, its controller quorum asked and steered.

In KRaft (`cluster.metadata: kraft`) each node runs a KRaft controller beside
its broker, where ZooKeeper mode runs a ZooKeeper server (or, with
`kraft_controllers: combined`, one JVM that is both); the three controllers
are the static quorum `controller.quorum.voters` (testbed.kafka.config). Before
a first start every node's storage is formatted with the cluster's id
(`kafka.tools.StorageTool format`, what `kafka-storage.sh format` runs). Who
the active controller is comes from DescribeQuorum (testbed.kafka.quorum), never
from Metadata's controller id, which in KRaft names a random live broker.
Steering (`cluster.controller`): the wanted node's controller starts first and
the others a moment later, so it stands for election alone and wins; should
another win all the same, every other controller is stopped and started again
once the wanted one has campaigned alone for a moment (at bring-up only).
Must never: format a directory that holds data of a started cluster
(`--ignore-formatted` on a fresh run folder only), or restart a controller
outside bring-up.
"""

from __future__ import annotations

import base64
import logging
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from testbed.addressing import Host
from testbed.errors import ClusterError, RuntimeFailure
from testbed.kafka import config as kcfg
from testbed.kafka.kafka_tools import run_tool
from testbed.kafka.quorum import QuorumView, describe_quorum
from testbed.kafka.waiting import wait_for
from testbed.kafka.wire import BrokerView
from testbed.runtime.base import Software

if TYPE_CHECKING:
    from testbed.kafka.cluster import KafkaCluster

log = logging.getLogger("faultline.cluster")
STORAGE_TOOL = "kafka.tools.StorageTool"
FORMAT_TIMEOUT_S = 120.0
FIRST_ALONE_S = 2.5  # the wanted controller's head start: past its election timeout (1 s) and its first vote
STEER_ATTEMPTS = 3


def new_cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, base64url without padding (what `kafka-storage random-uuid` prints),
    never starting with '-', which the tool's argument parser would take for an option (Kafka's own
    Uuid.randomUuid draws again too)."""
    while True:
        found = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not found.startswith("-"):
            return found


def format_args(config: str, cluster_id: str) -> list[str]:
    """StorageTool's arguments that format the storage of the KRaft process configured by `config` (a path on its
    host), leaving storage formatted before as it is."""
    return ["format", "-t", cluster_id, "-c", config, "--ignore-formatted"]


def format_argv(sw: Software, config: str, cluster_id: str) -> list[str]:
    """The whole command line of `format_args` (`harness compose` runs it at every container start)."""
    return [sw.java, "-Xmx256m", "-cp", sw.kafka_classpath, STORAGE_TOOL, *format_args(config, cluster_id)]


def format_storage(cluster: KafkaCluster, cluster_id: str, roles: tuple[str, ...] | None = None) -> None:
    """`StorageTool format` every KRaft process's configuration on its host (`roles`: those roles' only, default
    the cluster's), all at once (one JVM each), then fsync what it wrote. A dynamic quorum's controllers are formatted
    as its initial voters (`--initial-controllers`, each with a directory id drawn here: every controller must be given
    the same list); brokers need no flag."""
    jobs = [(node, role) for node in cluster.nodes for role in (roles or cluster.roles)]
    initial = initial_controllers(cluster) if cluster.settings.kraft_quorum == "dynamic" else None

    def run(job: tuple[Host, str]) -> None:
        node, role = job
        format_process(cluster, node, role, cluster_id,
                       ["--initial-controllers", initial] if initial is not None and role == "controller" else [])

    with ThreadPoolExecutor(len(jobs)) as pool:
        list(pool.map(run, jobs))


def initial_controllers(cluster: KafkaCluster) -> str:
    """--initial-controllers' value: every node's controller as id@host:port:directory-id, a fresh directory id
    each (the form `kafka-storage random-uuid` prints, which new_cluster_id draws)."""
    return ",".join(f"{kcfg.controller_id(cluster.settings, n.broker_id)}@{n.address}:{kcfg.CONTROLLER_PORT}:"
                    f"{new_cluster_id()}" for n in cluster.nodes)


def format_process(cluster: KafkaCluster, node: Host, role: str, cluster_id: str, flags: list[str]) -> None:
    """`StorageTool format` one process's storage with `flags`, then make what it wrote durable."""
    config = cluster.runtime.host_path(node, cluster.node_folder(node).config(role))
    run_tool(cluster, node, cluster.settings.kafka_version, STORAGE_TOOL, [*format_args(config, cluster_id), *flags],
             FORMAT_TIMEOUT_S,
             f"formatting {node.name}'s {role} storage")
    # StorageTool writes bootstrap.checkpoint without fsync: on unsyncfs a power cut seconds after the start
    # left it empty and the node could not start again ("No FeatureLevelRecord for metadata.version"). A
    # freshly formatted disk is on disk long before its cluster's first fault on any real host (the kernel
    # writes dirty pages back within ~30 s), so the format is made durable here: every file and directory
    # fsynced (`sync FILE...`).
    data = cluster.runtime.host_path(node, cluster.node_folder(node).data(role))
    try:
        cluster.runtime.execute(node, ["find", data, "-exec", "sync", "{}", "+"], timeout=FORMAT_TIMEOUT_S)
    except RuntimeFailure as exc:
        raise ClusterError(f"making {node.name}'s formatted {role} storage durable: {exc}") from exc


def quorum_views(cluster: KafkaCluster, timeout: float = 2.0) -> dict[str, QuorumView | None]:
    """Each node's controller's own DescribeQuorum answer (None: it does not answer)."""
    def ask(node: Host) -> QuorumView | None:
        try:
            return describe_quorum(node.address, kcfg.CONTROLLER_PORT, timeout)
        except (OSError, ConnectionError, ValueError):
            return None
    with ThreadPoolExecutor(len(cluster.nodes)) as pool:
        return dict(zip([n.name for n in cluster.nodes], pool.map(ask, cluster.nodes), strict=True))


def leading_view(views: dict[str, QuorumView | None]) -> QuorumView | None:
    """The answer of the controller that leads at the newest epoch any controller claims, or None."""
    leading = [v for v in views.values() if v is not None and v.leading]
    return max(leading, key=lambda v: v.leader_epoch or 0, default=None)


def active_controller(settings: kcfg.ClusterSettings, views: dict[str, QuorumView | None]) -> int | None:
    """The broker id of the node whose controller leads at the newest epoch any controller claims, or None."""
    newest = leading_view(views)
    if newest is None:
        return None
    assert newest.leader_id is not None
    return kcfg.broker_of_controller(settings, newest.leader_id)


def with_active_controller(cluster: KafkaCluster, views: dict[str, BrokerView | None]) -> dict[str, BrokerView | None]:
    """The brokers' views with the active controller (DescribeQuorum) as each one's controller: a KRaft broker's
    Metadata names a random live broker there."""
    active = active_controller(cluster.settings, quorum_views(cluster))
    for view in views.values():
        if view is not None:
            view.controller = active
    return views


def wait_brokers(cluster: KafkaCluster, want: list[int], timeout: float, interval: float) -> dict[str, Any]:
    """Every broker registered and unfenced (a KRaft broker's Metadata lists only unfenced brokers), known to
    every broker, and an active controller."""
    def known() -> dict[str, Any] | None:
        cluster.readiness.check_processes()
        views = cluster.views()
        ok = all(v is not None and sorted(v.brokers) == want and v.controller is not None for v in views.values())
        first = next(iter(views.values()))
        return {"brokers": want, "controller": first.controller} if ok and first is not None else None
    return wait_for(f"brokers {want} registered with the KRaft controller, unfenced, known to every broker",
                    known, timeout, interval)


def quorum_ready(cluster: KafkaCluster) -> int | None:
    """The active controller's broker id once one controller leads and every voter has caught up with it."""
    cluster.readiness.check_processes()
    views = quorum_views(cluster, 1.0)
    leading = [v for v in views.values() if v is not None and v.leading]
    if len(leading) != 1 or leading[0].high_watermark is None:
        return None
    lead = leading[0]
    if len(lead.voters) != len(cluster.nodes) or any(end < 0 for end in lead.voters.values()):
        return None
    return active_controller(cluster.settings, views)


def wait_quorum(cluster: KafkaCluster, timeout: float, interval: float) -> int:
    """The active controller's broker id, once one leads with every voter caught up (`quorum_ready`)."""
    found: int = wait_for("a KRaft controller quorum (one active controller, every voter caught up)",
                          lambda: quorum_ready(cluster), timeout, interval)
    return found


def controller_caught_up(cluster: KafkaCluster, node: Host) -> int | None:
    """After `node`'s controller started again: the active controller's broker id once that controller answers
    DescribeQuorum itself (its listener is up; a follower answers NOT_LEADER), the quorum is ready, and the leader
    has it at or past the high watermark. The leader's figure for a voter may date from before the restart, so the
    answer of the restarted process is what tells its start apart."""
    cluster.readiness.check_processes()
    views = quorum_views(cluster, 1.0)
    if views.get(node.name) is None:
        return None
    leading = [v for v in views.values() if v is not None and v.leading]
    watermark = leading[0].high_watermark if len(leading) == 1 else None
    if watermark is None:
        return None
    lead, mine = leading[0], kcfg.controller_id(cluster.settings, node.broker_id)
    if len(lead.voters) != len(cluster.nodes) or lead.voters.get(mine, -1) < watermark:
        return None
    return active_controller(cluster.settings, views)


def start_quorum(cluster: KafkaCluster, wanted: int | None, deadline: float, interval: float) -> int:
    """Start the quorum's processes (the wanted node's first) and wait for a leader; the wanted one where asked."""
    role = cluster.roles[0]  # the controller, or (combined) the broker that is one
    order = list(cluster.nodes) if wanted is None else [cluster.node(wanted)] + \
        [n for n in cluster.nodes if n.broker_id != wanted]
    for i, node in enumerate(order):
        cluster.start(node, role)
        if i == 0 and wanted is not None:
            time.sleep(FIRST_ALONE_S)
    for attempt in range(STEER_ATTEMPTS + 1):
        leader = wait_quorum(cluster, deadline - time.monotonic(), interval)
        if wanted is None or leader == wanted or attempt == STEER_ATTEMPTS:
            break
        # Every other controller goes, so the wanted one campaigns alone (its epoch rising past theirs, its log as
        # long: every voter had caught up) and they come back to its vote requests. Restarting only the leader
        # left the other two to a coin flip each time: 3 restarts missed on docker, 2 cores under load.
        others = [n for n in cluster.nodes if n.broker_id != wanted]
        log.info("the controller of broker %d's node leads, not %d's: restarting every controller but %d's (%d)",
                 leader, wanted, wanted, attempt + 1)
        for node in others:
            cluster.kill(node, role)
        time.sleep(FIRST_ALONE_S)
        for node in others:
            cluster.start(node, role)
    if wanted is not None and leader != wanted:
        raise ClusterError(f"the KRaft controller of broker {wanted}'s node did not become the active controller "
                           f"(broker {leader}'s did, {STEER_ATTEMPTS} restarts)")
    return leader
