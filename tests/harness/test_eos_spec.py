"""Consume-transform-produce in a spec (scenarios/eos-pipeline.yaml): bad input refused naming the key, good
input planned: the extra topic everywhere a topic is (producers, observers, drains), one transformer config per
process with a stable transactional.id (exactly-once) or none (at-least-once), kills spread over the group.
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

EOS = yaml.safe_load((REPO / "scenarios" / "eos-pipeline.yaml").read_text())


def changed(path: str, value: Any, drop: bool = False) -> dict[str, Any]:
    """eos-pipeline with one key changed (or dropped), by a dotted path; list items by index."""
    raw = copy.deepcopy(EOS)
    *parents, last = path.split(".")
    node: Any = raw
    for part in parents:
        node = node[int(part)] if part.isdigit() else node[part]
    if drop:
        del node[last]
    else:
        node[last] = value
    return raw


BAD = [
    (("workloads.transformers.0.input_topic", None, True),
     "workloads.transformers[0].input_topic: required (the topic a transformer reads"),
    (("workloads.transformers.0.input_topic", "nowhere"),
     "workloads.transformers[0].input_topic: no topic 'nowhere' in this cluster (its topics: faultline, faultline-in"),
    (("workloads.transformers.0.output_topic", "faultline-in"),
     "workloads.transformers[0].output_topic: 'faultline-in' is also its input_topic"),
    (("workloads.transformers.0.mode", "twice"),
     "workloads.transformers[0].mode: must be one of exactly-once, at-least-once, got 'twice'"),
    (("workloads.transformers.0.batch", 0), "workloads.transformers[0].batch: must be >= 1, got 0"),
    (("workloads.producers.0.topic", "elsewhere"),
     "workloads.producers[0].topic: no topic 'elsewhere' in this cluster"),
    (("cluster.extra_topics", ["faultline"]),
     "cluster.extra_topics[0]: 'faultline' is named twice (or is the cluster's topic)"),
]


@pytest.mark.parametrize("change, says", BAD)
def test_bad_transformer_input_names_the_key(change: tuple[Any, ...], says: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_spec(changed(*change))
    assert str(err.value).startswith(says), err.value


def test_a_transformer_without_an_input_topic_stops_the_cli_before_anything(shared_dir: Path) -> None:  # noqa: F811
    spec = shared_dir / "no-input.yaml"
    raw = changed(*BAD[0][0])
    raw.pop("configurations")  # the error then names the key alone, not a configuration first
    spec.write_text(yaml.safe_dump(raw))
    spec.chmod(0o644)
    proc = run_as_nobody("run", str(spec), "--results", str(shared_dir / "results"))
    assert proc.returncode == 3, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"faultline: {spec}: {BAD[0][1]}"), proc.stderr
    assert not (shared_dir / "results").exists()


@pytest.mark.parametrize("configuration", ["exactly-once", "at-least-once"])
def test_the_plan_reads_one_topic_and_writes_the_other(tmp_path: Path, configuration: str) -> None:
    from harness.workloadset import drain_workloads, plan_workloads
    from testbed.addressing import make_plan
    from testbed.kafka.cluster import KafkaCluster
    from testbed.runfolder import RunFolder
    from testbed.state import RunState
    from tests.fakes import FakeRuntime
    from workloads.config import (
        ObserverConfig,
        ProducerConfig,
        TransformerConfig,
        config_to_json,
        parse_config,
    )

    spec = parse_spec(EOS, configuration)
    assert spec.transactional  # the feeder is transactional: the drains read both views either way
    state = RunState.create(tmp_path, "fl00abcd", runtime="fake", settings=spec.cluster.to_json(), harness_pid=1)
    world = FakeRuntime(make_plan(spec.cluster.network, spec.cluster.nodes), "fl00abcd", state)
    cluster = KafkaCluster(world, spec.cluster, RunFolder(tmp_path).make())
    planned = plan_workloads(spec, cluster)
    assert {w.config.topic for w in planned if isinstance(w.config, ProducerConfig)} == {"faultline-in"}
    transformers = [w.config for w in planned if isinstance(w.config, TransformerConfig)]
    assert [t.process for t in transformers] == [f"transformer-az{i}-0" for i in (1, 2, 3)]
    assert all((t.input_topic, t.topic, t.group) == ("faultline-in", "faultline", "eos-pipeline") for t in transformers)
    # one of the three killed every 7 s from 22 s, in turn: az1 at 22 s, az2 at 29 s, az3 at 36 s, each every 21 s
    assert [(t.kill_first_s, t.kill_every_s) for t in transformers] == [(22, 21), (29, 21), (36, 21)]
    if configuration == "exactly-once":
        assert [t.transactional_id for t in transformers] == [f"fl00abcd-transformer-az{i}-0" for i in (1, 2, 3)]
        assert transformers[0].kafka == {"transaction.timeout.ms": 10000}
    else:
        assert all(t.transactional_id is None and t.mode == "at-least-once" for t in transformers)
    assert parse_config(config_to_json(transformers[0])) == transformers[0]  # the file a process starts with
    observers = [w.config for w in planned if isinstance(w.config, ObserverConfig)]
    assert all(o.extra_topics == ("faultline-in",) for o in observers)
    assert parse_config(config_to_json(observers[0])) == observers[0]
    drains = {w.name: (w.config.topic, w.config.kafka["isolation.level"])
              for w in drain_workloads(cluster, 60.0, both_views=True) if w.config is not None}
    assert len(drains) == 12 and drains["drain-az1"] == ("faultline", "read_committed")
    assert drains["drain-az2-faultline-in-ru"] == ("faultline-in", "read_uncommitted")


def test_one_topic_keeps_its_manifest_and_observer_config(tmp_path: Path) -> None:
    from testbed.kafka.config import ClusterSettings
    from testbed.lifecycle import settings_from_json
    from workloads.config import config_to_json, parse_config

    assert "extra_topics" not in ClusterSettings().to_json()  # a v1 run's manifest and state as before
    two = ClusterSettings(extra_topics=("in",))
    assert settings_from_json(two.to_json()) == two and two.topics == ("faultline", "in")
    observer = {"process": "observer-broker-0", "role": "observer", "az": "az1", "journal": str(tmp_path / "o.jsonl"),
                "topic": "faultline", "broker_id": 0, "broker_address": "198.18.0.2:9092"}
    assert "extra_topics" not in config_to_json(parse_config(observer))
