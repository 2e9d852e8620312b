"""`run --set` on list entries: `[N]` reaches one entry, `[*]` every one, in each configuration as it runs; a step
that cannot reach is one line naming the key, exit status 3, before anything starts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from faultline.cli import main
from harness.spec import load_specs
from harness.spec_sets import ListStep, parse_set, parse_sets
from testbed.errors import UsageError
from tests.conftest import REPO

ISOLATE = REPO / "scenarios" / "isolate-az-leader.yaml"


def producer_settings(path: Path, *sets: str) -> dict[str, list[dict[str, Any]]]:
    """Each configuration's producers' settings once the sets are applied."""
    return {spec.configuration or "default": [dict(p.settings) for p in spec.producers]
            for spec in load_specs(path, sets=parse_sets(list(sets)))}


def test_a_key_steps_through_list_entries_and_a_setting_name_keeps_its_dots() -> None:
    spec_set = parse_set("workloads.producers[0].settings.enable.idempotence=false")
    assert spec_set.steps == ("workloads", "producers", ListStep(0), "settings", "enable.idempotence")
    assert spec_set.value is False
    assert parse_set("workloads.producers[*].rate=5").steps == ("workloads", "producers", ListStep(None), "rate")
    assert parse_set("cluster.broker_overrides.log.flush.interval.messages=1").steps == (
        "cluster", "broker_overrides", "log.flush.interval.messages")


@pytest.mark.parametrize("item, says", [
    ("workloads.producers[x].rate=1", "--set workloads.producers[x].rate=1: producers[x]: a list step is [N]"),
    ("workloads.producers[-1].rate=1", "producers[-1]: a list step is [N] (N = 0, 1, ...) or [*]"),
    ("workloads.producers[0.rate=1", "expected KEY=VALUE with a key like a.b, a[0].b or a[*].b"),
    ("=1", "expected KEY=VALUE"),
])
def test_a_malformed_key_is_a_usage_error(item: str, says: str) -> None:
    with pytest.raises(UsageError, match=None) as caught:
        parse_set(item)
    assert says in str(caught.value)


def test_one_entry_of_the_producers_changes_in_every_configuration_over_its_override() -> None:
    settings = producer_settings(ISOLATE, "workloads.producers[0].settings.acks=1",
                                 "workloads.producers[0].settings.enable.idempotence=false")
    assert set(settings) == {"acks1", "acksall", "acksall-idempotent"}
    for configuration, producers in settings.items():
        assert [(p["acks"], p["enable.idempotence"]) for p in producers] == [("1", False)], configuration
        assert producers[0]["delivery.timeout.ms"] == 20000, configuration  # the rest of the entry is the file's


def test_every_entry_changes_with_a_star_and_only_the_named_one_with_an_index(tmp_path: Path) -> None:
    raw = yaml.safe_load((REPO / "scenarios" / "smoke.yaml").read_text())
    second = {"azs": ["az1"], "settings": {"acks": "all", "linger.ms": 5}}
    raw["workloads"]["producers"].append(second)
    path = tmp_path / "two.yaml"
    path.write_text(yaml.safe_dump(raw))
    assert [p["linger.ms"] for p in producer_settings(path, "workloads.producers[*].settings.linger.ms=50")[
        "default"]] == [50, 50]
    assert [p["linger.ms"] for p in producer_settings(path, "workloads.producers[1].settings.linger.ms=50")[
        "default"]] == [5, 50]
    (spec,) = load_specs(path, sets=parse_sets(["workloads.producers[1].rate=7"]))
    assert spec.raw["workloads"]["producers"][1]["rate"] == 7  # the run folder's spec.yaml is spec.raw


@pytest.mark.parametrize("item, says", [
    ("workloads.producers[1].settings.acks=1", "--set: configurations.acks1: workloads.producers[1]: out of range: "
     "workloads.producers has 1 entry ([0] to [0])"),
    ("cluster[0].partitions=2", "--set: configurations.acks1: cluster[0]: cluster is not a list (it is a dict)"),
    ("workloads.transformers[*].batch=2", "--set: configurations.acks1: workloads.transformers[*]: "
     "workloads.transformers is not a list (the spec has none)"),
    ("nemesis.at=3", "--set: configurations.acks1: nemesis: a list: name an entry, nemesis[0] (the first) or "
     "nemesis[*] (every one)"),
    ("workloads.producers[0].settings.acks=many", "--set: configurations.acks1: workloads.producers[0].settings.acks: "
     "librdkafka refuses it"),
])
def test_a_step_that_cannot_reach_is_one_line_naming_the_key_and_nothing_starts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], item: str, says: str) -> None:
    results = tmp_path / "results"
    status = main(["run", str(ISOLATE), "--set", item, "--results", str(results)])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 3 and len(err) == 1 and err[0].startswith(f"faultline: {says}"), err
    assert not results.exists()
