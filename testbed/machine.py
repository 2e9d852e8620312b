"""The machine a run is made on, handed down the run flow as one object rather than reached for by import.

Everything a run asks of this machine and of Kafka itself goes through a `Machine`: which runtime
a kind builds (`make_runtime`), the runtime's checks before anything is made (`preflight`), the
Kafka distribution in the cache (`ensure_kafka`), the cluster object over the runtime
(`make_cluster`: the user's with `provision: false`, testbed.kafka.existing; bring-up, readiness and the live state the nemesis reads are its methods), the
replica dump after a run (`dump_replicas`), the client under test's venv (`ensure_client`), and the machine's one-cluster record (`active_file`).
`Machine()` is the real one, what the CLI runs with; the fast tests build one with the fake
runtime of tests/fakes.py and a cluster whose Kafka-only steps answer as a healthy cluster would,
so the rest of the run flow is the real code.
Must never: hold state of a run (it is frozen, shared by every run of a process).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from testbed.addressing import AddressPlan
from testbed.dist.clients import ClientEnv, ensure_client
from testbed.dist.kafka import ensure_kafka
from testbed.kafka.cluster import KafkaCluster
from testbed.kafka.config import ClusterSettings
from testbed.kafka.existing import new_cluster
from testbed.kafka.replicas import dump_replicas
from testbed.runfolder import RunFolder
from testbed.runtime.base import Runtime
from testbed.runtime.factory import make_runtime, preflight
from testbed.state import RunState

FinalLog = dict[int, dict[int, set[str]]]


class Preflight(Protocol):
    def __call__(self, kind_name: str, plan: AddressPlan, kafka_version: str, inventory: str | None = None,
                 known_hosts: str | None = None, power_cuts: bool = False,
                 client_versions: tuple[str, ...] = ()) -> None: ...


class ReplicaDump(Protocol):
    def __call__(self, folder: RunFolder, topic: str, kafka_version: str,
                 final: FinalLog | None = None) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Machine:
    """What a run is given of the machine: each field defaults to the real part (see the module docstring)."""

    make_runtime: Callable[[str, str, AddressPlan, RunState], Runtime] = make_runtime
    preflight: Preflight = preflight
    ensure_kafka: Callable[[str], object] = ensure_kafka
    make_cluster: Callable[[Runtime, ClusterSettings, RunFolder], KafkaCluster] = new_cluster
    dump_replicas: ReplicaDump = dump_replicas
    ensure_client: Callable[[str], ClientEnv] = ensure_client  # the client under test's venv (clients.confluent_kafka)
    active_file: Path | None = None  # None: testbed.paths.ACTIVE_FILE, the machine's own


REAL = Machine()
