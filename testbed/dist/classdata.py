"""Class-data-sharing (CDS) archives of the ZooKeeper and Kafka JVMs: the classes a node loads, pre-parsed.

A node JVM spends most of its first seconds loading and verifying the same few
thousand classes; a CDS archive maps them from one file instead. `make setup`
builds one archive per role for a Kafka version (`python -m testbed.kafka.classdata_build
VERSION`, which holds the build): a one-node ZooKeeper (quorum code, as the cluster runs it) and one
broker are started on loopback with -XX:DumpLoadedClassList, a topic is created
and written to, both stop, and `java -Xshare:dump` writes `<cache>/kafka-V/cds/
<role>.jsa`. Nodes of the netns runtime then start with -XX:SharedArchiveFile
(testbed.kafka.cluster.java_argv); the JVM validates the archive against the
classpath and the JDK itself and starts without it if it does not match, so a
stale archive costs only its speed-up. Beside the archives, `key.json` records
what they were built from (the `java -version`, the classpath, the flags):
`make setup` rebuilds only when that changed. Only the netns runtime uses them
(its nodes run on this machine's JDK and jar cache); docker and ssh hosts start
their JVMs without.
Here: where the archives are, whether they are current, and the flags that use
them, which the runtimes and the cluster both read (so this sits below both).
Must never: start a process or write a file (the build does that).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from testbed.dist.kafka import classpath, libs_dir

# The main class of each node role's JVM (the one owner: testbed.kafka.cluster starts them with it).
MAIN_CLASS = {"zookeeper": "org.apache.zookeeper.server.quorum.QuorumPeerMain", "broker": "kafka.Kafka"}
ROLES = tuple(MAIN_CLASS)
# Flags a node JVM starts with that decide whether an archive fits (the GC must match for archived heap objects).
ARCHIVE_JVM_FLAGS = ["-XX:+UseG1GC", "-Xss512k"]


def archive(version: str, role: str) -> Path:
    """Where the archive of `role`'s JVM for Kafka `version` lives (it may not exist)."""
    return libs_dir(version).parent / "cds" / f"{role}.jsa"


def key_file(version: str) -> Path:
    return archive(version, "broker").parent / "key.json"


def build_key(version: str) -> dict[str, object]:
    """What the archives of `version` depend on: the JDK (its `java -version`), the classpath and the flags."""
    java = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=60)
    return {"java": java.stderr.strip(), "classpath": classpath(version), "flags": ARCHIVE_JVM_FLAGS,
            "roles": list(ROLES)}


def archives_current(version: str) -> bool:
    """Whether every role's archive exists and was built from this JDK, classpath and flags."""
    try:
        recorded = json.loads(key_file(version).read_text())
    except (OSError, ValueError):
        return False
    return all(archive(version, role).exists() for role in ROLES) and recorded == build_key(version)


def archive_flags(version: str, role: str) -> list[str]:
    """The JVM flags that use the archive of `role` for `version`, or none when there is no archive."""
    path = archive(version, role)
    return [f"-XX:SharedArchiveFile={path}", "-Xshare:auto"] if path.exists() else []
