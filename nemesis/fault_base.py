"""What every fault implementation shares: the `Fault` contract, what a fault may act on, and what a start did.

The partition, link and process faults (`nemesis.faults`), the workload
faults (`nemesis.workload_faults`) and the stray write (`nemesis.stray`) each
implement `Fault`; the registry (`nemesis.registry`) names one per kind and
the nemesis calls it. They import this module, never each other.

Must never: import an implementation, or reach a cluster at import time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from nemesis.fault_spec import FaultSpec
    from nemesis.firewall import Firewall
    from nemesis.journal import NemesisJournal
    from nemesis.targets import Resolver
    from testbed.addressing import AddressPlan
    from testbed.kafka.cluster import KafkaCluster, NodeRole


class WorkloadControl(Protocol):
    """What the harness lets the nemesis do to its workload processes; each raises FaultError when it cannot."""

    def pause(self, process: str) -> int:
        """SIGSTOP the running `process` and wait until it is stopped; its pid."""

    def resume(self, process: str) -> None:
        """SIGCONT it (nothing if it is not running) and wait until it runs."""

    def replace(self, process: str) -> str:
        """Start a process with `process`'s configuration and transactional.id; the new process's name."""

    def upgrade(self, process: str, version: str) -> dict[str, Any]:
        """Stop `process` cleanly and start its configuration again on confluent-kafka `version`: its new name
        (`replacement`), when it was stopped and started, and the new client's versions (`client`)."""

    def hold(self, process: str, kind: dict[str, Any]) -> dict[str, Any]:
        """Arm `process`'s proxy and wait until it holds a request of `kind` (`api_key`, `committed`): what it
        caught."""

    def release(self, process: str, before: dict[str, Any] | None = None) -> dict[str, Any]:
        """Forward what `process`'s proxy holds (with `before`: just before its next request of that kind), and
        wait until it did: when."""


@dataclass(frozen=True)
class FaultEnv:
    """What a fault may act on: the cluster's processes and the hosts' firewalls; where an operation journals
    its steps as it goes."""

    cluster: KafkaCluster
    firewall: Firewall
    workloads: WorkloadControl | None = None  # the run's workload processes (workload faults), from the harness
    journal: NemesisJournal | None = None  # the nemesis journal: an operation's `info` rows, one per step

    @property
    def plan(self) -> AddressPlan:
        return self.cluster.plan


@dataclass(frozen=True)
class Injected:
    """What one start of a fault did.

    `fault` is what the journal's `fault` column says: the spec's kind, except a
    `power-off` that dropped the nodes' unsynced writes, which is a `power-cut`.
    `targets` is what the journal's `targets` column says (compact: what a
    report labels the fault with); `detail` adds the particulars (every cut
    pair, pids). `key` (the firewall cut) or `processes` is what undo needs.
    """

    key: str
    fault: str
    targets: dict[str, Any]
    detail: dict[str, Any] = field(default_factory=dict)
    processes: tuple[tuple[str, NodeRole], ...] = field(default=())


class Fault(Protocol):
    """One kind of fault.

    `inject` resolves the spec's selectors through `resolver` (at most one look
    at the cluster), changes the cluster and returns what it hit. It raises
    FaultError before changing anything when a target cannot be resolved or a
    process it should hit is not running. `undo` reverses exactly what
    `inject` did and nothing else (what it returns, if anything, joins the stop row's detail: a disk fault's
    counts); it is idempotent (undoing twice, or undoing
    what is already undone, changes nothing) and raises FaultError when it
    cannot. Neither ever touches the control plane or a process outside the
    cluster.
    """

    def inject(self, spec: FaultSpec, resolver: Resolver, env: FaultEnv, key: str) -> Injected: ...

    def undo(self, injected: Injected, env: FaultEnv) -> dict[str, Any] | None: ...
