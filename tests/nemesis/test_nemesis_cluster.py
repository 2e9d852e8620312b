"""On a real cluster: targets resolved from live state, process faults, heal-all, schedules and the journal."""

from __future__ import annotations

import random
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nemesis import shapes
from nemesis.journal import read_journal
from nemesis.nemesis import Nemesis
from nemesis.schedule import parse_schedule
from nemesis.targets import Resolver, observe
from testbed.errors import FaultError
from testbed.kafka.cluster import KafkaCluster
from testbed.kafka.replicas import snapshot_segments
from testbed.kafka.zk import zk_snapshot
from testbed.localprocs import command_of, is_alive, is_stopped
from testbed.runtime.base import Runtime, wait_ended
from testbed.runtime.procs import run_of
from tests.nemesis.power_cycle import assert_partition_survives_power_cycle

pytestmark = pytest.mark.cluster
SETTLE_S = 120.0


@pytest.fixture
def nemesis(live_cluster: tuple[KafkaCluster, Runtime], tmp_path: Path) -> Iterator[Nemesis]:
    cluster, runtime = live_cluster
    cluster.readiness.wait_topic_ready(SETTLE_S)  # every test starts from a settled cluster
    nem = Nemesis(cluster, runtime, tmp_path / "nemesis.jsonl", seed=42)
    try:
        yield nem
    finally:
        nem.heal_all()
        nem.close()


def authority(cluster: KafkaCluster) -> tuple[int, int]:
    """(leader of partition 0, controller) as ZooKeeper records them."""
    snap = zk_snapshot(cluster.zk_connect, cluster.topic)
    return snap["partitions"][0]["leader"], snap["controller"]


def rules_on(runtime: Runtime) -> dict[str, str]:
    return {h.name: runtime.execute(h, ["iptables-save"]).stdout for h in runtime.plan.hosts}


def test_observe_agrees_with_zookeeper(live_cluster: tuple[KafkaCluster, Runtime]) -> None:
    cluster, _ = live_cluster
    cluster.readiness.wait_topic_ready(SETTLE_S)
    facts = observe(cluster)
    leader, controller = authority(cluster)
    assert facts.source == "views"
    assert facts.controller == controller and facts.partitions[0].leader == leader
    assert sorted(facts.partitions) == list(range(cluster.settings.partitions))


def test_state_targets_resolve_to_the_live_leader_and_controller(nemesis: Nemesis) -> None:
    cluster = nemesis.cluster
    leader, controller = authority(cluster)
    resolver = Resolver(cluster.plan, random.Random(1), 0, lambda: observe(cluster))
    assert resolver.node("leader").broker_id == leader
    assert resolver.node("controller").broker_id == controller
    follower = resolver.node("follower").broker_id
    assert follower not in (leader, controller)
    if leader == controller:
        assert resolver.node("leader-controller").broker_id == leader
    else:
        with pytest.raises(FaultError, match="no node is both"):
            resolver.node("leader-controller")

    active = nemesis.start({"fault": "isolate-az", "target": "leader", "partition": 0}, name="iso-leader")
    leader_az = cluster.node(leader).az
    assert active.targets == {"az": leader_az, "brokers": [leader], "scope": "all"}
    rules = rules_on(cluster.runtime)
    inside = shapes.hosts_of_az(cluster.plan, leader_az)
    for host, saved in rules.items():
        outsiders = [h for h in cluster.plan.hosts if (h.name in inside) != (host in inside)]
        for other in outsiders:
            assert f"-A FAULTLINE-IN -s {other.address}/32 -j DROP" in saved
    nemesis.stop(active)
    assert all("DROP" not in saved for saved in rules_on(cluster.runtime).values())
    rows = read_journal(nemesis.journal.path)
    assert [(r["type"], r["fault"]) for r in rows] == [("start", "isolate-az"), ("stop", "isolate-az")]
    assert rows[0]["targets"] == rows[1]["targets"]  # a report pairs them by (fault, targets)
    assert rows[0]["detail"]["facts"]["partitions"]["0"]["leader"] == leader
    assert rows[0]["detail"]["name"] == "iso-leader" and rows[0]["time_ns"] < rows[1]["time_ns"]
    assert len(rows[0]["detail"]["cut"]) == 2 * 2 * 4  # 2 inside x 4 outside, both ways


def test_unresolvable_target_is_journaled_and_changes_nothing(nemesis: Nemesis) -> None:
    with pytest.raises(FaultError, match="no such AZ"):
        nemesis.start({"fault": "isolate-az", "target": "az9"})
    rows = read_journal(nemesis.journal.path)
    assert [r["type"] for r in rows] == ["info"] and "az9" in rows[0]["detail"]["error"]
    assert nemesis.active == []


def test_a_snapshot_is_taken_before_each_undo_and_never_holds_it_back(
        live_cluster: tuple[KafkaCluster, Runtime], tmp_path: Path) -> None:
    cluster, runtime = live_cluster
    cluster.readiness.wait_topic_ready(SETTLE_S)
    seen: list[tuple[str, bool]] = []

    def snapshot(label: str) -> dict[str, Any]:
        seen.append((label, "DROP" in rules_on(runtime)["az1-node"]))  # still cut off when copied
        if len(seen) == 2:
            raise OSError("No space left on device")
        return snapshot_segments(cluster, label)

    nem = Nemesis(cluster, runtime, tmp_path / "nemesis.jsonl", seed=1, snapshot=snapshot)
    try:
        for name in ("iso", "iso-again"):
            nem.start({"fault": "isolate-az", "target": "az1"}, name=name)
            nem.stop(name)
    finally:
        nem.heal_all()
        nem.close()
    assert seen == [("01-iso", True), ("02-iso-again", True)]
    assert all("DROP" not in saved for saved in rules_on(runtime).values()), "the failed snapshot did not stop the heal"
    stops = [r["detail"]["snapshot"] for r in read_journal(tmp_path / "nemesis.jsonl") if r["type"] == "stop"]
    assert stops[0]["files"] > 0 and stops[0]["label"] == "01-iso" and "took_ms" in stops[0]
    assert stops[1] == {"label": "02-iso-again", "error": "No space left on device"}
    copied = cluster.run_dir / "nodes" / "az1-node" / "before-heal" / "01-iso"
    assert sorted(d.name for d in copied.iterdir()) == [f"{cluster.topic}-{p}" for p in range(cluster.settings.partitions)]


def test_spawn_returns_once_the_command_runs_as_the_runs(
        live_cluster: tuple[KafkaCluster, Runtime], tmp_path: Path) -> None:
    """Right after spawn, the pid is the command itself (not `ip`), and carries the run's prefix."""
    _, runtime = live_cluster
    host = runtime.plan.hosts[0]
    for i in range(20):
        child = runtime.spawn(host, f"probe/sleep-{i}", ["sleep", "30"], tmp_path / "sleep.log")
        try:
            assert command_of(child.pid) == "sleep" and run_of(child.pid) == runtime.prefix
            assert child.alive() and runtime.process(f"probe/sleep-{i}") is child
        finally:
            child.signal(signal.SIGKILL)
            assert not wait_ended([child], 5) and child.exit_status() == -signal.SIGKILL


def test_process_faults_kill_pause_power_off_graceful_stop(nemesis: Nemesis) -> None:
    cluster = nemesis.cluster
    az1, az2, az3 = cluster.nodes
    before = cluster.pids(az3)["broker"]
    kill = nemesis.start({"fault": "kill", "target": "az3"})
    assert cluster.pids(az3)["broker"] is None and before is not None and not is_alive(before)
    assert cluster.pids(az3)["zookeeper"] is not None
    nemesis.stop(kill)
    assert cluster.pids(az3)["broker"] not in (None, before)

    zk_pid = cluster.pids(az1)["zookeeper"]
    pause = nemesis.start({"fault": "pause", "target": "broker-0", "role": "zookeeper"})
    assert zk_pid is not None and is_stopped(zk_pid)
    nemesis.stop(pause)
    assert not is_stopped(zk_pid) and cluster.pids(az1)["zookeeper"] == zk_pid

    off = nemesis.start({"fault": "power-off", "target": ["az2-node"]})
    assert cluster.pids(az2) == {"zookeeper": None, "broker": None}
    assert off.targets["processes"] == ["az2-node/zookeeper", "az2-node/broker"]
    nemesis.stop(off)
    assert None not in cluster.pids(az2).values()

    cluster.readiness.wait_topic_ready(SETTLE_S)
    graceful = nemesis.start({"fault": "graceful-stop", "target": "controller"})
    stopped_node = cluster.plan.host(graceful.targets["nodes"][0])
    assert cluster.pids(stopped_node)["broker"] is None
    nemesis.stop(graceful)
    assert cluster.pids(stopped_node)["broker"] is not None

    rows = read_journal(nemesis.journal.path)
    assert [(r["type"], r["fault"]) for r in rows] == [
        ("start", "kill"),
        ("stop", "kill"),
        ("start", "pause"),
        ("stop", "pause"),
        ("start", "power-cut"),  # netns: the node's unsynced writes went with its power
        ("stop", "power-cut"),
        ("start", "graceful-stop"),
        ("stop", "graceful-stop"),
    ]
    with pytest.raises(FaultError, match="not running"):
        cluster.kill(az3, "broker")
        nemesis.start({"fault": "kill", "target": "az3"})


def test_heal_all_undoes_faults_and_what_happened_behind_its_back(nemesis: Nemesis) -> None:
    cluster = nemesis.cluster
    az1, az2, az3 = cluster.nodes
    nemesis.start({"fault": "cut-link", "between": ["az1", "az2"], "scope": "kafka"})
    nemesis.start({"fault": "pause", "target": "az3", "role": "both"})
    paused = cluster.pids(az3)
    cluster.kill(az2, "broker")  # nobody's fault: heal-all must still bring it back
    cluster.pause(az1, "broker")
    report = nemesis.heal_all()
    assert sorted(report.stopped) == ["cut-link-1", "pause-2"]
    assert report.resumed == ["az1-node/broker"] and report.restarted == ["az2-node/broker"]
    assert not any(is_stopped(p) for node in cluster.nodes for p in cluster.pids(node).values() if p)
    assert cluster.pids(az3) == paused
    assert all("FAULTLINE" not in saved for saved in rules_on(cluster.runtime).values())
    assert None not in [p for node in cluster.nodes for p in cluster.pids(node).values()]
    rows = read_journal(nemesis.journal.path)
    assert [r["type"] for r in rows] == ["start", "start", "stop", "stop", "info"]
    assert rows[-1]["fault"] == "heal-all" and rows[-1]["targets"]["restarted"] == ["az2-node/broker"]
    again = nemesis.heal_all()
    assert not again.changed and len(read_journal(nemesis.journal.path)) == len(rows)


def test_timeline_runs_in_the_background_and_journals_each_event(nemesis: Nemesis) -> None:
    schedule = parse_schedule(
        "nemesis",
        [
            {"at": 0.2, "fault": "isolate-az", "target": "leader", "name": "iso"},
            {"at": 0.8, "stop": "iso"},
            {
                "at": 1.0,
                "fault": "cut-link",
                "between": ["follower", "controller"],
                "ends": "node",
                "one_way": True,
                "scope": "zookeeper",
                "name": "link",
            },
            {"at": 1.2, "fault": "pause", "target": "controller", "role": "zookeeper", "name": "freeze"},
            {"at": 1.6, "heal": "all"},
        ],
    )
    run = nemesis.run(schedule, time.monotonic(), threading.Event())
    run.join(timeout=60)
    assert run.fired == ["start iso", "stop iso", "start link", "start freeze", "heal all"]
    rows = read_journal(nemesis.journal.path)
    assert [(r["type"], r["detail"]["name"]) for r in rows] == [
        ("start", "iso"),
        ("stop", "iso"),
        ("start", "link"),
        ("start", "freeze"),
        ("stop", "freeze"),
        ("stop", "link"),
    ]
    assert all(r["detail"].get("late_ms", 0) < 1000 for r in rows)
    assert nemesis.active == []


def test_a_timeline_fault_that_cannot_fire_fails_the_run_on_join(nemesis: Nemesis) -> None:
    schedule = parse_schedule(
        "nemesis",
        [{"at": 0.1, "fault": "kill", "target": "az9"}, {"at": 30, "fault": "kill", "target": "leader"}],
    )
    run = nemesis.run(schedule, time.monotonic(), threading.Event())
    with pytest.raises(FaultError, match="az9"):
        run.join(timeout=30)
    assert [r["type"] for r in read_journal(nemesis.journal.path)] == ["info"]


def test_stop_event_and_heal_all_end_a_schedule_early(nemesis: Nemesis) -> None:
    stop = threading.Event()
    schedule = parse_schedule(
        "nemesis", [{"at": 0.1, "fault": "pause", "target": "az1", "name": "p"}, {"at": 60, "stop": "p"}]
    )
    run = nemesis.run(schedule, time.monotonic(), stop)
    time.sleep(0.5)
    stop.set()
    run.join(timeout=5)
    assert nemesis.active_names() == ["p"]
    run2 = nemesis.run(
        parse_schedule("nemesis", [{"at": 60, "fault": "kill", "target": "az2"}]),
        time.monotonic(),
        threading.Event(),
    )
    started = time.monotonic()
    nemesis.heal_all()
    run2.join(timeout=5)
    assert time.monotonic() - started < 10 and nemesis.active == []


def test_random_chaos_starts_and_stops_every_fault_it_draws(nemesis: Nemesis) -> None:
    schedule = parse_schedule(
        "nemesis",
        [
            {
                "random-chaos": {
                    "until": 5,
                    "duration": [0.3, 0.6],
                    "interval": [0.2, 0.4],
                    "faults": [
                        {"fault": "isolate-az", "target": "random"},
                        {"fault": "majorities-ring"},
                        {"fault": "cut-link", "between": ["leader", "follower"]},
                        {"fault": "bridge", "middle": "controller", "scope": "kafka"},
                        {"fault": "pause", "target": "random", "role": "zookeeper"},
                    ],
                }
            }
        ],
    )
    run = nemesis.run(schedule, time.monotonic(), threading.Event())
    run.join(timeout=60)
    rows = read_journal(nemesis.journal.path)
    starts = [r["detail"]["name"] for r in rows if r["type"] == "start"]
    stops = [r["detail"]["name"] for r in rows if r["type"] == "stop"]
    assert len(starts) >= 4 and starts == stops
    assert nemesis.active == []
    assert [e.name for e in schedule.timeline(42)][::2] == starts  # the nemesis seed drew them


def test_a_node_powered_off_and_on_during_a_partition_comes_back_partitioned(nemesis: Nemesis) -> None:
    assert_partition_survives_power_cycle(nemesis, lose_unsynced=True)  # netns: its data dirs on unsyncfs
