"""A starting cluster's readiness polls: its processes still alive, the metadata quorum, the brokers, the topic.

`KafkaCluster.readiness` is one `Readiness` over its cluster; `testbed.kafka.bringup` drives it (and sets
`restart_exited_broker` for the bring-up's span), `testbed.kafka.kraft` asks `check_processes` in its own polls.
The live views the polls read (`views`, `settled`) stay the cluster's: the nemesis, the run and the fake
machines' clusters ask them there.
Must never: start, stop or signal a process (a broker that exited is started again only by the
`restart_exited_broker` that bring-up hands in), or poll faster than it is told.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kazoo.client import KazooClient

from testbed.addressing import Host
from testbed.errors import ClusterError
from testbed.kafka import config as kcfg
from testbed.kafka import kraft
from testbed.kafka.waiting import wait_for
from testbed.kafka.wire import BrokerView, zookeeper_mode
from testbed.kafka.zk import read_snapshot, zk_snapshot

if TYPE_CHECKING:
    from testbed.kafka.cluster import KafkaCluster

PROCESS_CHECK_S = 0.2  # how often the readiness polls look whether a process exited


class Readiness:
    """The polls that say when a starting cluster is ready, each a ClusterError at its deadline."""

    def __init__(self, cluster: KafkaCluster) -> None:
        self.cluster = cluster
        # During bring-up only: start again a broker found exited, if that is safe (True when it did).
        self.restart_exited_broker: Callable[[Host], bool] | None = None
        self._processes_checked = -PROCESS_CHECK_S  # when `check_processes` last looked

    def check_processes(self) -> None:
        """ClusterError naming a process of this cluster that exited (during bring-up, a broker that exited
        for want of a ZooKeeper quorum is started again instead: `restart_exited_broker`). At most once per
        PROCESS_CHECK_S: the readiness polls run faster, and on docker or ssh each look is a round trip."""
        if time.monotonic() - self._processes_checked < PROCESS_CHECK_S:
            return
        self._processes_checked = time.monotonic()
        cluster = self.cluster
        for node in cluster.nodes:
            for role in cluster.roles:
                name = cluster.process_name(node, role)
                process = cluster.processes.get(name)
                if process is None or process.alive():
                    continue
                if role == "broker" and self.restart_exited_broker is not None and self.restart_exited_broker(node):
                    continue
                raise ClusterError(f"{name} exited during start-up: {cluster.processes.log_tail(name)}")

    def wait_quorum(self, timeout: float, interval: float = 0.2) -> dict[str, str]:
        cluster = self.cluster
        if cluster.settings.kraft:
            return {"active controller": str(wait_for("a KRaft quorum", lambda: kraft.quorum_ready(cluster),
                                                      timeout))}

        def quorum() -> dict[str, str] | None:
            self.check_processes()
            modes = {n.name: zookeeper_mode(n.address, kcfg.ZK_CLIENT_PORT, 1.0) for n in cluster.nodes}
            leaders = [m for m in modes.values() if m == "leader"]
            ok = len(leaders) == 1 and all(m in ("leader", "follower") for m in modes.values())
            return modes if ok else None
        return wait_for("a ZooKeeper quorum (one leader, every server serving)", quorum, timeout, interval)

    def wait_brokers(self, timeout: float, zk: KazooClient | None = None, interval: float = 0.2) -> dict[str, Any]:
        """Every broker registered, a controller elected and known to every broker; `zk`: a session to read
        ZooKeeper through (else one per poll)."""
        cluster = self.cluster
        want = sorted(n.broker_id for n in cluster.nodes)
        if cluster.settings.kraft:
            return kraft.wait_brokers(cluster, want, timeout, interval)

        def registered() -> dict[str, Any] | None:
            self.check_processes()
            snap = read_snapshot(zk, cluster.zk_connect) if zk is not None else zk_snapshot(cluster.zk_connect, None,
                                                                                             2.0)
            if snap["brokers"] != want or snap["controller"] is None:
                return None
            # Registered is not yet known: each broker learns its peers from the controller.
            views = cluster.views()
            known = all(v is not None and sorted(v.brokers) == want and v.controller == snap["controller"]
                        for v in views.values())
            return snap if known else None
        return wait_for(f"brokers {want} registered in ZooKeeper, a controller elected and known to every broker",
                        registered, timeout, interval)

    def wait_topic_ready(self, timeout: float, interval: float = 0.2) -> dict[str, BrokerView]:
        """The topics led everywhere with a full ISR, agreed by every broker (`cluster.settled`), every process
        still alive."""
        cluster = self.cluster

        def ready() -> dict[str, BrokerView] | None:
            self.check_processes()
            return cluster.settled()
        return cluster.wait_settled(f"topic {', '.join(cluster.settings.topics)} led everywhere with a full ISR, "
                                    "agreed by every broker", timeout, interval, check=ready)
