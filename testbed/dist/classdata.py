"""Class-data-sharing (CDS) archives of the ZooKeeper and Kafka JVMs: the classes a node loads, pre-parsed.

A node JVM spends most of its first seconds loading and verifying the same few
thousand classes; a CDS archive maps them from one file instead. `make setup`
builds one archive per role for a Kafka version (`python -m testbed.dist.classdata
VERSION`): a one-node ZooKeeper (quorum code, as the cluster runs it) and one
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

from testbed.errors import HarnessError
from testbed.dist.kafka import DEFAULT_VERSION, classpath, ensure_kafka, libs_dir
from testbed.kafka.wire import broker_view, zookeeper_mode

# The main class of each node role's JVM (the one owner: testbed.kafka.cluster starts them with it).
MAIN_CLASS = {"zookeeper": "org.apache.zookeeper.server.quorum.QuorumPeerMain", "broker": "kafka.Kafka"}
ROLES = tuple(MAIN_CLASS)
# Flags a node JVM starts with that decide whether an archive fits (the GC must match for archived heap objects).
ARCHIVE_JVM_FLAGS = ["-XX:+UseG1GC", "-Xss512k"]
TOPIC = "classdata"


def archive(version: str, role: str) -> Path:
    """Where the archive of `role`'s JVM for Kafka `version` lives (it may not exist)."""
    return libs_dir(version).parent / "cds" / f"{role}.jsa"


def _key_file(version: str) -> Path:
    return archive(version, "broker").parent / "key.json"


def build_key(version: str) -> dict[str, object]:
    """What the archives of `version` depend on: the JDK (its `java -version`), the classpath and the flags."""
    java = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=60)
    return {"java": java.stderr.strip(), "classpath": classpath(version), "flags": ARCHIVE_JVM_FLAGS,
            "roles": list(ROLES)}


def archives_current(version: str) -> bool:
    """Whether every role's archive exists and was built from this JDK, classpath and flags."""
    try:
        recorded = json.loads(_key_file(version).read_text())
    except (OSError, ValueError):
        return False
    return all(archive(version, role).exists() for role in ROLES) and recorded == build_key(version)


def archive_flags(version: str, role: str) -> list[str]:
    """The JVM flags that use the archive of `role` for `version`, or none when there is no archive."""
    path = archive(version, role)
    return [f"-XX:SharedArchiveFile={path}", "-Xshare:auto"] if path.exists() else []


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


def _java(role: str, cp: str, config: Path, log4j: Path, extra: list[str]) -> list[str]:
    return ["java", "-Xms256m", "-Xmx256m", *ARCHIVE_JVM_FLAGS, *extra, f"-Dlog4j.configuration=file:{log4j}",
            "-cp", cp, MAIN_CLASS[role], str(config)]


def _exercise(broker_port: int) -> None:
    """Create a topic, write to it and read it back: the classes a run's first seconds load."""
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    bootstrap = f"127.0.0.1:{broker_port}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, num_partitions=3, replication_factor=1)])[TOPIC].result(timeout=60)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
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
    cp = classpath(version)
    target = archive(version, "broker").parent
    target.mkdir(parents=True, exist_ok=True)
    _key_file(version).unlink(missing_ok=True)  # until every archive is rebuilt, they are not current
    with tempfile.TemporaryDirectory(prefix="faultline-classdata.") as scratch:
        work = Path(scratch)
        zk_port, broker_port = _free_port(), _free_port()
        paths = _configs(work, zk_port, (_free_port(), _free_port()), broker_port)
        lists = {role: work / f"{role}.classlist" for role in ROLES}
        procs: list[subprocess.Popen[bytes]] = []
        with _started(_java("zookeeper", cp, paths["zookeeper"], paths["log4j"],
                            [f"-XX:DumpLoadedClassList={lists['zookeeper']}"]), work / "zk.out", procs):
            _wait("ZooKeeper", lambda: zookeeper_mode("127.0.0.1", zk_port, 1.0) == "leader", 60, procs)
            with _started(_java("broker", cp, paths["broker"], paths["log4j"],
                                [f"-XX:DumpLoadedClassList={lists['broker']}"]), work / "broker.out", procs):
                _wait("the broker", lambda: broker_view("127.0.0.1", broker_port, None, 1.0).controller == 0,
                      90, procs)
                _exercise(broker_port)
        built = []
        for role in ROLES:
            staged = work / f"{role}.jsa"
            dump = subprocess.run(["java", *ARCHIVE_JVM_FLAGS, "-Xshare:dump", f"-XX:SharedClassListFile={lists[role]}",
                                   f"-XX:SharedArchiveFile={staged}", "-cp", cp],
                                  capture_output=True, text=True, timeout=300)
            if dump.returncode != 0 or not staged.exists():
                raise RuntimeError(f"java -Xshare:dump for {role} failed: {dump.stdout[-500:]}{dump.stderr[-500:]}")
            final = archive(version, role)
            shutil.move(str(staged), f"{final}.tmp")
            os.replace(f"{final}.tmp", final)
            built.append(final)
    key = _key_file(version)
    key.with_suffix(".tmp").write_text(json.dumps(build_key(version), indent=2) + "\n")
    os.replace(key.with_suffix(".tmp"), key)
    return built


if __name__ == "__main__":  # `python -m testbed.dist.classdata VERSION`: used by `make setup`
    wanted = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_VERSION
    started = time.monotonic()
    try:
        if archives_current(wanted):
            print(f"class-data archives for Kafka {wanted} in {archive(wanted, 'broker').parent} (current)")
            sys.exit(0)
        made = build_archives(wanted)
    except (OSError, RuntimeError, subprocess.SubprocessError, HarnessError) as exc:
        print(f"class-data archives for Kafka {wanted} not built (nodes start without them): {exc}", file=sys.stderr)
        sys.exit(0)
    print(f"class-data archives for Kafka {wanted} in {time.monotonic() - started:.0f} s: "
          + ", ".join(str(p) for p in made))
