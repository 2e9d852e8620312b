"""Which software a run uses: faultline, Kafka, librdkafka, confluent-kafka, Python, and the project's commit.

The one owner of these facts: `faultline --version`, each run's manifest and the
report read them from here.
Must never: start a JVM or reach a cluster to find them (they are what the harness *will* use).
"""

from __future__ import annotations

import platform
import subprocess
from importlib import metadata

import confluent_kafka

from testbed.dist.kafka import DEFAULT_VERSION
from testbed.paths import REPO_ROOT


def faultline_version() -> str:
    try:
        return metadata.version("faultline")
    except metadata.PackageNotFoundError:
        return "unknown"


def commit() -> str | None:
    """The checkout's commit (with `-dirty` when it has uncommitted changes), or None outside a git checkout."""
    if not (REPO_ROOT / ".git").exists():  # an installed copy (site-packages) is no checkout, whatever encloses it
        return None
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True,
                              timeout=10)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO_ROOT,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    return head.stdout.strip() + ("-dirty" if dirty else "")


def software_versions(kafka_version: str = DEFAULT_VERSION) -> dict[str, str]:
    """Every version a run with Kafka `kafka_version` uses, by name."""
    return {
        "faultline": faultline_version(),
        "kafka": kafka_version,
        "librdkafka": confluent_kafka.libversion()[0],
        "confluent_kafka": metadata.version("confluent-kafka"),
        "python": platform.python_version(),
    }
