"""A fault as plain data: the validated spec every fault kind is read into, and the words its keys use.

`nemesis.spec.parse_fault` builds a `FaultSpec` from a spec's mapping, by the
fault kind's record (`nemesis.registry`); every fault's implementation reads
it. Targets are *selectors* (`SELECTOR_RE`), resolved only when the fault
fires (`nemesis.targets`): `leader`, `controller`, `leader-controller` (the
node that is both), `follower` (an in-sync follower of the partition that is
not the controller), `random` (from the nemesis seed), an AZ (`az2`), a node
host (`az2-node`), a broker (`broker-1`), or `txn-coordinator:<process>` (the
broker a FindCoordinator for that transactional producer's transactional.id
names when the fault fires, e.g. `txn-coordinator:producer-az1-0`), or `group-coordinator:<group>` (the
broker a FindCoordinator for that consumer group names when the fault fires, e.g. `group-coordinator:alo`;
the group must be one of the spec's, which the harness checks). A node
selector used where an AZ is wanted means that node's AZ, and an AZ where a
node is wanted means its node.

Must never: validate (that is `nemesis.spec`), or reach a cluster.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from nemesis.links import Degradation
from nemesis.shapes import Scope
from testbed.journal_names import PRODUCER_PATTERN

# What a fault acts on, which says how its record is implemented and validated (`nemesis.registry`).
Category = Literal["partition", "process", "link", "workload", "client", "disk", "clock", "operation"]
Ends = Literal["az", "node"]
# Which process of a node a process fault hits (`role`): its broker, its ZooKeeper server or KRaft controller, both.
TargetRole = Literal["broker", "zookeeper", "both"]  # which JVMs of a targeted node a fault hits (both: each)

# The requests a `hold-request` may hold or release before, by the name the spec uses: Kafka's api key, and for
# EndTxn whether it commits (None: either).
HOLD_APIS: dict[str, tuple[int, bool | None]] = {
    "EndTxn": (26, None), "EndTxnCommit": (26, True), "EndTxnAbort": (26, False), "AddPartitionsToTxn": (24, None),
    "AddOffsetsToTxn": (25, None), "TxnOffsetCommit": (28, None), "Produce": (0, None)}
# A disk fault's `path`: which of a node's data it acts on (nemesis.disk_faults), and the calls `disk-error` fails.
DISK_PATHS = ("log-dir", "partition", "quorum")
DISK_OPS = ("write", "fsync", "read")
STATE_SELECTORS = ("leader", "controller", "leader-controller", "follower")
# `txn-coordinator:<process>`: the transaction coordinator of a transactional producer's transactional.id.
TXN_COORDINATOR = "txn-coordinator:"
# `group-coordinator:<group>`: the group coordinator of a consumer group of the spec.
GROUP_COORDINATOR = "group-coordinator:"
GROUP_PATTERN = r"[A-Za-z0-9._-]+"  # a group id a selector can name (the spec's `group`, faultline-g0)
SELECTOR_RE = re.compile(r"^(leader|controller|leader-controller|follower|random|az[1-9]|az[1-9]-node|broker-[0-8]"
                         rf"|txn-coordinator:{PRODUCER_PATTERN}|group-coordinator:{GROUP_PATTERN})$")


@dataclass(frozen=True)
class DiskRule:
    """A disk fault's values (`disk-error`, `disk-full`, `slow-disk`), validated."""

    path: str = "log-dir"  # DISK_PATHS
    log_dir: int | None = None  # path log-dir with cluster.log_dirs > 1: which one (None: every one)
    ops: tuple[str, ...] = ("write", "fsync")  # disk-error: the calls it fails
    probability: float = 1.0  # disk-error: of each call
    free_bytes: int = 0  # disk-full: bytes the files under the path may still grow by
    fsync_delay_ms: float = 0.0  # slow-disk
    fsync_jitter_ms: float = 0.0
    delay_writes: bool = False


# clock-strobe's highest `rate`: a running process may see a new clock offset up to CLOCK_REREAD_S (2 s) late
# (testbed.runtime.clocks), so a faster strobe's flips could pass unseen.
MAX_STROBE_RATE = 0.5


@dataclass(frozen=True)
class ClockRule:
    """A clock fault's values (`clock-skew`, `clock-jump`, `clock-strobe`), validated."""

    offset_ms: float  # added to each hit process's wall clock (negative: back)
    rate: float = 0.0  # clock-strobe: flips a second (0 < rate <= MAX_STROBE_RATE)


@dataclass(frozen=True)
class FaultSpec:
    """One validated fault. `targets` holds the selectors of `target`, `between`, `minority` or `middle`, or the
    workload process of `process`; `category` is its kind's (`nemesis.registry`)."""

    fault: str
    category: Category
    targets: tuple[str, ...] = ()
    partition: int = 0
    scope: Scope = "all"
    one_way: bool = False
    ends: Ends = "az"
    role: TargetRole = "broker"
    degrade: tuple[Degradation, Degradation] | None = None  # link kinds: (forward, backward)
    api: str = "EndTxn"  # hold-request: the request it holds (HOLD_APIS)
    release_before: str | None = None  # hold-request: once undone, forward it just before the next such request
    disk: DiskRule | None = None  # disk kinds: what the node's disk does
    clock: ClockRule | None = None  # clock kinds: how the processes' clocks move
    options: Mapping[str, Any] = field(default_factory=dict)  # an operation's validated keys (nemesis.operation_spec)
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def is_partition(self) -> bool:
        return self.category == "partition"

    @property
    def is_link(self) -> bool:
        """A degraded-link kind (`lossy-link`, `slow-link`, `throttle-link`)."""
        return self.category == "link"

    @property
    def is_workload(self) -> bool:
        """A fault on a workload process (`pause-workload`, `replace-workload`, `hold-request`): `targets` is that
        process."""
        return self.category == "workload"

    def to_json(self) -> dict[str, Any]:
        """The spec as written (validated), for journals."""
        return dict(self.raw) if self.raw else {"fault": self.fault}

    def __str__(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True)
