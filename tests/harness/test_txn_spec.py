"""Transactional producers and isolation levels in a spec: bad input refused naming the key, good input planned.

A bad one through `faultline run` is one line, exit status 3, nothing started (as an unprivileged user: the
spec is checked before the harness asks for root). A good one plans a transactional.id per process, stable
(the run's prefix and the process's name), consumers at their isolation level, and drains in both views.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.spec import parse_spec
from testbed.errors import SpecError
from tests.conftest import REPO
from tests.harness.test_spec_cli import run_as_nobody, shared_dir  # noqa: F401 (a fixture)

SMOKE = yaml.safe_load((REPO / "scenarios" / "txn-smoke.yaml").read_text())


def changed(where: str, key: str, value: Any, index: int = 0) -> dict[str, Any]:
    """txn-smoke with one key of producers[index] / consumers[index] (or of its settings: `settings.<name>`)."""
    raw = copy.deepcopy(SMOKE)
    node = raw["workloads"][where][index]
    if key.startswith("settings."):
        node = node.setdefault("settings", {})
        key = key.removeprefix("settings.")
    node[key] = value
    return raw


BAD = [
    (("consumers", "isolation_level", "read_dirty"),
     "workloads.consumers[0].isolation_level: unknown isolation level 'read_dirty' "
     "(known: read_committed, read_uncommitted)"),
    (("consumers", "settings.isolation.level", "read_uncommitted"),
     "workloads.consumers[0].settings.isolation.level: set it with the consumer key isolation_level"),
    (("producers", "settings.acks", 1),
     "workloads.producers[0].settings.acks: a transactional producer needs acks all, got 1"),
    (("producers", "settings.acks", "0"),
     "workloads.producers[0].settings.acks: a transactional producer needs acks all, got '0'"),
    (("producers", "settings.enable.idempotence", False),
     "workloads.producers[0].settings.enable.idempotence: a transactional producer is idempotent"),
    (("producers", "txn_size", 0), "workloads.producers[0].txn_size: must be >= 1, got 0"),
    (("producers", "txn_abort_share", 1.5), "workloads.producers[0].txn_abort_share: must be <= 1"),
    (("producers", "settings.transactional.id", "mine"),
     "workloads.producers[0].settings.transactional.id: set by the workload"),
    (("producers", "settings.transaction.timeout.ms", 5000),
     "workloads.producers[0].settings.transaction.timeout.ms: set it with the producer key transaction_timeout_ms"),
    (("producers", "settings.delivery.timeout.ms", 30000),
     "workloads.producers[0].settings: librdkafka refuses these for a transactional producer: "
     "`message.timeout.ms` must be set <= `transaction.timeout.ms`"),
    (("producers", "transactional", False),
     "workloads.producers[0].txn_size: only for a transactional producer (transactional: true)"),
]


@pytest.mark.parametrize("change, says", BAD)
def test_bad_transactional_input_names_the_key(change: tuple[str, str, Any], says: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_spec(changed(*change))
    assert str(err.value).startswith(says), err.value


@pytest.mark.parametrize("change, says", [BAD[0], BAD[2], BAD[4], BAD[5]])
def test_bad_transactional_input_stops_the_cli_before_anything(shared_dir: Path,  # noqa: F811
                                                                change: tuple[str, str, Any], says: str) -> None:
    spec = shared_dir / "mutant.yaml"
    raw = changed(*change)
    raw.pop("configurations")  # the error then names the key alone, not a configuration first
    spec.write_text(yaml.safe_dump(raw))
    spec.chmod(0o644)
    proc = run_as_nobody("run", str(spec), "--results", str(shared_dir / "results"))
    assert proc.returncode == 3, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"faultline: {spec}: {says}"), proc.stderr
    assert not (shared_dir / "results").exists()


def test_a_transactional_producer_is_idempotent_with_its_timeout() -> None:
    spec = parse_spec(SMOKE)
    [producers] = spec.producers
    assert spec.transactional and producers.transactional
    assert (producers.txn_size, producers.txn_abort_share, producers.transaction_timeout_ms) == (6, 0.2, 10000)
    assert producers.settings["enable.idempotence"] is True and producers.settings["acks"] == "all"
    assert producers.settings["transaction.timeout.ms"] == 10000
    assert [c.isolation_level for c in spec.consumers] == ["read_committed", "read_uncommitted"]
    plain = parse_spec(changed("producers", "transactional", False) | {"workloads": {
        "producers": [{"azs": ["az1"]}], "consumers": []}})
    assert not plain.transactional and "transaction.timeout.ms" not in plain.producers[0].settings
    assert plain.producers[0].settings["enable.idempotence"] is False  # the non-transactional default, as before


def test_the_plan_gives_stable_ids_isolation_levels_and_both_drain_views(tmp_path: Path) -> None:
    from harness.workloadset import drain_workloads, plan_workloads
    from testbed.addressing import make_plan
    from testbed.kafka.cluster import KafkaCluster
    from testbed.runfolder import RunFolder
    from testbed.state import RunState
    from tests.fakes import FakeRuntime
    from workloads.config import ConsumerConfig, DrainConfig, ProducerConfig, config_to_json, parse_config
    from workloads.settings import producer_effective

    spec = parse_spec(SMOKE)
    state = RunState.create(tmp_path, "fl00abcd", runtime="fake", settings=spec.cluster.to_json(), harness_pid=1)
    world = FakeRuntime(make_plan(spec.cluster.network, spec.cluster.nodes), "fl00abcd", state)
    cluster = KafkaCluster(world, spec.cluster, RunFolder(tmp_path).make())
    planned = plan_workloads(spec, cluster)
    producers = [w.config for w in planned if isinstance(w.config, ProducerConfig)]
    assert [p.transactional_id for p in producers] == [f"fl00abcd-producer-az{i}-0" for i in (1, 2, 3)]
    assert all((p.txn_size, p.txn_abort_share) == (6, 0.2) for p in producers)
    assert parse_config(config_to_json(producers[0])) == producers[0]  # the file a process starts with
    effective = producer_effective(producers[0])
    assert effective["transactional.id"] == "fl00abcd-producer-az1-0" and effective["enable.idempotence"] is True
    assert effective["transaction.timeout.ms"] == 10000 and effective["delivery.timeout.ms"] == 10000
    levels = sorted(str(w.config.kafka["isolation.level"]) for w in planned if isinstance(w.config, ConsumerConfig))
    assert levels == ["read_committed"] * 3 + ["read_uncommitted"] * 3
    drains = drain_workloads(cluster, 60.0, both_views=spec.transactional)
    views = {w.name: w.config.kafka["isolation.level"] for w in drains if isinstance(w.config, DrainConfig)}
    assert views == {**{f"drain-az{i}": "read_committed" for i in (1, 2, 3)},
                     **{f"drain-az{i}-ru": "read_uncommitted" for i in (1, 2, 3)}}
    assert [w.name for w in drain_workloads(cluster, 60.0)] == ["drain-az1", "drain-az2", "drain-az3"]
