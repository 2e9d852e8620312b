"""Docker's own kill, stop, start, pause and unpause of a user's broker containers (a Docker inventory without
command lines, runtime docker-existing), on a real daemon.

The bed (tests/docker/their_containers.py, `split=True`) is started by the test with plain Docker calls, not by
faultline: per AZ a ZooKeeper container holding the AZ's address and a broker container in its network namespace,
so docker's calls on a broker's container act on that broker alone. The run is the catalogue's retry-duplicates,
configuration idempotent (its leader kill is `docker kill` of the leader's container, `docker start` at its stop;
its one-way cuts are the run's chains in the ZooKeeper containers' namespaces), with a graceful stop of the
leader (`docker stop`, `docker start`) and a pause of the leader (`docker pause`, `docker unpause`) after it. The
test pins the mechanism: the daemon's own events and the containers' states sampled during the run (exited or
paused while each fault lasts, running after; the ZooKeeper containers never touched), the partition's leader
before each fault and who led it while the killed or stopped broker was down (the brokers' own views,
`observations`), the catalogue's verdict, and afterwards the containers (ids, configuration, network mode,
iptables), the brokers' and topics' configuration, every topic but the run's own, the end offsets and the user's
group as they were. First, what the inventory refuses for docker's own calls: one line, exit 3, nothing started.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
import yaml

from testbed.dist.kafka import DEFAULT_VERSION
from testbed.runtime.base import new_prefix
from testbed.runtime.docker_api import docker_client
from testbed.runtime.dockerd import OwnDockerd
from tests.conftest import REPO, faultline, run_dir_of
from tests.docker.their_containers import TheirContainers, look, start_their_containers
from tests.ssh.their_cluster import USER_GROUP, USER_TOPIC

pytestmark = [pytest.mark.docker, pytest.mark.cluster, pytest.mark.catalogue]  # `make test-docker`, not `make test`

# After the catalogue's story (its events end at 35 s): docker stop of the leader's container, started again; then
# docker pause of the leader's, unpaused after 4 s (the brokers' ZooKeeper session is 6 s: it keeps its
# leadership). Room for each start (the old registration's session to end, the JVM to listen): the schedule runs
# its events in turn, and skips what the run's end overtakes.
AFTER = [{"at": 45, "fault": "graceful-stop", "target": "leader", "name": "stop-leader"},
         {"at": 52, "stop": "stop-leader"},
         {"at": 68, "fault": "pause", "target": "leader", "name": "pause-leader"},
         {"at": 72, "stop": "pause-leader"}]
DURATION_S = 85
SAMPLE_S = 0.2
SIGNALS = {"KILL": "9", "SIGKILL": "9", "TERM": "15", "SIGTERM": "15"}  # a daemon may name the signal of a kill


@pytest.fixture(scope="module")
def theirs(own_dockerd: OwnDockerd) -> Iterator[TheirContainers]:
    client = docker_client(own_dockerd.host)
    cluster = None
    try:
        cluster = start_their_containers(client, new_prefix(), f"faultline/kafka:{DEFAULT_VERSION}", split=True)
        yield cluster
    finally:
        if cluster is not None:
            cluster.stop()
        client.close()


def your_inventory(own_dockerd: OwnDockerd, theirs: TheirContainers, path: Path, zookeeper: bool = True) -> Path:
    path.write_text(yaml.safe_dump({
        "daemon": own_dockerd.host, "ports": [9092, 2181, 2888, 3888],
        "nodes": [{"az": f"az{az}", "broker": theirs.name(az),
                   **({"zookeeper": theirs.zookeeper_name(az)} if zookeeper else {})} for az in (1, 2, 3)]},
        sort_keys=False))
    return path


class States:
    """Each container's state as `docker inspect` says it, sampled every SAMPLE_S while the run lasts."""

    def __init__(self, theirs: TheirContainers) -> None:
        self.theirs, self.done = theirs, threading.Event()
        self.rows: list[tuple[int, str, str]] = []  # (time_ns, container, status)
        self.thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self.done.wait(SAMPLE_S):
            for name in self.theirs.names():
                status = self.theirs.client.api.inspect_container(name)["State"]["Status"]
                self.rows.append((time.time_ns(), name, status))

    def __enter__(self) -> States:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join(10)

    def seen(self, name: str, start_ns: int, end_ns: int) -> set[str]:
        return {s for t, n, s in self.rows if n == name and start_ns <= t <= end_ns}


def events(theirs: TheirContainers, since: float, until: float) -> list[tuple[str, str, str]]:
    """The daemon's own record of what happened to the bed's containers: (container, action, signal or exit)."""
    names = set(theirs.names())
    out = []
    for e in theirs.client.events(since=int(since), until=int(until) + 1, decode=True, filters={"type": "container"}):
        name = e["Actor"]["Attributes"].get("name")
        if name in names and e["Action"] in ("kill", "die", "stop", "start", "pause", "unpause", "restart"):
            attrs = e["Actor"]["Attributes"]
            why = attrs.get("signal") or attrs.get("exitCode") or ""
            out.append((name, e["Action"], SIGNALS.get(why, why)))
    return out


def test_what_the_inventory_refuses_for_dockers_own_calls_is_one_line_and_exit_3(
        own_dockerd: OwnDockerd, theirs: TheirContainers, tmp_path: Path) -> None:
    """Killing a node's ZooKeeper container would take down the network of the broker running in its namespace;
    killing a container that runs both would kill both: each refused in one line, exit 3, no run folder."""
    spec = yaml.safe_load((REPO / "scenarios" / "smoke.yaml").read_text())
    spec["nemesis"] = [{"at": 5, "fault": "kill", "target": "az1", "role": "zookeeper", "name": "k"},
                       {"at": 10, "stop": "k"}]
    (tmp_path / "kill-zk.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    for inventory, says in (
            (your_inventory(own_dockerd, theirs, tmp_path / "yours.yaml"),
             f"inventory {tmp_path / 'yours.yaml'}: nodes[0] (az1): docker kill {theirs.zookeeper_name(1)} "
             f"(zookeeper) would take down the network of {theirs.name(1)} (broker), which runs in its network "
             f"namespace: give commands.zookeeper.kill, or run the zookeeper in the broker's namespace instead"),
            (your_inventory(own_dockerd, theirs, tmp_path / "one.yaml", zookeeper=False),
             f"nodes[0] (az1)'s broker and zookeeper share the container {theirs.name(1)}, and docker's kill would "
             f"act on both")):
        for dry in (["--dry-run"], []):
            proc = faultline("run", str(tmp_path / "kill-zk.yaml"), "--inventory", str(inventory), "--results",
                             str(tmp_path), *dry, timeout=120)
            assert proc.returncode == 3 and proc.stdout == "", proc.stdout + proc.stderr
            assert proc.stderr.count("\n") == 1 and says in proc.stderr, proc.stderr
    assert not (tmp_path / "smoke").exists()


def test_dockers_own_kill_stop_and_pause_of_the_leaders_container_move_it_and_leave_the_cluster_as_it_was(
        own_dockerd: OwnDockerd, theirs: TheirContainers, tmp_path: Path) -> None:
    before = look(theirs)
    assert USER_TOPIC in before["topics"] and USER_GROUP in before["groups"], before
    assert {c["network mode"] for n, c in before["containers"].items() if "-zk-" not in n} == {
        f"container:{before['containers'][theirs.zookeeper_name(az)]['id']}" for az in (1, 2, 3)}
    javas = {az: [int(p[1]) for p in theirs.container(az).top()["Processes"] if "kafka.Kafka" in p[-1]]
             for az in (1, 2, 3)}  # each broker's pid as this machine numbers it
    inventory = your_inventory(own_dockerd, theirs, tmp_path / "yours.yaml")
    spec = yaml.safe_load((REPO / "scenarios" / "retry-duplicates.yaml").read_text())
    spec["configurations"] = {"idempotent": spec["configurations"]["idempotent"]}
    spec["nemesis"] += AFTER
    spec["duration_s"] = DURATION_S
    (tmp_path / "native.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))

    started = time.time()
    with States(theirs) as states:
        proc = faultline("run", str(tmp_path / "native.yaml"), "--inventory", str(inventory), "--results",
                         str(tmp_path), timeout=900)
    ended = time.time()
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    for says in (f"kill `docker kill {theirs.name(2)}`, start `docker start {theirs.name(2)}`",
                 f"pause `docker pause {theirs.name(1)}`, resume `docker unpause {theirs.name(1)}`"):
        assert says in proc.stdout, proc.stdout  # the screen names docker's calls per container
    assert [line.split()[0] for line in proc.stdout.splitlines() if "retry-duplicates [" in line] == ["PASS"]
    run_dir = run_dir_of(tmp_path, "retry-duplicates", "idempotent")
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["valid"] is True and verdict["errors"] == {}, verdict  # as on a provisioned cluster
    assert verdict["stats"]["ok"] > 5000, verdict["stats"]

    rows = [json.loads(line) for line in (run_dir / "journal" / "nemesis.jsonl").read_text().splitlines()]
    starts = {json.loads(r["detail"])["name"]: r for r in rows if r["type"] == "start"}
    stops = {json.loads(r["detail"])["name"]: r for r in rows if r["type"] == "stop"}
    obs = pd.read_parquet(run_dir / "history" / "observations.parquet").dropna(subset=["leader"])
    obs = obs[obs["topic"] == json.loads((run_dir / "state.json").read_text())["settings"]["topic"]]
    acted: dict[str, set[str]] = {}
    for name, fault, down in (("kill-leader", "kill", "exited"), ("stop-leader", "graceful-stop", "exited"),
                              ("pause-leader", "pause", "paused")):
        start, stop = starts[name], stops[name]
        detail, targets = json.loads(start["detail"]), json.loads(start["targets"])
        leader = detail["facts"]["partitions"]["0"]["leader"]
        assert start["fault"] == fault and targets["brokers"] == [leader], (start, targets)
        container = theirs.name(leader + 1)  # broker N is az(N+1)'s
        if name == "kill-leader":  # the broker found listening in its container, as this machine numbers it
            assert detail["pids"] == {f"az{leader + 1}-node/broker": javas[leader + 1][0]}, (detail, javas)
        acted.setdefault(container, set()).add(fault)
        assert down in states.seen(container, start["time_ns"], stop["time_ns"]), (name, container)
        assert states.seen(container, stop["time_ns"], stop["time_ns"] + int(2e9)) == {"running"}, name
        if fault != "pause":  # the leader went with its container: another broker led the partition meanwhile
            during = obs[(obs["time_ns"] > start["time_ns"]) & (obs["time_ns"] < stop["time_ns"])
                         & (obs["partition"] == 0)]
            assert set(during["leader"]) - {leader}, (name, leader, during)
    for az in (1, 2, 3):  # ZooKeeper's containers ran throughout
        assert states.seen(theirs.zookeeper_name(az), 0, time.time_ns()) == {"running"}
    said = events(theirs, started, ended)
    for container, faults in acted.items():
        mine = [(action, why) for name, action, why in said if name == container]
        if "kill" in faults:  # SIGKILL to the container's init: every process in it went at once
            assert ("kill", "9") in mine and ("die", "137") in mine and ("start", "") in mine, mine
        if "graceful-stop" in faults:  # SIGTERM, the broker's clean shutdown, then the container stopped
            assert ("kill", "15") in mine and ("stop", "") in mine and ("start", "") in mine, mine
        if "pause" in faults:  # the container's cgroup frozen, then thawed
            assert ("pause", "") in mine and ("unpause", "") in mine, mine
    assert {name for name, _, _ in said} == set(acted), said  # nothing else was touched

    after = look(theirs)
    for key in before:  # the cluster's configuration, topics (the run's own gone), offsets and group
        if key != "containers":
            assert after[key] == before[key], key
    for name, was in before["containers"].items():
        now = after["containers"][name]
        moved = ("started", "pid") if name in acted and acted[name] != {"pause"} else ()  # started again by docker
        assert {k: v for k, v in now.items() if k not in moved} == {k: v for k, v in was.items() if k not in moved}, \
            name
        assert now["status"] == "running"
    cleaned = faultline("clean", "--inventory", str(inventory), timeout=120)
    assert cleaned.returncode == 0 and cleaned.stdout.strip() == "nothing to clean", cleaned.stdout + cleaned.stderr
