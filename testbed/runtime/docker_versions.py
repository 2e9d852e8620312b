"""The Kafka versions a docker node runs: its image's, and a rolling upgrade's second one, put in the container.

A node container runs `faultline/kafka:<the cluster's version>` for its whole life, with that version's jars at
/opt/kafka/libs. A rolling upgrade's `to_version` (the run's `upgrade_versions`, in the state's settings) comes as
the tar of this machine's cache (`testbed.dist.archives.kafka_archive`, the one the ssh runtime uploads), put in the
container through the daemon's API and unpacked at `<root>/kafka-<version>/libs`, once per node and version, at the
node's first install: before the run's timeline, so no step of the roll waits for an upload, and any daemon will do
(nothing is bound from this machine). Both run on the image's java (17): the spec checks refuse an upgrade to a
version whose Java the docker nodes do not have (`RuntimeKind.node_javas`). The ZooKeeper servers stay on the image's.

Must never: put jars in a client container, or touch the image's own jars.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from testbed.addressing import Host
from testbed.dist.archives import kafka_archive
from testbed.dist.kafka import DEFAULT_VERSION

IMAGE_CLASSPATH = "/opt/kafka/libs/*"  # the node image's own jars (compose/kafka/Dockerfile)
PutTar = Callable[[Host, str, bytes], None]  # (host, directory in the container, a tar to unpack there)


class NodeVersions:
    """Which jars each node container has, and the classpath of each version on it."""

    def __init__(self, root: str, put_tar: PutTar, settings: Callable[[], Mapping[str, Any]]) -> None:
        self.root = root
        self._put_tar = put_tar
        self._settings = settings  # the run's cluster settings, as its state records them
        self._put: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    @property
    def image_version(self) -> str:
        return str(self._settings().get("kafka_version", DEFAULT_VERSION))

    def directory(self, version: str) -> str:
        return f"{self.root}/kafka-{version}"

    def install(self, host: Host) -> None:
        """Put every upgrade version's jars on a node (nothing on a client host, nothing for the image's version)."""
        for version in self._settings().get("upgrade_versions") or ():
            self._ensure(host, str(version))

    def classpath(self, host: Host, version: str) -> str:
        """The classpath of Kafka `version` on `host`: the image's jars, or a second version's (put first if not
        there yet)."""
        if version == self.image_version:
            return IMAGE_CLASSPATH
        self._ensure(host, version)
        return f"{self.directory(version)}/libs/*"

    def _ensure(self, host: Host, version: str) -> None:
        if host.role != "node" or version == self.image_version:
            return
        with self._lock:
            if (host.name, version) in self._put:
                return
            archive, _ = kafka_archive(version)
            self._put_tar(host, self.directory(version), archive.read_bytes())
            self._put.add((host.name, version))
