"""The client under test (`clients.confluent_kafka`): validated, given to producers and consumers only, recorded.

The venv itself is built by testbed.dist.clients on a real run (tests/testbed/test_clients.py covers what needs
no PyPI); here the machine hands the run a fake venv, and the rest is the run flow's own code.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from campaign.matrix import cell_name, cell_overrides
from harness.run import execute_run
from harness.spec import parse_spec
from harness.spec_clients import parse_client_under_test
from testbed.dist.clients import ClientEnv
from testbed.errors import SpecError
from testbed.runfolder import RunFolder
from tests.harness.test_run_fake import SPEC, FakeMachine, workload_processes
from workloads import reading, settings
from workloads.config import ProducerConfig

FAKE_PYTHON = ("env", "PYTHONPATH=/repo", "/cache/venv-ck-1.9.2/bin/python")
VERSIONS = {"confluent_kafka": "1.9.2", "librdkafka": "1.9.2", "python": "3.10.13"}


def test_producers_and_consumers_run_the_client_under_test_and_nothing_else_does(tmp_path: Path) -> None:
    fake = FakeMachine(tmp_path / "active.json")
    asked: list[str] = []

    def ensure_client(version: str) -> ClientEnv:
        asked.append(version)
        return ClientEnv(version, FAKE_PYTHON, VERSIONS)

    machine = fake.machine.__class__(**{**fake.machine.__dict__, "ensure_client": ensure_client})
    run_dir = tmp_path / "results" / "fake-run"
    outcome = execute_run(parse_spec({**SPEC, "clients": {"confluent_kafka": "1.9.2"}}), run_dir, engine="pandas",
                          machine=machine)
    assert outcome.status == 0, outcome.verdict
    assert asked == ["1.9.2"]
    argv = {name: tuple(p.argv[:3]) for name, p in workload_processes(fake.runtime).items()}
    assert argv["producer-az1-0"] == FAKE_PYTHON and argv["consumer-az2-0"] == FAKE_PYTHON
    others = [name for name in argv if name.startswith(("drain-", "observer-"))]
    assert len(others) == 6 and all(argv[name] != FAKE_PYTHON for name in others)
    manifest = json.loads(RunFolder(run_dir).manifest.read_text())
    assert manifest["versions"]["client_under_test"] == VERSIONS
    assert manifest["versions"]["confluent_kafka"] != "1.9.2"  # the harness's own, for the drain and observers


def test_without_a_client_under_test_no_venv_is_asked_for(tmp_path: Path) -> None:
    fake = FakeMachine(tmp_path / "active.json")

    def ensure_client(version: str) -> ClientEnv:
        raise AssertionError("no client venv without clients.confluent_kafka")

    machine = fake.machine.__class__(**{**fake.machine.__dict__, "ensure_client": ensure_client})
    run_dir = tmp_path / "results" / "fake-run"
    assert execute_run(parse_spec(SPEC), run_dir, engine="pandas", machine=machine).status == 0
    assert "client_under_test" not in json.loads(RunFolder(run_dir).manifest.read_text())["versions"]


@pytest.mark.parametrize(("clients", "runtime", "problem"), [
    ({"confluent_kafka": "1.8.2"}, "netns", "clients.confluent_kafka: faultline runs clients from 1.9.0 on"),
    ({"confluent_kafka": "2.1"}, "netns", "clients.confluent_kafka: must be a version like 2.1.1"),
    ({"librdkafka": "2.1.1"}, "netns", "clients.librdkafka: unknown key"),
])
def test_a_client_faultline_cannot_run_is_refused_in_one_line(clients: dict[str, str], runtime: str,
                                                               problem: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse_spec({**SPEC, "clients": clients, "cluster": {"runtime": runtime}})
    assert str(caught.value).startswith(problem) and "\n" not in str(caught.value)


def test_every_runtime_takes_a_client_under_test() -> None:
    # docker-existing's client hosts are faultline's own containers: the venv goes in as on docker
    # (tests/testbed/test_docker_foreign_fake.py); nothing refuses one by runtime any more.
    assert parse_client_under_test({"confluent_kafka": "2.1.1"}) == "2.1.1"
    assert parse_client_under_test(None) is None


def test_the_docker_runtime_takes_a_client_under_test() -> None:  # it puts the venv into its client containers
    assert parse_spec({**SPEC, "clients": {"confluent_kafka": "2.1.1"}, "cluster": {"runtime": "docker"}}).client \
        == "2.1.1"


def test_a_matrix_sweeps_broker_and_client_versions() -> None:
    cell = {"kafka_version": "0.11.0.3", "client": "1.9.2", "acks": "all"}
    overrides = cell_overrides({"workloads": {"producers": [{"settings": {"linger.ms": 1}}]}}, cell)
    assert overrides["cluster"] == {"kafka_version": "0.11.0.3"}
    assert overrides["clients"] == {"confluent_kafka": "1.9.2"}
    assert overrides["workloads"]["producers"][0]["settings"] == {"linger.ms": 1, "acks": "all"}
    assert cell_name(cell) == "kafka-0_11_0_3.ck-1_9_2.acks-all"


def test_a_record_from_a_client_without_leader_epochs_has_none() -> None:
    assert reading.leader_epoch(SimpleNamespace()) is None
    assert reading.leader_epoch(SimpleNamespace(leader_epoch=lambda: 7)) == 7


@pytest.mark.parametrize(("libversion", "linger"), [((("1.9.2", 0x010902ff)), 0.5), ((("2.0.2", 0x020002ff)), 5)])
def test_the_effective_linger_is_the_running_librdkafkas_default(monkeypatch: pytest.MonkeyPatch,
                                                                 libversion: tuple[str, int], linger: float) -> None:
    monkeypatch.setattr(settings.confluent_kafka, "libversion", lambda: libversion)
    config = ProducerConfig(process="p", role="producer", az="az1", journal=Path("/j"), topic="t", bootstrap="b",
                            partitions=1, rate=1.0, value_prefix="p-")
    effective = settings.producer_effective(config)
    assert effective["linger.ms"] == linger and effective["client"].endswith(f"librdkafka {libversion[0]}")


def test_the_versions_campaign_plans_every_cell_with_an_expectation() -> None:
    from tests.conftest import faultline

    proc = faultline("campaign", "campaigns/versions.yaml", "--plan", "--seed", "3")
    assert proc.returncode == 0, proc.stderr
    assert "57 of 57 runs fit" in proc.stdout and "32 matrix cells refused" in proc.stdout
    assert "1 shard (--shard I/1)" in proc.stdout  # the 4-hour budget holds the whole pass on one machine
    assert "unclean-election [unclean.kafka-3_9_1.md-zookeeper]" in proc.stdout
    assert "power-cut-az [acksall.kafka-4_1_1.md-kraft]" in proc.stdout
    assert "kafka-0_10_2_2.ck-1_9_2.acks-all.idem-false" in proc.stdout
    assert "hw-truncation [kafka-0-10-2]" in proc.stdout and "consumer-validation-duplicates [client-2-1-0]" in proc.stdout
    assert "kraft-isolated-controller [kafka-3-6-2]" in proc.stdout and "kraft-isolated-controller [kafka-3-7-2]" in proc.stdout
    assert "isr-expansion-lost [kafka-2-7-2]" in proc.stdout and "isr-expansion-lost [kafka-3-0-2]" in proc.stdout
    assert "batch-consume-skip [client-2-0-2]" in proc.stdout and "batch-consume-skip [client-2-1-1]" in proc.stdout


def test_hw_truncation_names_one_version_per_configuration() -> None:
    from harness.spec import load_specs
    from tests.conftest import REPO

    specs = load_specs(REPO / "scenarios" / "versions" / "hw-truncation.yaml")
    assert {s.configuration: s.cluster.kafka_version for s in specs} == {
        "kafka-0-10-2": "0.10.2.2", "kafka-0-11-0": "0.11.0.3", "kafka-2-7-2": "2.7.2"}
    assert [s.expect.present for s in specs] == [("lost",), (), ()]
