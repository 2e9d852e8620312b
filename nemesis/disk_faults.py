"""Disk faults: the nodes' unsyncfs mounts fail or slow the calls under one path of their data (EIO, ENOSPC,
a slow fsync), from the fault's start to its stop.

The runtime (`DiskFaults`, testbed.runtime.base) hands each node's mount a rule
(testbed/unsyncfs/faults.go): `disk-error` fails the `ops` it names (write,
fsync, read) with EIO, each call with `probability`; `disk-full` fails with
ENOSPC a write that would grow the files under the path more than `free_bytes`
past what they held at the start, and the space comes back at the stop;
`slow-disk` makes every fsync (with `delay_writes`, every write too) wait
`fsync_delay_ms` plus a uniform 0..`fsync_jitter_ms`. The `path` is one of a
node's data: `log-dir` (the broker's log directory), `partition` (the spec's
`partition` of the workload topic, its directory in the log directory),
`quorum` (ZooKeeper's data directory, or the KRaft controller's metadata log:
its own directory, or `__cluster_metadata-0` in a combined node's log
directory). With several log directories per broker (`cluster.log_dirs`),
`log_dir` picks the one `log-dir` fails (JBOD: the broker takes its partitions
offline and serves the others'). The stop takes the rules off, then starts again the process that
uses the path where it died meanwhile (a broker halts when its last log
directory failed, as a supervisor would restart it on a repaired disk), and
journals what each node's rule counted: every call it failed or delayed, in
all and per file, and what it restarted.

Must never: act on a node whose data is not on unsyncfs, or touch a file outside the node's data.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from nemesis.fault_base import FaultEnv, Injected
from nemesis.faults import start_again
from testbed.errors import ClusterError, FaultError, RuntimeFailure
from testbed.runtime.base import DiskFaults

if TYPE_CHECKING:
    from nemesis.fault_spec import FaultSpec
    from nemesis.targets import Resolver
    from testbed.addressing import Host
    from testbed.kafka.cluster import KafkaCluster, NodeRole

KRAFT_METADATA = "__cluster_metadata-0"


def data_path(cluster: KafkaCluster, node: Host, path: str, partition: int,
              log_dir: int | None = None) -> tuple[Path, str]:
    """The node's data directory that holds `path`, and the prefix under it (faults.go's `path`). With several log
    directories (`cluster.log_dirs`), `log_dir` picks one (None: all), a partition's directory is looked for in
    whichever holds it, and a combined KRaft node's metadata log is in the first."""
    folder = cluster.node_folder(node)
    jbod = cluster.settings.log_dirs > 1
    if path == "log-dir":
        return folder.data("broker"), f"dir-{log_dir}" if jbod and log_dir is not None else ""
    if path == "partition":
        return folder.data("broker"), f"{'*/' if jbod else ''}{cluster.settings.topic}-{partition}"
    quorum = cluster.settings.quorum_role
    if quorum is None:  # combined KRaft: the metadata log lives in the broker's (first) log directory
        return folder.data("broker"), f"{'dir-0/' if jbod else ''}{KRAFT_METADATA}"
    return folder.data(quorum), ""


def rule_of(spec: FaultSpec, rule_id: str, prefix: str) -> dict[str, Any]:
    """The fault as a rule of faults.go."""
    disk = spec.disk
    assert disk is not None
    rule: dict[str, Any] = {"id": rule_id, "kind": spec.fault, "path": prefix}
    if spec.fault == "disk-error":
        rule.update(ops=list(disk.ops), p=disk.probability)
    elif spec.fault == "disk-full":
        rule.update(free_bytes=disk.free_bytes)
    else:
        rule.update(delay_ms=disk.fsync_delay_ms, jitter_ms=disk.fsync_jitter_ms, writes=disk.delay_writes)
    return rule


def _runtime(env: FaultEnv, fault: str) -> DiskFaults:
    runtime = env.cluster.runtime
    if not isinstance(runtime, DiskFaults) or not env.cluster.loses_unsynced_writes:
        raise FaultError(f"{fault}: the nodes' data is not on unsyncfs on this run (the {runtime.kind} runtime, "
                         f"cluster.lose_unsynced_writes {env.cluster.settings.lose_unsynced_writes})")
    return runtime


class DiskFault:
    """disk-error, disk-full, slow-disk: one rule on each target node's mount; undone by taking it off."""

    def inject(self, spec: FaultSpec, resolver: Resolver, env: FaultEnv, key: str) -> Injected:
        assert spec.disk is not None
        runtime = _runtime(env, spec.fault)
        nodes = resolver.nodes(spec.targets)
        started: list[tuple[Host, Path]] = []
        paths = {}
        try:
            for node in nodes:
                data_dir, prefix = data_path(env.cluster, node, spec.disk.path, spec.partition, spec.disk.log_dir)
                runtime.start_disk_fault(node, data_dir, rule_of(spec, key, prefix))
                started.append((node, data_dir))
                paths[node.name] = f"{data_dir.name}/{prefix}" if prefix else data_dir.name
        except RuntimeFailure as exc:
            for node, data_dir in started:
                runtime.stop_disk_fault(node, data_dir, key)
            raise FaultError(f"{spec.fault}: {exc}") from exc
        targets = {"nodes": [n.name for n in nodes], "brokers": sorted(n.broker_id for n in nodes),
                   "path": spec.disk.path, "paths": paths}
        role = cast("NodeRole", (env.cluster.settings.quorum_role or "broker") if spec.disk.path == "quorum"
                    else "broker")
        return Injected(key, spec.fault, targets, {"rule": rule_of(spec, key, ""), "partition": spec.partition},
                        tuple((n.name, role) for n in nodes))

    def undo(self, injected: Injected, env: FaultEnv) -> dict[str, Any]:
        runtime = _runtime(env, injected.fault)
        spec_path = injected.targets["path"]
        counts: dict[str, Any] = {}
        for name, _ in injected.processes:
            node = env.cluster.plan.host(name)
            data_dir, _ = data_path(env.cluster, node, spec_path, injected.detail["partition"])
            try:
                counts[name] = {"path": injected.targets["paths"].get(name, ""),
                                **runtime.stop_disk_fault(node, data_dir, injected.key)}
            except RuntimeFailure as exc:
                raise FaultError(f"{injected.fault}: {exc}") from exc
        procs = [(env.cluster.plan.host(name), role) for name, role in injected.processes]
        try:
            started = start_again(env.cluster, procs)
        except ClusterError as exc:
            raise FaultError(f"{injected.fault}: {exc}") from exc
        return {"counts": counts, "restarted": [env.cluster.process_name(n, r) for n, r in started]}


DISK_FAULT = DiskFault()
