"""A throwaway faulted Kafka cluster for an application team's own pytest suite.

    from faultline.testing import FaultlineCluster

    def test_my_producer_survives_losing_an_az():
        with FaultlineCluster() as c:
            producer = Producer({"bootstrap.servers": c.bootstrap_servers, "acks": "all"})
            ...
            c.isolate_az(f"az{c.leader(c.topic, 0) + 1}")   # the leader's AZ cut off from the others
            ...
            c.heal()
            c.wait_settled()
            ...

Three AZs (a node container each: ZooKeeper + one broker; a client container
each), on the `docker` runtime: the images of `make docker-images`, the daemon
of DOCKER_HOST, else testcontainers' `tc.host` setting
(~/.testcontainers.properties), else the default socket. The faults are the
nemesis's own (journaled in the run folder). Ryuk, testcontainers' reaper, is
not used (its image cannot be pulled without a registry): every container and
network carries the run's prefix, the context manager removes them on every
exit path, and `python -m harness clean` removes what a killed test left.
Must never: leave a fault in place or a container behind when the block ends.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from nemesis.nemesis import Nemesis
from testbed.dist.kafka import DEFAULT_VERSION
from testbed.errors import ClusterError
from testbed.kafka.cluster import KafkaCluster
from testbed.kafka.config import ClusterSettings
from testbed.lifecycle import provision
from testbed.runtime.base import Firewalled, Runtime
from testbed.runtime.kinds import default_network
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
                 network: str = default_network("docker"), run_dir: Path | None = None, **settings: Any) -> None:
        """`settings`: any other ClusterSettings field (min_insync_replicas, unclean_leader_election, ...)."""
        self.settings = ClusterSettings(runtime="docker", kafka_version=kafka_version, partitions=partitions,
                                        topic=topic, network=network, **settings)
        self._run_dir = run_dir
        self._stack = contextlib.ExitStack()
        self.cluster: KafkaCluster | None = None
        self.nemesis: Nemesis | None = None

    # -- the context manager -------------------------------------------------------
    def __enter__(self) -> FaultlineCluster:
        with self._stack as stack:
            host = _testcontainers_host()
            if host:
                os.environ["DOCKER_HOST"] = host
                stack.callback(os.environ.pop, "DOCKER_HOST", None)
            run_dir = self._run_dir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="faultline-")))
            cluster, runtime = stack.enter_context(provision(self.settings, run_dir / "cluster"))
            assert isinstance(runtime, Firewalled)
            self.cluster = cluster
            self.nemesis = Nemesis(cluster, runtime, cluster.folder.nemesis_journal, seed=0)
            stack.callback(self.nemesis.close)
            stack.callback(self.nemesis.heal_all)
            self._stack = stack.pop_all()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._stack.close()
        self.cluster = self.nemesis = None

    def _live(self) -> tuple[KafkaCluster, Nemesis]:
        if self.cluster is None or self.nemesis is None:
            raise ClusterError("the cluster is not up: use FaultlineCluster as a context manager")
        return self.cluster, self.nemesis

    # -- what a test reads ---------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        return self._live()[0].bootstrap

    @property
    def topic(self) -> str:
        return self.settings.topic

    @property
    def runtime(self) -> Runtime:
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
        return self._start({"fault": "isolate-az", "target": az})

    def cut_link(self, a: str, b: str, one_way: bool = False) -> str:
        return self._start({"fault": "cut-link", "between": [a, b], "one_way": one_way})

    def kill(self, broker: int) -> str:
        return self._start({"fault": "kill", "target": f"broker-{broker}"})

    def pause(self, broker: int) -> str:
        return self._start({"fault": "pause", "target": f"broker-{broker}"})

    def power_off(self, az: str) -> str:
        return self._start({"fault": "power-off", "target": f"{az}-node"})

    def _start(self, fault: dict[str, Any]) -> str:
        return self._live()[1].start(fault).name

    def stop(self, name: str) -> None:
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

