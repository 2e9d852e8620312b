"""One of Kafka's own command-line tools (a main class on the Kafka classpath) run on a node's host.

The KRaft storage format (`kafka.tools.StorageTool`, testbed.kafka.kraft) and the feature tool
(`org.apache.kafka.tools.FeatureCommand`, testbed.kafka.features) run this way: a small JVM with the jars of the
Kafka version that node runs, its failure told in the tool's own last words rather than its command line (whose
classpath is ~100 jars).
Must never: start a long-lived process (the tool runs to its end, bounded by its timeout).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from testbed.errors import ClusterError, RuntimeFailure

if TYPE_CHECKING:
    from testbed.addressing import Host
    from testbed.kafka.cluster import KafkaCluster


def run_tool(cluster: KafkaCluster, node: Host, version: str, main: str, args: list[str], timeout: float,
             doing: str) -> str:
    """Run `main` with `args` on `node` with Kafka `version`'s jars; its stdout. ClusterError starting with `doing`
    if the runtime cannot run it or the tool exits non-zero."""
    sw = cluster.software(node, version)
    argv = [sw.java, "-Xmx256m", "-cp", sw.kafka_classpath, main, *args]
    try:
        done = cluster.runtime.execute(node, argv, timeout=timeout, check=False)
    except RuntimeFailure as exc:
        raise ClusterError(f"{doing}: {exc}") from exc
    if done.returncode != 0:
        said = " | ".join((done.stderr or done.stdout).strip().splitlines()[-2:])[-300:]
        raise ClusterError(f"{doing} ({main.rsplit('.', 1)[-1]}): exit {done.returncode}: {said}")
    return done.stdout
