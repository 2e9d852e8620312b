"""KRaft metadata snapshots on each node: what a rolling downgrade waits for once it has lowered metadata.version.

A KRaft process (a controller and a broker alike) starts from the newest snapshot of its copy of the metadata log
(`__cluster_metadata-0/<end offset>-<epoch>.checkpoint`, the end offset exclusive) and replays the log after it.
Kafka writes a snapshot only after so many bytes replayed or so much time (`metadata.log.max.snapshot.interval.ms`,
an hour by default: 3.9.1's SnapshotGenerator, read from its bytecode), never on a metadata.version change. So an
older release started after the level was raised and lowered again replays the raised FeatureLevelRecord from the
log and exits ("this controller only supports versions 1-19", measured from 3.9.1 to 3.7.2). A cluster whose spec
has a KRaft rolling-downgrade therefore snapshots every few seconds (`ClusterSettings.metadata_snapshot_interval_ms`,
`config.DOWNGRADE_SNAPSHOT_INTERVAL_MS`; the controllers' no-op records, every 500 ms from KIP-835, keep the time
criterion checked on an idle cluster), and the downgrade, the level lowered, waits until every metadata log of the
cluster holds a snapshot ending at or past the quorum's high watermark then: the lowering inside it, so that no process
started on the older release reads the raised level.
Must never: write, change or remove a snapshot or a log.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

from testbed.errors import ClusterError, RuntimeFailure
from testbed.kafka import config as kcfg
from testbed.kafka.kraft import leading_view, quorum_views

if TYPE_CHECKING:
    from testbed.addressing import Host
    from testbed.kafka.cluster import KafkaCluster

METADATA_LOG = "__cluster_metadata-0"
CHECKPOINT_RE = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
POLL_S = 0.5


def metadata_logs(cluster: KafkaCluster) -> list[tuple[Host, str, Path]]:
    """(node, role, directory) of every copy of the metadata log: each broker's, in its first log directory, and,
    with separate controllers, each controller's, in its own data directory."""
    first = kcfg.log_dir_names(cluster.settings)[0]
    logs = [(node, "broker", cluster.node_folder(node).data("broker") / first / METADATA_LOG)
            for node in cluster.nodes]
    role = cluster.settings.quorum_role
    if role is not None:
        logs += [(node, role, cluster.node_folder(node).data(role) / METADATA_LOG) for node in cluster.nodes]
    return logs


def newest_snapshot(names: list[str]) -> int | None:
    """The end offset of the newest snapshot among a metadata log directory's file names, None without one."""
    ends = [int(m.group(1)) for m in map(CHECKPOINT_RE.match, names) if m]
    return max(ends) if ends else None


def high_watermark(cluster: KafkaCluster) -> int | None:
    """The metadata log's high watermark as the active controller answers DescribeQuorum; None when none leads."""
    newest = leading_view(quorum_views(cluster, 2.0))
    return None if newest is None else newest.high_watermark


def snapshots_now(cluster: KafkaCluster) -> dict[str, int | None]:
    """`<node>/<role>` -> the end offset of that metadata log's newest snapshot (None: none, or unreadable)."""
    found: dict[str, int | None] = {}
    for node, role, directory in metadata_logs(cluster):
        try:
            done = cluster.runtime.execute(node, ["ls", cluster.runtime.host_path(node, directory)], timeout=10.0,
                                           check=False)
            found[f"{node.name}/{role}"] = newest_snapshot(done.stdout.split()) if done.returncode == 0 else None
        except RuntimeFailure:
            found[f"{node.name}/{role}"] = None
    return found


def wait_snapshots_past(cluster: KafkaCluster, offset: int, timeout: float) -> dict[str, int | None]:
    """Each metadata log's newest snapshot end offset once every one is at or past `offset`; ClusterError naming
    those still short of it after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        found = snapshots_now(cluster)
        short = {log: end for log, end in found.items() if end is None or end < offset}
        if not short:
            return found
        if time.monotonic() >= deadline:
            said = ", ".join(f"{log} {'none' if end is None else end}" for log, end in sorted(short.items()))
            raise ClusterError(f"no metadata snapshot at or past offset {offset} within {timeout:.0f} s on {said}: "
                               f"a process started on the older release would replay the raised metadata.version")
        time.sleep(POLL_S)
