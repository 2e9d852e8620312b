"""A cluster of the user's in containers as the system under test (a Docker inventory, runtime docker-existing):
the catalogue's isolate-az-leader, acks1 (the configuration that shows the mechanism: the cut-off leader acknowledges
writes the new one also hands out offsets for, and truncates them at the heal), against three containers the test
started by itself with plain Docker calls (tests/docker/their_containers.py; faultline provisions nothing) gives the
provisioned run's verdict, and afterwards the containers (ids, state, start, pid), the iptables inside each, the
containers on their network, the brokers' and topics' configuration, the end offsets and the user's group's committed
offsets are as they were. The screen comes first (`--dry-run` shows it and stops), and `clean --inventory` finds
nothing of the run left and leaves the user's containers alone. Then the process side: a pause through the
inventory's command lines; and a client under test, put into the run's client containers."""

from __future__ import annotations

import json
import re
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
from tests.docker.their_containers import ADDRESSES, CONTROLLER, TheirContainers, look, start_their_containers
from tests.ssh.their_cluster import USER_GROUP, USER_TOPIC

pytestmark = [pytest.mark.docker, pytest.mark.cluster, pytest.mark.catalogue]  # `make test-docker`, not `make test`


@pytest.fixture(scope="module")
def theirs(own_dockerd: OwnDockerd) -> Iterator[TheirContainers]:
    client = docker_client(own_dockerd.host)
    cluster = None
    try:
        cluster = start_their_containers(client, new_prefix(), f"faultline/kafka:{DEFAULT_VERSION}")
        yield cluster
    finally:
        if cluster is not None:
            cluster.stop()
        client.close()


def your_inventory(own_dockerd: OwnDockerd, theirs: TheirContainers, path: Path) -> Path:
    path.write_text(yaml.safe_dump({
        "daemon": own_dockerd.host,
        "ports": [9092, 2181, 2888, 3888],
        "nodes": [{"az": f"az{az}", "broker": theirs.name(az)} for az in (1, 2, 3)]}, sort_keys=False))
    return path


def test_isolate_az_leader_on_containers_of_yours_gives_the_verdict_and_leaves_them_as_they_were(
        own_dockerd: OwnDockerd, theirs: TheirContainers, tmp_path: Path) -> None:
    before = look(theirs)
    assert USER_TOPIC in before["topics"] and USER_GROUP in before["groups"], before
    inventory = your_inventory(own_dockerd, theirs, tmp_path / "yours.yaml")
    spec = yaml.safe_load((REPO / "scenarios" / "isolate-az-leader.yaml").read_text())
    spec["configurations"] = {"acks1": spec["configurations"]["acks1"]}
    (tmp_path / "isolate.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    args = [str(tmp_path / "isolate.yaml"), "--inventory", str(inventory), "--results", str(tmp_path)]

    dry = faultline("run", *args, "--dry-run", timeout=120)
    assert dry.returncode == 0, dry.stdout + dry.stderr[-3000:]
    for az, address in enumerate(ADDRESSES, 1):  # each container by name at its address, nothing put in it
        assert re.search(rf"\n  az{az}-node +{address} +R; your container {theirs.name(az)}: nothing installed or "
                         rf"run in it\n", dry.stdout), dry.stdout
    assert "of each container's network namespace" in dry.stdout and not (tmp_path / "isolate-az-leader").exists()

    proc = faultline("run", *args, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "against a cluster of yours" in proc.stdout  # the screen first
    assert [line.split()[0] for line in proc.stdout.splitlines() if "isolate-az-leader [" in line] == ["PASS"]
    run_dir = run_dir_of(tmp_path, "isolate-az-leader", "acks1")
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["counts"]["lost"] > 0 and verdict["counts"]["divergence"] > 0, verdict["counts"]
    learned = json.loads((run_dir / "existing-cluster.json").read_text())
    assert learned["controller"] == CONTROLLER and sorted(learned["brokers"]) == ["0", "1", "2"], learned
    assert all(b["log_dirs"] == ["/opt/theirs/kafka-logs"] and b["rack"] == f"az{int(i) + 1}"
               for i, b in learned["brokers"].items()), learned
    state = json.loads((run_dir / "state.json").read_text())
    assert state["runtime"] == "docker-existing" and state["settings"]["topic"] == f"faultline-{state['prefix']}"
    assert state["yours"] == {f"az{az}-node": [before["containers"][theirs.name(az)]["id"]] for az in (1, 2, 3)}
    replicas = json.loads((run_dir / "replicas.json").read_text())  # from the partitions read out of the containers
    assert replicas["topic"] == state["settings"]["topic"] and replicas["agree"] is True, replicas
    rules = [json.loads(line) for line in (run_dir / "journal" / "nemesis.jsonl").read_text().splitlines()]
    assert [r["fault"] for r in rules if r["type"] == "start"] == ["isolate-az"], rules

    after = look(theirs)
    for key in before:  # the same containers, rules, network, configuration, topics, offsets and group
        assert after[key] == before[key], key
    cleaned = faultline("clean", "--inventory", str(inventory), timeout=120)
    assert cleaned.returncode == 0 and cleaned.stdout.strip() == "nothing to clean", cleaned.stdout + cleaned.stderr
    assert look(theirs)["containers"] == before["containers"]


def test_a_pause_through_the_inventorys_command_lines_stops_the_broker_listening_in_the_container(
        own_dockerd: OwnDockerd, theirs: TheirContainers, tmp_path: Path) -> None:
    """The process side: a `pause` of az2's broker runs the inventory's command lines inside its container (its
    broker shares the container with ZooKeeper, so docker's own pause is refused there); the broker is found
    listening on 9092 in the container's namespace, its pid journaled, and it runs on afterwards as before. This
    inventory names the containers as a compose project's services (the labels `docker compose up` sets), so the
    containers are found by their labels."""
    before = look(theirs)
    inventory = tmp_path / "yours.yaml"
    broker = "$(pgrep -f 'kafka[.]Kafka')"  # the brackets: the shell running the line must not match itself
    lines = {"pause": f"kill -STOP {broker}", "resume": f"kill -CONT {broker}"}
    inventory.write_text(yaml.safe_dump({"daemon": own_dockerd.host, "ports": [9092, 2181, 2888, 3888],
                                         "compose_project": theirs.project,
                                         "nodes": [{"az": f"az{az}", "broker": theirs.service(az),
                                                    "commands": {"broker": lines}} for az in (1, 2, 3)]}))
    spec = yaml.safe_load((REPO / "scenarios" / "smoke.yaml").read_text())
    spec.update(duration_s=20, nemesis=[{"at": 5, "fault": "pause", "target": "az2", "name": "pause-az2"},
                                        {"at": 10, "stop": "pause-az2"}])
    (tmp_path / "smoke.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    proc = faultline("run", str(tmp_path / "smoke.yaml"), "--inventory", str(inventory), "--results", str(tmp_path),
                     timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "pause of its broker: pause `docker exec " in proc.stdout  # the screen names what it will run
    rows = [json.loads(line) for line in (run_dir_of(tmp_path, "smoke") / "journal" / "nemesis.jsonl").read_text()
            .splitlines()]
    started = {r["fault"]: json.loads(r["detail"]) for r in rows if r["type"] == "start"}
    broker = theirs.container(2).top()["Processes"]  # [uid, pid, ppid, ...] as this machine numbers them
    java = [int(p[1]) for p in broker if "kafka.Kafka" in p[-1]]
    assert started["pause"]["pids"] == {"az2-node/broker": java[0]}, (started, broker)
    after = look(theirs)
    for key in before:
        assert after[key] == before[key], key


def test_a_client_under_test_runs_in_the_runs_client_containers_against_containers_of_yours(
        own_dockerd: OwnDockerd, theirs: TheirContainers, tmp_path: Path) -> None:
    """smoke with `clients.confluent_kafka` 1.9.2: its venv (made here) put into faultline's client containers, as
    on the docker runtime; producers and consumers on it, the drain on the image's own client; the user's containers
    as they were."""
    client = "1.9.2"  # librdkafka 1.9.2 in its wheel: no Message.leader_epoch (KIP-320) in the binding
    before = look(theirs)
    inventory = your_inventory(own_dockerd, theirs, tmp_path / "yours.yaml")
    spec = yaml.safe_load((REPO / "scenarios" / "smoke.yaml").read_text())
    spec["clients"] = {"confluent_kafka": client}
    (tmp_path / "smoke.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    proc = faultline("run", str(tmp_path / "smoke.yaml"), "--inventory", str(inventory), "--results", str(tmp_path),
                     timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    run_dir = run_dir_of(tmp_path, "smoke")
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["valid"] is True and verdict["stats"]["ok"] >= 3000, verdict["counts"]
    run = json.loads((run_dir / "run.json").read_text())
    assert run["runtime"] == "docker-existing" and run["versions"]["client_under_test"]["confluent_kafka"] == client
    processes = pd.read_parquet(run_dir / "history" / "processes.parquet")
    used = {row.process: json.loads(row.config)["client"] for row in processes.itertuples()}
    under_test = f"confluent-kafka {client} / librdkafka {client}"  # what each process loaded, in its container
    assert {p for p, c in used.items() if c == under_test} == {p for p in used if p.startswith(("producer", "consumer"))}
    assert all(c != under_test for p, c in used.items() if p.startswith("drain")), used
    reads = pd.read_parquet(run_dir / "history" / "reads.parquet")
    assert reads[reads["phase"] == "live"]["leader_epoch"].isna().all()  # 1.9.2's binding
    after = look(theirs)
    for key in before:
        assert after[key] == before[key], key
