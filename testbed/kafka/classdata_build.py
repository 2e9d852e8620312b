"""Build the class-data-sharing archives of the ZooKeeper and Kafka JVMs (`python -m testbed.kafka.classdata_build VERSION`).

Where the archives live, whether they are current and the flags that use them
are testbed.dist.classdata (the runtimes and the cluster read them from
there); this module makes them: a one-node ZooKeeper (quorum code, as the
cluster runs it) and one broker are started on loopback with
-XX:DumpLoadedClassList, a topic is created and written to, both stop, and
`java -Xshare:dump` writes each role's archive, then `key.json`. It lives with
Kafka because it starts Kafka nodes and asks them over their own wire
protocol (testbed.kafka.wire) whether they are up.
Must never: listen anywhere but 127.0.0.1, leave a process or a scratch folder
behind, or leave a half-written archive where a node would use it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from testbed.dist.classdata import (
    ARCHIVE_JVM_FLAGS,
    MAIN_CLASS,
    ROLES,
    archive,
    archives_current,
    build_key,
    key_file,
)
from testbed.dist.kafka import DEFAULT_VERSION, classpath, ensure_kafka, java_for
from testbed.dist.versions import release
from testbed.errors import HarnessError
from testbed.kafka.wire import broker_view, zookeeper_mode

TOPIC = "classdata"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(what: str, check: Callable[[], bool], timeout: float, procs: list[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(p.poll() is not None for p in procs):
            raise RuntimeError(f"a JVM exited while waiting for {what}")
        with contextlib.suppress(OSError, ConnectionError, ValueError):
            if check():
                return
        time.sleep(0.2)
    raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}")


@contextlib.contextmanager
def _started(argv: list[str], log: Path, procs: list[subprocess.Popen[bytes]]) -> Iterator[None]:
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    procs.append(proc)
    try:
        yield
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _configs(work: Path, zk_port: int, election: tuple[int, int], broker_port: int) -> dict[str, Path]:
    (work / "zk").mkdir()
    (work / "zk" / "myid").write_text("1\n")
    zoo = work / "zoo.cfg"
    # standaloneEnabled=false: one server runs the quorum code the cluster's three run.
    zoo.write_text(f"tickTime=500\ninitLimit=20\nsyncLimit=10\ndataDir={work / 'zk'}\nclientPort={zk_port}\n"
                   f"clientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=srvr\n"
                   f"standaloneEnabled=false\nserver.1=127.0.0.1:{election[0]}:{election[1]}\n")
    server = work / "server.properties"
    server.write_text(f"broker.id=0\nlisteners=PLAINTEXT://127.0.0.1:{broker_port}\nlog.dirs={work / 'kafka'}\n"
                      f"zookeeper.connect=127.0.0.1:{zk_port}\noffsets.topic.replication.factor=1\n"
                      "transaction.state.log.replication.factor=1\ntransaction.state.log.min.isr=1\n"
                      "auto.create.topics.enable=false\ngroup.initial.rebalance.delay.ms=0\n")
    log4j = work / "log4j.properties"
    log4j.write_text("log4j.rootLogger=INFO, main\nlog4j.appender.main=org.apache.log4j.FileAppender\n"
                     f"log4j.appender.main.File={work / 'server.log'}\n"
                     "log4j.appender.main.layout=org.apache.log4j.PatternLayout\n")
    return {"zookeeper": zoo, "broker": server, "log4j": log4j}


def _java(java: str, role: str, cp: str, config: Path, log4j: Path, extra: list[str]) -> list[str]:
    return [java, "-Xms256m", "-Xmx256m", *ARCHIVE_JVM_FLAGS, *extra, f"-Dlog4j.configuration=file:{log4j}",
            "-cp", cp, MAIN_CLASS[role], str(config)]


def _exercise(broker_port: int, idempotence: bool) -> None:
    """Create a topic, write to it and read it back: the classes a run's first seconds load."""
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    bootstrap = f"127.0.0.1:{broker_port}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, num_partitions=3, replication_factor=1)])[TOPIC].result(timeout=60)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": idempotence})
    for i in range(300):
        producer.produce(TOPIC, value=f"v{i}".encode(), partition=i % 3)
    producer.flush(30)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "classdata", "auto.offset.reset": "earliest"})
    consumer.subscribe([TOPIC])
    deadline, seen = time.monotonic() + 30, 0
    while seen < 300 and time.monotonic() < deadline:
        seen += len(consumer.consume(500, 1.0))
    consumer.close()


def build_archives(version: str = DEFAULT_VERSION) -> list[Path]:
    """Build (or rebuild) the archive of each role for `version`; return their paths."""
    ensure_kafka(version)
    cp, java, row = classpath(version), java_for(version), release(version)
    target = archive(version, "broker").parent
    target.mkdir(parents=True, exist_ok=True)
    key_file(version).unlink(missing_ok=True)  # until every archive is rebuilt, they are not current
    with tempfile.TemporaryDirectory(prefix="faultline-classdata.") as scratch:
        work = Path(scratch)
        zk_port, broker_port = _free_port(), _free_port()
        paths = _configs(work, zk_port, (_free_port(), _free_port()), broker_port)
        lists = {role: work / f"{role}.classlist" for role in ROLES}
        procs: list[subprocess.Popen[bytes]] = []
        with _started(_java(java, "zookeeper", cp, paths["zookeeper"], paths["log4j"],
                            [f"-XX:DumpLoadedClassList={lists['zookeeper']}"]), work / "zk.out", procs):
            # ZooKeeper 3.4 (Kafka before 2.4) has no standaloneEnabled: its one server runs standalone.
            _wait("ZooKeeper", lambda: zookeeper_mode("127.0.0.1", zk_port, 1.0) in ("leader", "standalone"),
                  60, procs)
            with _started(_java(java, "broker", cp, paths["broker"], paths["log4j"],
                                [f"-XX:DumpLoadedClassList={lists['broker']}"]), work / "broker.out", procs):
                _wait("the broker", lambda: broker_view("127.0.0.1", broker_port, None, 1.0).controller == 0,
                      90, procs)
                _exercise(broker_port, row.idempotence)
        built = []
        for role in ROLES:
            staged = work / f"{role}.jsa"
            dump = subprocess.run([java, *ARCHIVE_JVM_FLAGS, "-Xshare:dump", f"-XX:SharedClassListFile={lists[role]}",
                                   f"-XX:SharedArchiveFile={staged}", "-cp", cp],
                                  capture_output=True, text=True, timeout=300)
            if dump.returncode != 0 or not staged.exists():
                raise RuntimeError(f"java -Xshare:dump for {role} failed: {dump.stdout[-500:]}{dump.stderr[-500:]}")
            final = archive(version, role)
            shutil.move(str(staged), f"{final}.tmp")
            os.replace(f"{final}.tmp", final)
            built.append(final)
    key = key_file(version)
    key.with_suffix(".tmp").write_text(json.dumps(build_key(version), indent=2) + "\n")
    os.replace(key.with_suffix(".tmp"), key)
    return built


if __name__ == "__main__":  # `python -m testbed.kafka.classdata_build VERSION`: used by `make setup`
    wanted = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_VERSION
    started = time.monotonic()
    try:
        if "zookeeper" not in release(wanted).metadata_modes:  # the build runs a ZooKeeper; 4.x has none
            print(f"class-data archives for Kafka {wanted} not built: the build runs a one-node ZooKeeper and "
                  f"Kafka {wanted} is KRaft only (nodes start without them)", file=sys.stderr)
            sys.exit(0)
        if archives_current(wanted):
            print(f"class-data archives for Kafka {wanted} in {archive(wanted, 'broker').parent} (current)")
            sys.exit(0)
        made = build_archives(wanted)
    except (OSError, RuntimeError, subprocess.SubprocessError, HarnessError) as exc:
        print(f"class-data archives for Kafka {wanted} not built (nodes start without them): {exc}", file=sys.stderr)
        sys.exit(0)
    print(f"class-data archives for Kafka {wanted} in {time.monotonic() - started:.0f} s: "
          + ", ".join(str(p) for p in made))
