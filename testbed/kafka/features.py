"""A KRaft cluster's finalized `metadata.version`, read and set with Kafka's own tool (what `kafka-features.sh` runs).

The tool (`org.apache.kafka.tools.FeatureCommand`, 3.5 on) runs on one node with the Kafka version its broker runs
now, against the cluster's brokers (the Admin API's UpdateFeatures and DescribeFeatures); the level is given as
`--feature metadata.version=<level>`, which 3.x and 4.x both take (4.x deprecates `--metadata`). A refusal comes back
in the tool's own words (`testbed.kafka.kafka_tools`; the controller's: "Refusing to perform the requested downgrade ...").
Must never: ask for an unsafe downgrade (`--unsafe`), or set any feature but metadata.version.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from testbed.kafka.kafka_tools import run_tool

if TYPE_CHECKING:
    from testbed.addressing import Host
    from testbed.kafka.cluster import KafkaCluster

FEATURE_TOOL = "org.apache.kafka.tools.FeatureCommand"
TOOL_TIMEOUT_S = 90.0
FINALIZED_RE = re.compile(r"Feature: metadata\.version\s.*FinalizedVersionLevel: (\S+)")


def _run(cluster: KafkaCluster, node: Host, args: list[str]) -> str:
    return run_tool(cluster, node, cluster.broker_version(node), FEATURE_TOOL,
                    ["--bootstrap-server", cluster.bootstrap, *args], TOOL_TIMEOUT_S,
                    f"kafka-features {' '.join(args)} on {node.name}")


def finalized_metadata_version(cluster: KafkaCluster, node: Host) -> str | None:
    """The cluster's finalized metadata.version as the tool's `describe` names it ("3.9-IV0"); None if unnamed."""
    found = FINALIZED_RE.search(_run(cluster, node, ["describe"]))
    return found.group(1) if found else None


def set_metadata_version(cluster: KafkaCluster, node: Host, level: int, downgrade: bool) -> str | None:
    """Raise (`upgrade`) or lower (`downgrade`, a safe one only) the finalized metadata.version to feature level
    `level`, from `node`; the level the cluster names afterwards. ClusterError with the tool's words if refused."""
    _run(cluster, node, ["downgrade" if downgrade else "upgrade", "--feature", f"metadata.version={level}"])
    return finalized_metadata_version(cluster, node)
