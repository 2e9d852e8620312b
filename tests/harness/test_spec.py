"""Spec validation: every error names the key's path; configurations merge over the base."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.spec import load_specs, merge, parse_spec
from testbed.errors import SpecError

BASE: dict[str, Any] = {
    "name": "t",
    "duration_s": 5,
    "workloads": {
        "producers": [{"azs": ["az1"], "settings": {"acks": "all", "enable.idempotence": True}}],
        "consumers": [{"azs": ["az2"], "mode": "group", "commit": "sync"}],
    },
}


def with_(path: str, value: Any) -> dict[str, Any]:
    """BASE with one key (dotted path, [i] for list items) replaced."""
    spec = yaml.safe_load(yaml.safe_dump(BASE))
    node: Any = spec
    parts = path.replace("]", "").replace("[", ".").split(".")
    for part in parts[:-1]:
        node = node[int(part)] if part.isdigit() else node.setdefault(part, {})
    node[parts[-1]] = value
    return spec


def test_the_base_spec_is_valid() -> None:
    spec = parse_spec(BASE)
    assert spec.producers[0].settings["acks"] == "all"
    assert spec.consumers[0].group == "faultline-g0"
    assert spec.cluster.replication_factor == 3


@pytest.mark.parametrize(
    "path, value, says",
    [
        ("cluster.replicas", 3, "cluster.replicas: unknown key"),
        ("cluster.nodes", 2, "cluster.nodes: must be >= 3"),
        ("cluster.min_insync_replicas", "two", "cluster.min_insync_replicas: must be int"),
        ("cluster.unclean_leader_election", "yes", "cluster.unclean_leader_election: must be bool"),
        (
            "workloads.producers[0].settings.acks",
            1,
            "workloads.producers[0].settings.acks: enable.idempotence requires acks=all",
        ),
        (
            "workloads.producers[0].settings.acks",
            "some",
            "workloads.producers[0].settings.acks: must be 0, 1, all or -1",
        ),
        (
            "workloads.producers[0].settings",
            {"enable.idempotence": True, "max.in.flight.requests.per.connection": 6},
            "workloads.producers[0].settings.max.in.flight.requests.per.connection: enable.idempotence requires at most 5",
        ),
        ("workloads.producers[0].azs", ["az7"], "workloads.producers[0].azs[0]: unknown AZ 'az7'"),
        ("workloads.producers[0].rate", -1, "workloads.producers[0].rate: must be >= 0"),
        ("workloads.producers[0].settings.frobs", 1, "workloads.producers[0].settings.frobs: unknown key"),
        (
            "workloads.consumers[0].mode",
            "stream",
            "workloads.consumers[0].mode: must be one of assign, group",
        ),
        (
            "workloads.consumers[0].commit",
            "never",
            "workloads.consumers[0].commit: must be one of auto, sync",
        ),
        ("duration_s", 0, "duration_s: must be >= 1"),
        (
            "cluster.replica_assignment",
            [[0, 0]],
            "cluster.replica_assignment[0]: must list distinct broker ids",
        ),
        ("expect.absent", ["lots"], "expect.absent[0]: unknown anomaly 'lots'"),
        ("checker", "excel", "checker: must be spark or pandas"),
        ("cluster.runtime", "vmware", "cluster.runtime: unknown runtime 'vmware' (known: netns, docker, ssh)"),
    ],
)
def test_bad_specs_name_the_key(path: str, value: Any, says: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_spec(with_(path, value))
    assert says in str(err.value)


def test_min_insync_above_replication_factor_is_refused() -> None:
    spec = with_("cluster.replication_factor", 2)
    spec["cluster"]["min_insync_replicas"] = 3
    with pytest.raises(
        SpecError, match=r"cluster.min_insync_replicas: 3 is more than the replication factor 2"
    ):
        parse_spec(spec)


def test_configurations_merge_and_validate_as_a_whole() -> None:
    raw = dict(
        BASE,
        configurations={
            "acks1": {
                "overrides": {"workloads": {"producers": [{"settings": {"acks": 1}}]}},
                "expect": {"present": ["lost"]},
            },
            "bad": {
                "overrides": {
                    "workloads": {"producers": [{"settings": {"acks": 1, "enable.idempotence": True}}]}
                }
            },
        },
    )
    spec = parse_spec(raw, "acks1")
    assert spec.producers[0].settings["acks"] == "1" and spec.expect.present == ("lost",)
    assert spec.run_name == "t/acks1"
    with pytest.raises(SpecError, match=r"enable.idempotence requires acks=all"):
        parse_spec(raw, "bad")
    with pytest.raises(SpecError, match=r"configurations: no configuration 'nope'"):
        parse_spec(raw, "nope")


def test_merge_replaces_lists_and_merges_mappings() -> None:
    assert merge({"a": {"b": 1, "c": [1]}}, {"a": {"c": [2]}}) == {"a": {"b": 1, "c": [2]}}


def test_spec_files_report_the_file_and_the_yaml_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: x\nworkloads: [\n")
    with pytest.raises(SpecError, match=r"broken.yaml:3: not valid YAML"):
        load_specs(broken)
    bad_key = tmp_path / "bad.yaml"
    bad_key.write_text(yaml.safe_dump(with_("cluster.nodes", 1)))
    with pytest.raises(SpecError, match=r"bad.yaml: cluster.nodes: must be >= 3"):
        load_specs(bad_key)


def test_every_scenario_in_the_catalogue_parses() -> None:
    for path in sorted((Path(__file__).resolve().parents[2] / "scenarios").glob("*.yaml")):
        assert load_specs(path), path


def test_the_runtime_is_the_specs_and_the_cli_may_replace_it(tmp_path: Path) -> None:
    assert parse_spec(with_("cluster.runtime", "netns")).cluster.runtime == "netns"
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(with_("cluster.runtime", "netns")))
    with pytest.raises(SpecError, match=r"spec.yaml: cluster.runtime: unknown runtime 'podman'"):
        load_specs(path, runtime="podman")
    assert [s.raw["cluster"]["runtime"] for s in load_specs(path, runtime="netns")] == ["netns"]
