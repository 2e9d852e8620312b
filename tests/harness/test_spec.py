"""Spec validation: every error names the key's path; configurations merge over the base."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.spec import load_specs, merge, parse_spec
from testbed.errors import SpecError
from testbed.runtime import kinds

BASE: dict[str, Any] = {
    "name": "t",
    "duration_s": 5,
    "workloads": {
        "producers": [{"azs": ["az1"], "settings": {"acks": "all", "enable.idempotence": True}}],
        "consumers": [{"azs": ["az2"], "mode": "group", "commit": "after"}],
    },
}


def with_(path: str, value: Any) -> dict[str, Any]:
    """BASE with one key (dotted path, [i] for list items; what follows `.settings.` is one name) replaced."""
    spec = yaml.safe_load(yaml.safe_dump(BASE))
    node: Any = spec
    head, dotted, setting = path.partition(".settings.")
    parts = head.replace("]", "").replace("[", ".").split(".") + (["settings", setting] if dotted else [])
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
        ("cluster.min_insync_replicas", "two", "cluster.min_insync_replicas: must be an integer in 1..9, got 'two'"),
        ("cluster.unclean_leader_election", "yes", "cluster.unclean_leader_election: must be true or false"),
        (
            "workloads.producers[0].settings.acks",
            1,
            "workloads.producers[0].settings: librdkafka refuses these together: "
            "`acks` must be set to `all` when `enable.idempotence` is true",
        ),
        (
            "workloads.producers[0].settings.acks",
            "some",
            "workloads.producers[0].settings.acks: librdkafka refuses it: "
            'Invalid value for configuration property "request.required.acks"',
        ),
        (
            "workloads.producers[0].settings",
            {"enable.idempotence": True, "max.in.flight.requests.per.connection": 6},
            "workloads.producers[0].settings: librdkafka refuses these together: `max.in.flight` must be set <= 5",
        ),
        (
            "workloads.producers[0].settings.linger.ms",
            -5,
            "workloads.producers[0].settings.linger.ms: librdkafka refuses it: "
            'Configuration property "queue.buffering.max.ms" value -5 is outside allowed range',
        ),
        (
            "workloads.producers[0].settings.fetch.min.bytes",
            5,
            "workloads.producers[0].settings.fetch.min.bytes: librdkafka refuses it: Configuration property "
            "fetch.min.bytes is a consumer property and will be ignored by this producer instance",
        ),
        (
            "workloads.producers[0].settings.linger.ms",
            [5],
            "workloads.producers[0].settings.linger.ms: must be a string or a number or true or false, got [5]",
        ),
        (
            "workloads.producers[0].settings.bootstrap.servers",
            "10.0.0.1:9092",
            "workloads.producers[0].settings.bootstrap.servers: set by the harness itself",
        ),
        (
            "workloads.consumers[0].settings.fetch.frobs",
            1,
            'workloads.consumers[0].settings.fetch.frobs: librdkafka refuses it: No such configuration property: "fetch.frobs"',
        ),
        (
            "workloads.consumers[0].isolation_level",
            "read_everything",
            "workloads.consumers[0].isolation_level: unknown isolation level 'read_everything' "
            "(known: read_committed, read_uncommitted)",
        ),
        (
            "workloads.consumers[0].settings.group.id",
            "mine",
            "workloads.consumers[0].settings.group.id: set by the harness itself",
        ),
        ("description", ["one", "two"], "description: must be a string, got ['one', 'two']"),
        ("notes", ["one"], "notes: must be a string, got ['one']"),
        ("cluster.partitions", "lots", "cluster.partitions: must be an integer in 1..64, got 'lots'"),
        ("cluster.partitions", -5, "cluster.partitions: must be >= 1, got -5"),
        ("cluster.controller", 3, "cluster.controller: no broker 3 in a cluster of 3 nodes"),
        ("seed", 1.5, "seed: must be an integer >= 0, got 1.5"),
        ("nemesis", [{"at": 1, "fault": "isolate-az", "target": "nowhere"}], "nemesis[0].target: 'nowhere' is not a target"),
        ("workloads.producers[0].azs", ["az7"], "workloads.producers[0].azs[0]: unknown AZ 'az7'"),
        ("workloads.producers[0].rate", -1, "workloads.producers[0].rate: must be >= 0"),
        (
            "workloads.producers[0].settings.frobs",
            1,
            'workloads.producers[0].settings.frobs: librdkafka refuses it: No such configuration property: "frobs"',
        ),
        (
            "workloads.consumers[0].mode",
            "stream",
            "workloads.consumers[0].mode: must be one of assign, group",
        ),
        (
            "workloads.consumers[0].commit",
            "never",
            "workloads.consumers[0].commit: must be one of before, after, auto, none",
        ),
        ("duration_s", 0, "duration_s: must be >= 1"),
        (
            "cluster.replica_assignment",
            [[0, 0]],
            "cluster.replica_assignment[0]: must list distinct broker ids",
        ),
        ("expect.absent", ["lots"], "expect.absent[0]: unknown anomaly 'lots'"),
        ("checker", "excel", "checker: must be one of auto, spark, pandas, got 'excel'"),
        ("cluster.runtime", "vmware", "cluster.runtime: unknown runtime 'vmware' (known: netns, docker, ssh, docker-existing)"),
        ("cluster.flush_messages", 0, "cluster.flush_messages: must be >= 1"),
        ("cluster.flush_ms", "often", "cluster.flush_ms: must be an integer >= 1"),
        ("cluster.zookeeper_force_sync", "yes", "cluster.zookeeper_force_sync: must be true or false"),
        ("cluster.lose_unsynced_writes", 1, "cluster.lose_unsynced_writes: must be true or false"),
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
    with pytest.raises(SpecError, match=r"^configurations.bad: workloads.producers\[0\].settings: .* `acks` must be"):
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


def test_a_replica_assignment_fixes_partitions_and_a_given_count_must_agree() -> None:
    spec = with_("cluster.replica_assignment", [[1, 2, 0]])
    assert parse_spec(spec).cluster.partitions == 1
    spec["cluster"]["partitions"] = 3
    with pytest.raises(SpecError, match=r"^cluster.partitions: 3 disagrees with replica_assignment, which gives 1"):
        parse_spec(spec)
    spec["cluster"]["partitions"] = 1
    spec["cluster"]["replication_factor"] = 2
    with pytest.raises(SpecError, match=r"^cluster.replication_factor: 2 disagrees with replica_assignment"):
        parse_spec(spec)


@pytest.mark.parametrize(
    "configuration, says",
    [
        ({"overrides": {"cluster": {"partitions": "lots"}}}, "configurations.c.overrides.cluster.partitions: must be"),
        ({"overrides": {"description": ["x"]}}, "configurations.c.overrides.description: must be a string"),
        ({"overrides": {"name": "other"}}, "configurations.c.overrides.name: unknown key"),
        ({"description": ["x"]}, "configurations.c.description: must be a string"),
        ({"expect": {"absent": ["lots"]}}, "configurations.c.expect.absent[0]: unknown anomaly 'lots'"),
        (
            {"overrides": {"workloads": {"producers": [{"settings": {"frobs": 1}}]}}},
            "configurations.c: workloads.producers[0].settings.frobs: librdkafka refuses it",
        ),
        ({"frobs": 1}, "configurations.c.frobs: unknown key"),
    ],
)
def test_keys_are_checked_inside_every_configuration_even_one_not_run(
    tmp_path: Path, configuration: dict[str, Any], says: str
) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(dict(BASE, configurations={"good": {}, "c": configuration})))
    with pytest.raises(SpecError) as err:
        load_specs(path, only="good")  # only "good" runs; "c" is in the file and must be right too
    assert f"spec.yaml: {says}" in str(err.value)


def test_the_top_level_expectation_is_checked_even_when_every_configuration_has_its_own() -> None:
    raw = dict(BASE, expect={"present": ["nothing-like-it"]}, configurations={"a": {"expect": {"present": ["lost"]}}})
    with pytest.raises(SpecError, match=r"^expect.present\[0\]: unknown anomaly 'nothing-like-it'"):
        parse_spec(raw, "a")


def test_any_librdkafka_setting_is_taken_and_consumers_have_settings_too() -> None:
    raw = with_("workloads.producers[0].settings", {"acks": -1, "compression.codec": "lz4", "batch.num.messages": 50,
                                                     "enable.idempotence": True, "sticky.partitioning.linger.ms": 0})
    raw["workloads"]["consumers"][0]["settings"] = {"fetch.min.bytes": 10, "check.crcs": True}
    spec = parse_spec(raw)
    assert spec.producers[0].settings == {"acks": "all", "compression.codec": "lz4", "batch.num.messages": 50,
                                          "enable.idempotence": True, "sticky.partitioning.linger.ms": 0}
    assert spec.consumers[0].settings == {"fetch.min.bytes": 10, "check.crcs": True}


def test_a_consumers_settings_reach_its_process(tmp_path: Path) -> None:
    from harness.workloadset import plan_workloads
    from testbed.addressing import make_plan
    from testbed.kafka.cluster import KafkaCluster
    from testbed.runfolder import RunFolder
    from testbed.state import RunState
    from tests.fakes import FakeRuntime

    raw = yaml.safe_load(yaml.safe_dump(BASE))
    raw["workloads"]["consumers"][0]["settings"] = {"fetch.min.bytes": 10}
    spec = parse_spec(raw)
    state = RunState.create(tmp_path, "fl000042", runtime="fake", settings=spec.cluster.to_json(), harness_pid=1)
    world = FakeRuntime(make_plan(spec.cluster.network, spec.cluster.nodes), "fl000042", state)
    cluster = KafkaCluster(world, spec.cluster, RunFolder(tmp_path).make())
    consumers = [w for w in plan_workloads(spec, cluster) if w.role == "consumer"]
    assert consumers and all(w.config.kafka == {"fetch.min.bytes": 10, "isolation.level": "read_committed"}
                             for w in consumers)  # type: ignore[union-attr]


def test_a_runtime_that_cannot_shape_links_refuses_delays_and_rates_but_takes_loss(
        monkeypatch: pytest.MonkeyPatch) -> None:
    slow = {**BASE, "cluster": {"runtime": "ssh", "inventory": "hosts.yaml"},
            "nemesis": [{"at": 1, "fault": "lossy-link", "target": "az1", "loss": 0.3},
                        {"at": 2, "fault": "slow-link", "target": "az1", "delay_ms": 200}]}
    assert parse_spec(slow).nemesis.items  # every runtime shapes links today
    cannot = dataclasses.replace(kinds.kind("ssh"), abilities=kinds.kind("ssh").abilities - {kinds.Ability.SHAPE_LINKS})
    monkeypatch.setitem(kinds._BY_NAME, "ssh", cannot)
    with pytest.raises(SpecError, match=r"^nemesis\[1\]\.fault: slow-link needs a runtime that can delay and "
                                        r"throttle links; the ssh runtime cannot"):
        parse_spec(slow)
    assert parse_spec({**slow, "cluster": {"runtime": "netns"}}).nemesis.items
    assert parse_spec({**slow, "nemesis": slow["nemesis"][:1]}).nemesis.items


def test_several_configurations_are_run_in_the_files_order_and_an_unknown_one_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(dict(BASE, configurations={"a": {}, "b": {}, "c": {}})))
    assert [s.configuration for s in load_specs(path, only=["c", "a"])] == ["a", "c"]
    assert [s.configuration for s in load_specs(path, only="b")] == ["b"]
    with pytest.raises(SpecError, match=r"spec.yaml: configurations: no configuration 'd'"):
        load_specs(path, only=["a", "d"])


def test_a_power_off_that_must_lose_unsynced_writes_is_refused_where_the_runtime_keeps_the_page_cache(
        monkeypatch: pytest.MonkeyPatch) -> None:
    off = {**BASE, "cluster": {"runtime": "ssh", "inventory": "hosts.yaml"},
           "nemesis": [{"at": 1, "fault": "kill", "target": "az1"},
                       {"at": 2, "fault": "power-off", "target": "az2"}]}
    # ssh drops them per node host (unsyncfs or a power command), which its preflight checks: the spec says so
    assert parse_spec(off).cluster.power_offs and not parse_spec({**off, "nemesis": off["nemesis"][:1]}).cluster.power_offs
    cannot = dataclasses.replace(kinds.kind("ssh"), abilities=kinds.kind("ssh").abilities - {kinds.Ability.LOSE_UNSYNCED})
    monkeypatch.setitem(kinds._BY_NAME, "ssh", cannot)
    with pytest.raises(SpecError, match=r"^nemesis\[1\]\.fault: power-off with cluster.lose_unsynced_writes: true "
                                        r"needs a runtime that drops unsynced writes; the ssh runtime cannot: .*page "
                                        r"cache survives.*use --runtime netns or docker"):
        parse_spec(off)
    assert parse_spec({**off, "cluster": {**off["cluster"], "lose_unsynced_writes": False}}).nemesis.items
    assert parse_spec({**off, "cluster": {"runtime": "docker"}}).nemesis.items  # docker drops them too
    chaos = {**off, "nemesis": [{"random-chaos": {"from": 1, "until": 10, "duration": [1, 2], "interval": [1, 2]}}]}
    with pytest.raises(SpecError, match=r"^nemesis\[0\]\.fault: power-off"):
        parse_spec(chaos)


def test_set_replaces_a_key_of_the_spec_and_of_every_configuration_and_names_itself_when_wrong(tmp_path: Path) -> None:
    from harness.spec_sets import parse_sets
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(dict(BASE, settle_timeout_s=120, configurations={
        "a": {}, "b": {"overrides": {"cluster": {"partitions": 6}, "settle_timeout_s": 90}}})))
    sets = parse_sets(["settle_timeout_s=45", "cluster.partitions=2", "cluster.min_insync_replicas=1"])
    assert [(s.steps, s.value) for s in sets] == [(("settle_timeout_s",), 45), (("cluster", "partitions"), 2),
                                                  (("cluster", "min_insync_replicas"), 1)]
    specs = load_specs(path, sets=sets)
    assert [(s.configuration, s.settle_timeout_s, s.cluster.partitions, s.cluster.min_insync_replicas)
            for s in specs] == [("a", 45.0, 2, 1), ("b", 45.0, 2, 1)]
    assert specs[1].raw["settle_timeout_s"] == 45  # the run folder's spec.yaml says what ran
    assert [s.settle_timeout_s for s in load_specs(path)] == [120.0, 90.0]
    with pytest.raises(SpecError, match=r"^--set: settle_timeout: unknown key"):
        load_specs(path, sets=parse_sets(["settle_timeout=45"]))
    path.write_text(yaml.safe_dump(dict(BASE, duration_s="long")))
    with pytest.raises(SpecError, match=r"spec.yaml: duration_s"):  # the file's own error is the file's
        load_specs(path, sets=sets)


def test_an_expected_unknown_verdict_passes_only_when_the_run_ends_unjudged() -> None:
    from harness.expectation import compare, parse_expect
    facts = {"unavailability": True}
    expect = parse_expect({"absent": ["lost"], "observed": ["unavailability"], "valid": "unknown"})
    unsettled = {"valid": "unknown", "reason": "timed out ...: faultline-0 leader 0, ISR [0] of 3 replicas",
                 "counts": {"lost": 0}}
    assert compare(expect, unsettled, facts)["passed"]  # type: ignore[index]
    judged = compare(expect, {"valid": True, "counts": {"lost": 0}}, facts)
    assert judged is not None and judged["mismatches"] == ["valid = True (expected unknown)"]
    # Any other expectation still fails an unknown verdict, naming its reason.
    plain = compare(parse_expect({"absent": ["lost"]}), unsettled, facts)
    assert plain is not None and plain["mismatches"] == [f"verdict unknown: {unsettled['reason']}"]
    with pytest.raises(SpecError, match=r"expect\.valid"):
        parse_spec(dict(BASE, expect={"valid": "maybe"}))


def test_an_expected_unknown_verdict_must_match_the_reason_it_pins() -> None:
    from harness.expectation import compare, parse_expect
    expect = parse_expect({"valid": "unknown", "reason": r"faultline-0 leader 0, ISR \[0\] of 3"})
    stall = {"valid": "unknown", "reason": "timed out ...: faultline-0 leader 0, ISR [0] of 3 replicas", "counts": {}}
    assert compare(expect, stall, {})["passed"]  # type: ignore[index]
    other = {"valid": "unknown", "reason": "timed out ...: no controller", "counts": {}}
    judged = compare(expect, other, {})
    assert judged is not None and not judged["passed"]
    assert judged["mismatches"] == [f"verdict unknown for another reason than /{expect.reason}/: no controller"
                                    .replace("no controller", other["reason"])]
    assert "reason ~ /" in judged["expected"]
    with pytest.raises(SpecError, match=r"^expect\.reason: only with valid: unknown"):
        parse_spec(dict(BASE, expect={"absent": ["lost"], "reason": "x"}))
    with pytest.raises(SpecError, match=r"^expect\.reason: '\[' is not a regular expression"):
        parse_spec(dict(BASE, expect={"valid": "unknown", "reason": "["}))
