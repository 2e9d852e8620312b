"""A throwaway faulted Kafka cluster for an application team's own pytest suite (reference: docs/api.md).

    from faultline.testing import FaultlineCluster

    def test_my_producer_fails_while_its_az_is_cut_off():
        with FaultlineCluster(partitions=1) as c:
            producer = Producer({"bootstrap.servers": c.bootstrap("az1"), "acks": "all"})
            ...
            c.isolate_az("az1")         # az1's hosts, its proxy included, hear only each other
            ...                         # the producer's sends fail
            c.heal()
            c.wait_settled()
            ...                         # and succeed again

Three AZs (a node host each: ZooKeeper or a KRaft controller, and one broker;
a client host each), on the `docker` runtime (the images of `make docker-images`,
the daemon of DOCKER_HOST, else testcontainers' `tc.host` setting
(~/.testcontainers.properties), else the default socket) or `netns` (root).
`bootstrap(az)` is a client's way in from inside an AZ: a forwarding proxy on
the AZ's client host (`testbed.kafka.az_proxy`) and the brokers' listener for
that AZ, which advertises the proxy, so every connection of the client is
carried by a host of the AZ and cut by the AZ's faults like any other;
`bootstrap_servers` is the control plane's way in, which no fault cuts. The
faults are the nemesis's own (journaled in the run folder). Ryuk,
testcontainers' reaper, is not used (its image cannot be pulled without a
registry): every container, namespace and process carries the run's prefix,
the context manager removes them on every exit path, and `python -m harness
clean` removes what a killed test left.
A Kafka client of the test still open when the block ends would reconnect to the
gone addresses through the machine's default route, off the machine: the block's
end looks for this process's connections to the cluster's network first
(`faultline.open_clients`) and, if there are any, removes every host but keeps
the network (the bridge holding the control address and the route to the hosts'
addresses), so those reconnects stay on this machine, and raises ClusterError
(a warning when the block itself raised); `python -m harness clean` removes it.
Must never: leave a fault in place or a container behind when the block ends, or
remove the network while a client of this process is connected to it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
import warnings
from pathlib import Path
from types import TracebackType
from typing import Any

from faultline.open_clients import connections_to
from nemesis.nemesis import Nemesis
from testbed.dist.kafka import DEFAULT_VERSION
from testbed.dist.versions import check_metadata, default_metadata
from testbed.errors import ClusterError, UsageError
from testbed.kafka import az_proxy
from testbed.kafka.cluster import KafkaCluster
from testbed.kafka.config import ClusterSettings, az_bootstrap
from testbed.lifecycle import provision
from testbed.runtime.base import Firewalled, KeepsNetwork, Runtime
from testbed.runtime.kinds import default_network
from testbed.runtime.kinds import kind as runtime_kind
from testbed.status import cluster_status

os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")


def _testcontainers_host() -> str | None:
    """The daemon testcontainers would use when DOCKER_HOST is not set (its `tc.host` property), if any."""
    if os.environ.get("DOCKER_HOST"):
        return None
    from testcontainers.core.config import testcontainers_config

    return testcontainers_config.tc_properties_get_tc_host()


class FaultlineCluster:
    def __init__(self, partitions: int = 3, kafka_version: str = DEFAULT_VERSION, topic: str = "faultline",
                 network: str | None = None, run_dir: Path | None = None, runtime: str = "docker",
                 metadata: str | None = None, **settings: Any) -> None:
        """Check the arguments (UsageError or DistributionError, one line, nothing started); `with` starts it.
        `metadata`: "zookeeper" or "kraft" (None: the version's default, KRaft from 4.0); `settings`: any other
        ClusterSettings field (min_insync_replicas, kraft_controllers, broker_overrides, ...)."""
        if runtime_kind(runtime).needs_inventory:
            raise UsageError(f"FaultlineCluster(runtime={runtime!r}): its hosts come from an inventory, which "
                             f"FaultlineCluster does not take; use runtime='docker' or 'netns'")
        metadata = metadata or default_metadata(kafka_version)
        check_metadata(kafka_version, metadata)
        self.settings = ClusterSettings(**{"runtime": runtime, "kafka_version": kafka_version,
                                           "partitions": partitions, "topic": topic, "metadata": metadata,
                                           "network": network or default_network(runtime), "az_listeners": True,
                                           **settings})
        self._run_dir = run_dir
        self._stack = contextlib.ExitStack()
        self.cluster: KafkaCluster | None = None
        self.nemesis: Nemesis | None = None
        self.settled_after_s: float | None = None  # how long the last wait_settled waited
        self.left_open: list[str] = []  # the connections to the network the last block's end found (address:port)

    # -- the context manager -------------------------------------------------------
    def __enter__(self) -> FaultlineCluster:
        with self._stack as stack:
            host = _testcontainers_host()  # used by the docker runtime only; harmless to the others
            if host:
                os.environ["DOCKER_HOST"] = host
                stack.callback(os.environ.pop, "DOCKER_HOST", None)
            run_dir = self._run_dir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="faultline-")))
            cluster, runtime = stack.enter_context(provision(self.settings, run_dir / "cluster"))
            assert isinstance(runtime, Firewalled) and isinstance(runtime, KeepsNetwork)
            stack.callback(self._keep_network_for_open_clients, runtime)  # once the nemesis is closed, before the hosts go
            self.cluster = cluster
            self.nemesis = Nemesis(cluster, runtime, cluster.folder.nemesis_journal, seed=0)
            stack.callback(self.nemesis.close)
            stack.callback(self.nemesis.heal_all)
            self._stack = stack.pop_all()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.left_open = []
        self._stack.close()
        self.cluster = self.nemesis = None
        if self.left_open:
            message = (f"FaultlineCluster: {len(self.left_open)} connection(s) of this process to the cluster's "
                       f"network {self.settings.network} still open when the block ended "
                       f"({', '.join(self.left_open[:4])}{', ...' if len(self.left_open) > 4 else ''}): a Kafka "
                       f"client made in the block is still open; close it inside the block. The hosts are gone; "
                       f"the network stays so that its reconnects stay on this machine: "
                       f"'sudo python -m harness clean' removes it")
            if kind is None:
                raise ClusterError(message)
            warnings.warn(message, RuntimeWarning, stacklevel=2)  # shown by default, in pytest or not

    def _keep_network_for_open_clients(self, runtime: KeepsNetwork) -> None:
        self.left_open = connections_to(self.settings.network)
        if self.left_open:
            runtime.keep_network()

    def _live(self) -> tuple[KafkaCluster, Nemesis]:
        if self.cluster is None or self.nemesis is None:
            raise ClusterError("the cluster is not up: use FaultlineCluster as a context manager")
        return self.cluster, self.nemesis

    # -- what a test reads ---------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        """The brokers at their own addresses, from the control plane: no fault ever cuts this client off."""
        return self._live()[0].bootstrap

    def bootstrap(self, az: str) -> str:
        """Bootstrap servers for a client inside `az` (az1, az2, ...): the AZ's proxy, one port per broker; every
        connection of a client bootstrapped here is carried by the AZ's client host and cut by the AZ's faults.
        The proxy starts on the first call for the AZ."""
        cluster, _ = self._live()
        az_proxy.start(cluster, az)
        return az_bootstrap(cluster.plan, az)

    @property
    def azs(self) -> tuple[str, ...]:
        """The AZs' names: az1, az2, az3."""
        return tuple(n.az for n in self._live()[0].nodes)

    def az_of(self, broker: int) -> str:
        """The AZ whose node runs broker `broker` (broker 0 is az1's)."""
        return self._live()[0].node(broker).az

    @property
    def topic(self) -> str:
        """The topic the cluster created (replicated 3 times, `partitions` partitions)."""
        return self.settings.topic

    @property
    def runtime(self) -> Runtime:
        """The runtime holding the hosts (its `prefix` names every container, namespace and process of the run)."""
        return self._live()[0].runtime

    def leader(self, topic: str, partition: int) -> int | None:
        """The broker most brokers name as the partition's leader now (None when none is named)."""
        votes: dict[int, int] = {}
        for view in self._live()[0].views().values():
            for p in (view.partitions.get(topic, []) if view is not None else []):
                if p.partition == partition and p.leader is not None:
                    votes[p.leader] = votes.get(p.leader, 0) + 1
        return max(votes, key=lambda b: votes[b]) if votes else None

    def status(self) -> dict[str, Any]:
        """Each broker's own view, the ZooKeeper quorum, bootstrap servers (as `cluster status --json`)."""
        cluster, _ = self._live()
        return cluster_status(cluster, cluster.runtime)

    # -- faults: each returns the fault's name (for `stop`) --------------------------
    def isolate_az(self, az: str) -> str:
        """Cut every link between `az`'s hosts (its node, its client host and so its proxy) and the other AZs'."""
        return self._start({"fault": "isolate-az", "target": az})

    def cut_link(self, a: str, b: str, one_way: bool = False, ends: str = "az") -> str:
        """Cut the links between targets `a` and `b` (az2, az2-node, broker-1, ... each standing for its AZ);
        `ends="az"`: every host of each AZ (node and client host, so the AZ's proxy too), `ends="node"`: only the
        two node hosts (clients keep every link); `one_way`: only packets from `a` to `b` are dropped."""
        return self._start({"fault": "cut-link", "between": [a, b], "one_way": one_way, "ends": ends})

    def kill(self, broker: int) -> str:
        """SIGKILL broker `broker`'s process (its data stays); stopping the fault starts it again."""
        return self._start({"fault": "kill", "target": f"broker-{broker}"})

    def pause(self, broker: int) -> str:
        """SIGSTOP broker `broker`'s process; stopping the fault sends SIGCONT."""
        return self._start({"fault": "pause", "target": f"broker-{broker}"})

    def power_off(self, az: str) -> str:
        """Cut `az`'s node host's power: its ZooKeeper server (or KRaft controller) and broker die at one instant
        and lose what they had not fsynced; stopping the fault powers it on. The AZ's client host stays up."""
        return self._start({"fault": "power-off", "target": f"{az}-node"})

    def _start(self, fault: dict[str, Any]) -> str:
        return self._live()[1].start(fault).name

    def stop(self, name: str) -> None:
        """Undo the fault a fault method returned the name of (FaultError if it is not in effect)."""
        self._live()[1].stop(name)

    def heal(self) -> None:
        """Undo every fault (rules cleared, processes resumed and restarted); does not wait for the cluster."""
        self._live()[1].heal_all()

    def wait_settled(self, timeout: float = 120.0) -> None:
        """Wait until every broker agrees on one leader per partition with full ISRs."""
        cluster, _ = self._live()
        started = time.monotonic()
        cluster.wait_settled("the cluster to settle", timeout, interval=0.5)
        self.settled_after_s = time.monotonic() - started

