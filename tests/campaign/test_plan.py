"""Campaign files and plans, pure: validation (one line naming the file and key), seeds, order, matrix rules."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import pytest
import yaml

from campaign.changes import compare
from campaign.config import load_campaign, parse_duration
from campaign.plan import coverage_order, date_seed, plan_cases, seed_window
from testbed.errors import SpecError
from tests.campaign.fake import write_campaign, write_scenario
from tests.conftest import REPO, faultline

MATRIX: dict[str, Any] = {"scenario": "isolate-az-leader", "grid": {
    "acks": [0, 1, "all"], "enable.idempotence": [False, True], "min.insync.replicas": [1, 2]}, "rules": [
    {"expect": {"observed": ["two-leaders"]}},
    {"when": {"acks": "all", "min.insync.replicas": ">= 2"}, "expect": {"absent": ["lost", "divergence"]}},
    {"when": {"acks": [0, 1]}, "expect": {"present": ["lost"]}}]}


def test_the_repos_campaigns_plan() -> None:
    for name in ("nightly", "quick"):
        cases, _ = plan_cases(load_campaign(REPO / "campaigns" / f"{name}.yaml"), 1)
        assert cases, name
    nightly, refused = plan_cases(load_campaign(REPO / "campaigns" / "nightly.yaml"), 1)
    # Every catalogue scenario but smoke, and soak: a six-hour run cannot be a nightly case (make test-soak).
    catalogue = {p.stem for p in (REPO / "scenarios").glob("*.yaml")} - {"smoke", "soak"}
    assert {c.scenario for c in nightly} == catalogue
    assert len(refused) == 8 and all("must be set to `all` when `enable.idempotence` is true" in r["reason"]
                                     for r in refused)
    versions, refused = plan_cases(load_campaign(REPO / "campaigns" / "versions.yaml"), 1)
    core = [c for c in versions if ".md-" in (c.configuration or "")]
    # 11 configurations of the five core scenarios on 2.7.2 and 3.9.1 (ZooKeeper), 3.9.1 and 4.1.1 (KRaft), less
    # the ZooKeeper-only stories' KRaft cells; 2.7.2 KRaft and 4.1.1 ZooKeeper refused in every matrix.
    # The stories' configurations: hw-truncation 3, consumer-validation-duplicates, kraft-isolated-controller,
    # isr-expansion-lost and batch-consume-skip 2 each; isolate-az-leader's client matrix 12.
    assert len(core) == 11 * 4 - 5 * 2 and len(versions) == 3 + 2 * 4 + 12 + len(core)
    assert len(refused) == 11 * 2 + 5 * 2


def test_durations() -> None:
    assert parse_duration("60m", "b") == 3600 and parse_duration("1h30m", "b") == 5400
    assert parse_duration("90s", "b") == 90 and parse_duration(120, "b") == 120
    for bad in ("60", "an hour", "0m", "", "-5m"):
        with pytest.raises(SpecError, match="b: (expected a duration like 90s|a budget must be longer than 0 s)"):
            parse_duration(bad, "b")


@pytest.mark.parametrize(("entries", "message"), [
    ([{"scenario": "no-such-scenario"}], r"entries\[0\]\.scenario: no scenario 'no-such-scenario'"),
    ([{"scenario": "isolate-az-leader", "configurations": ["acks7"]}],
     r"entries\[0\]\.configurations: isolate-az-leader has no configuration 'acks7'"),
    ([{"random-chaos": {"seeds": [5, 1]}}], r"entries\[0\]\.random-chaos\.seeds: must be a range"),
    ([{"random-chaos": {"seeds": [1, 5], "count": 0}}], r"entries\[0\]\.random-chaos\.count"),
    ([{"matrix": {**MATRIX, "grid": {"acks": [1], "colour": ["red"]}}}],
     r"entries\[0\]\.matrix\.grid\.colour: not a producer setting a matrix can vary"),
    ([{"matrix": {**MATRIX, "rules": [{"when": {"acks": 1}, "expect": {"absent": ["lost"]}}]}}],
     r"entries\[0\]\.matrix\.rules: no rule matches the cell acks=0"),
    ([{"matrix": {**MATRIX, "rules": [{"when": {"retries": 1}, "expect": {}}]}}],
     r"entries\[0\]\.matrix\.rules\[0\]\.when\.retries: not a setting of the grid"),
    ([{"matrix": {**MATRIX, "rules": [{"expect": {"absent": ["lots"]}}]}}],
     r"entries\[0\]\.matrix\.rules\[0\]\.expect\.absent\[0\]: unknown anomaly 'lots'"),
    ([{"scenario": "smoke", "overrides": {"duration_s": "long"}}], r"entries\[0\] \(smoke \[default\]\): .*smoke\.yaml: duration_s: must be a number"),
    ([{"scenario": "smoke", "colour": "red"}], r"entries\[0\]\.colour: unknown key"),
    ([{"nothing": 1}], r"entries\[0\]: must be one of"),
    ([], r"entries: must be a non-empty list"),
])
def test_bad_campaigns_are_one_line_naming_file_and_key(tmp_path: Path, entries: list[Any], message: str) -> None:
    path = write_campaign(tmp_path, entries)
    with pytest.raises(SpecError, match=message) as caught:
        plan_cases(load_campaign(path), 1)
    assert str(caught.value).startswith(str(path)) and "\n" not in str(caught.value)


def test_the_cli_refuses_a_bad_campaign_with_exit_3_and_writes_nothing(tmp_path: Path) -> None:
    path = write_campaign(tmp_path, [{"scenario": "smoke"}], budget="soon")
    proc = faultline("campaign", str(path), "--results", str(tmp_path / "results"))
    assert proc.returncode == 3 and proc.stderr.strip() == f"faultline: {path}: budget: expected a duration like " \
        "90s, 10m or 1h30m, got 'soon'", proc.stderr
    proc = faultline("campaign", str(REPO / "campaigns" / "quick.yaml"), "--budget", "1 hour",
                     "--results", str(tmp_path / "results"))
    assert proc.returncode == 3 and proc.stderr.strip().endswith("--budget: expected a duration like 90s, 10m or "
                                                                  "1h30m, got '1 hour'"), proc.stderr
    assert not (tmp_path / "results").exists()


def test_matrix_cells_get_their_settings_and_the_expectation_of_every_matching_rule(tmp_path: Path) -> None:
    path = write_campaign(tmp_path, [{"matrix": MATRIX}])
    cases, refused = plan_cases(load_campaign(path), 0)
    assert len(cases) == 8 and len(refused) == 4  # idempotence needs acks=all
    by_name = {c.configuration: c.load() for c in cases}
    strict = by_name["acks-all.idem-true.minisr-2"]
    assert strict.cluster.min_insync_replicas == 2
    assert strict.producers[0].settings["acks"] == "all" and strict.producers[0].settings["enable.idempotence"]
    assert (strict.expect.absent, strict.expect.observed) == (("lost", "divergence"), ("two-leaders",))
    loose = by_name["acks-1.idem-false.minisr-1"]
    assert loose.cluster.min_insync_replicas == 1 and loose.producers[0].settings["acks"] == "1"
    assert (loose.expect.present, loose.expect.absent) == (("lost",), ())
    assert by_name["acks-all.idem-false.minisr-1"].expect.absent == ()


def test_a_rules_log_evidence_names_each_cells_own_versions() -> None:
    """The upgrades campaign's one rule pins each pair's own mechanism: the new version's start line and the old and
    new protocols, escaped; before, its cells held counts only, and a roll that never happened passed them."""
    cases, _ = plan_cases(load_campaign(REPO / "campaigns" / "upgrades.yaml"), 1)
    cell = {c.configuration: c.load() for c in cases}["acks-all.kafka-2_7_2.to-3_0_2"]
    patterns = [ev.pattern for ev in cell.expect.logs]
    assert patterns[0] == r"Kafka version: 3\.0\.2 \(" and cell.expect.logs[0].says == "broker-0 started on 3.0.2"
    assert r"inter\.broker\.protocol\.version = 2\.7$" in patterns
    assert patterns.count(r"inter\.broker\.protocol\.version = 3\.0$") == 3
    assert not any("{" in p for p in patterns)


def test_matrix_rules_merge_log_evidence_and_refuse_a_protocol_of_no_version(tmp_path: Path) -> None:
    seen = {"pattern": "acks {acks}", "says": "acks={acks}"}
    rules = [{"expect": {"logs": [seen]}}, {"when": {"acks": 1}, "expect": {"logs": [seen, {"pattern": "other"}]}}]
    path = write_campaign(tmp_path, [{"matrix": {**MATRIX, "grid": {"acks": [1, "all"], "enable.idempotence": [False]},
                                                  "rules": rules}}])
    by_name = {c.configuration: c.load() for c in plan_cases(load_campaign(path), 0)[0]}
    assert [(ev.pattern, ev.says) for ev in by_name["acks-1.idem-false"].expect.logs] == [("acks 1", "acks=1"), ("other", "")]
    assert [ev.pattern for ev in by_name["acks-all.idem-false"].expect.logs] == ["acks all"]
    bad = write_campaign(tmp_path, [{"matrix": {**MATRIX, "rules": [{"expect": {"logs": [{"pattern": "{acks.protocol}"}]}}]}}],
                         name="bad")
    with pytest.raises(SpecError, match=r"bad\.yaml: entries\[0\]\.matrix\.rules\[0\]\.expect: \{acks\.protocol\}: "
                                        r"only a Kafka version of the grid has a protocol"):
        load_campaign(bad)


def test_the_kraft_campaign_runs_every_catalogue_story_that_runs_on_kraft_there() -> None:
    """A new scenario is added to campaigns/kraft.yaml unless it is ZooKeeper-only (or the soak, or a story whose
    configurations are its versions'), and every case runs on KRaft: a configuration pinning ZooKeeper fails here."""
    from harness.spec import load_spec_file

    campaign = load_campaign(REPO / "campaigns" / "kraft.yaml")
    on_kraft = {p.stem for p in (REPO / "scenarios").glob("*.yaml") if not load_spec_file(p).get("zookeeper_only")}
    assert {e.source.stem for e in campaign.entries} == on_kraft - {"soak", "hanging-transaction"}  # type: ignore[union-attr]
    assert all(e.configurations is None for e in campaign.entries)  # type: ignore[union-attr]  # every configuration
    cases, refused = plan_cases(campaign, 1)
    assert not refused and len(cases) >= 56
    assert all(case.load().cluster.kraft for case in cases), [c.label for c in cases if not c.load().cluster.kraft]


def test_seed_windows_move_on_each_night_and_cover_the_range() -> None:
    assert seed_window(1, 10, 3, 0) == [1, 2, 3] and seed_window(1, 10, 3, 1) == [4, 5, 6]
    assert seed_window(1, 10, 3, 3) == [10, 1, 2]
    nights = {s for night in range(4) for s in seed_window(1, 10, 3, night)}
    assert nights == set(range(1, 11))
    assert date_seed(date(2026, 11, 24)) == date_seed(date(2026, 11, 23)) + 1


def test_order_covers_every_scenario_before_repeating_any(tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        write_scenario(tmp_path, name, configurations={f"{name}{i}": {} for i in range(3 if name == "a" else 1)})
    path = write_campaign(tmp_path, [{"scenario": "a.yaml"}, {"scenario": "b.yaml"}, {"scenario": "c.yaml"},
                                     {"random-chaos": {"scenario": "b.yaml", "seeds": [1, 100], "count": 2}}])
    for seed in range(4):
        cases, _ = plan_cases(load_campaign(path), seed)
        assert {c.scenario for c in cases[:3]} == {"a", "b", "c"}, seed
        assert len(cases) == 7
    first = [c.label for c in plan_cases(load_campaign(path), 0)[0]]
    second = [c.label for c in plan_cases(load_campaign(path), 1)[0]]
    assert first != second and sorted(first) != sorted(second)  # another order and other seeds
    assert coverage_order([], 3) == []


def test_changes_name_new_anomaly_kinds_and_cases_run_only_once() -> None:
    def row(configuration: str, outcome: str, kinds: list[str]) -> dict[str, Any]:
        return {"scenario": "s", "configuration": configuration, "outcome": outcome, "anomaly_kinds": kinds}
    before = [row("a", "PASS", ["duplicate"]), row("b", "REGRESSION", []), row("c", "PASS", []), row("gone", "PASS", [])]
    now = [row("a", "PASS", ["duplicate", "lost"]), row("b", "PASS", []), row("c", "FAIL", []), row("new", "PASS", []),
           row("c", "PASS", [])]
    changes = compare(now, before, "prev")
    assert changes.new_kinds == [(("s", "a"), ["lost"])]
    assert changes.fixed == [("s", "b")] and changes.newly_failing == [("s", "c")]
    assert changes.new_cases == [("s", "new")] and changes.not_run == [("s", "gone")]
    assert compare(now, [], None).to_json()["previous"] is None


def test_a_campaign_file_may_name_spec_files_beside_it(tmp_path: Path) -> None:
    write_scenario(tmp_path, "mine", {"absent": ["lost"]})
    path = write_campaign(tmp_path, [{"scenario": "mine.yaml", "overrides": {"duration_s": 7}}],
                          overrides={"duration_s": 5, "seed": 9})
    (case,), _ = plan_cases(load_campaign(path), 0)
    spec = case.load()
    assert (spec.name, spec.duration_s, spec.seed) == ("mine", 7, 9)
    assert yaml.safe_load(path.read_text())["entries"][0]["scenario"] == "mine.yaml"


def test_plan_prints_the_order_and_what_the_budget_leaves_out() -> None:
    proc = faultline("campaign", "campaigns/nightly.yaml", "--plan", "--seed", "3", "--overhead", "120")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "seed 3, budget 3600 s, 120 s per run on top of its duration"
    fit = int(lines[-2].split()[0])
    assert lines[-2].startswith(f"{fit} of 88 runs fit in 60 min") and 0 < fit < 88
    assert sum("SKIP" in line for line in lines[1:-2]) == 88 - fit
    assert lines[-1].startswith("the whole plan needs ") and "shards (--shard I/" in lines[-1]


def test_runtime_and_kafka_version_from_the_command_line_apply_to_every_run() -> None:
    from campaign.command import Options, make_plan

    plan = make_plan(Options(REPO / "campaigns" / "quick.yaml", seed=1, runtime="docker", kafka_version="2.8.2"))
    clusters = [case.load().cluster for case in plan.cases]
    assert {(c.runtime, c.network, c.kafka_version) for c in clusters} == {("docker", "198.19.0.0/24", "2.8.2")}
    assert plan.budget_s == 600 and plan.seed == 1
    default = make_plan(Options(REPO / "campaigns" / "quick.yaml", budget="5m"))
    assert {case.load().cluster.runtime for case in default.cases} == {"netns"} and default.budget_s == 300


def test_a_matrix_sweeps_metadata_modes_and_names_its_cells_after_their_configuration(tmp_path: Path) -> None:
    rules = [{"expect": {"absent": ["lost"]}}]
    entries = [{"matrix": {"scenario": "isolate-az-leader", "configuration": configuration,
                           "grid": {"kafka_version": ["2.7.2", "3.9.1", "4.1.1"], "metadata": ["zookeeper", "kraft"]},
                           "rules": rules}} for configuration in ("acks1", "acksall")]
    entries.append({"matrix": {"scenario": "unclean-election", "configuration": "unclean",
                               "grid": {"kafka_version": ["3.9.1"], "metadata": ["zookeeper", "kraft"]}, "rules": rules}})
    cases, refused = plan_cases(load_campaign(write_campaign(tmp_path, entries)), 0)
    names = sorted(c.configuration or "" for c in cases)
    assert names == sorted(f"{c}.kafka-{v}.md-{m}" for c in ("acks1", "acksall")
                           for v, m in (("2_7_2", "zookeeper"), ("3_9_1", "zookeeper"), ("3_9_1", "kraft"),
                                        ("4_1_1", "kraft"))) + ["unclean.kafka-3_9_1.md-zookeeper"]
    assert len({c.key for c in cases}) == len(cases), "no two cells share a name"
    spec = next(c for c in cases if c.configuration == "acks1.kafka-3_9_1.md-kraft").load()
    assert (spec.cluster.kafka_version, spec.cluster.metadata) == ("3.9.1", "kraft")
    reasons = {r["configuration"]: r["reason"] for r in refused}
    assert "no production KRaft" in reasons["acks1.kafka-2_7_2.md-kraft"]
    assert "runs only on KRaft" in reasons["acksall.kafka-4_1_1.md-zookeeper"]
    assert "ZooKeeper-only story" in reasons["unclean.kafka-3_9_1.md-kraft"]


def test_an_unknown_verdict_the_spec_expects_is_a_pass_and_any_other_an_error(tmp_path: Path) -> None:
    import json
    from datetime import UTC, datetime

    from campaign.records import ERROR, PASS, judge_run
    reason = "timed out after 60 s waiting for the cluster to settle (...): faultline-0 leader 0, ISR [0] of 3 replicas"
    for expected_unknown, outcome in ((True, PASS), (False, ERROR)):
        run = tmp_path / str(expected_unknown)
        run.mkdir()
        mismatches = [] if expected_unknown else [f"verdict unknown: {reason}"]
        (run / "verdict.json").write_text(json.dumps({
            "valid": "unknown", "reason": reason, "counts": {},
            "expectation": {"expected": "valid = unknown" if expected_unknown else "no lost", "observed": "",
                            "passed": not mismatches, "mismatches": mismatches}}))
        attempt = judge_run(run, 1, datetime.now(UTC), 1.0)
        assert attempt.outcome == outcome and reason in attempt.observed


def test_the_upgrades_campaign_sweeps_upgrade_pairs_and_refuses_the_rest() -> None:
    cases, refused = plan_cases(load_campaign(REPO / "campaigns" / "upgrades.yaml"), 1)
    pairs = set()
    for case in cases:
        spec = case.load()
        (upgrade,) = [f for _, f in spec.nemesis.faults() if f.fault == "rolling-upgrade"]
        pairs.add((spec.cluster.kafka_version, upgrade.options["to_version"]))
        assert spec.cluster.upgrade_versions == (upgrade.options["to_version"],)  # its jars fetched first
    assert pairs == {("2.7.2", "3.0.2"), ("2.7.2", "3.6.2"), ("2.7.2", "3.9.1"), ("3.0.2", "3.6.2"),
                     ("3.0.2", "3.9.1"), ("3.6.2", "3.9.1")}
    assert {r["label"] for r in refused} == {"kafka_version=3.0.2 upgrade_to=3.0.2", "kafka_version=3.6.2 "
                                             "upgrade_to=3.0.2", "kafka_version=3.6.2 upgrade_to=3.6.2"}
    assert all("is the version the brokers run then" in r["reason"] or "(use rolling-downgrade for that way)" in
               r["reason"] for r in refused)


def test_every_version_and_operation_story_sits_in_a_campaign_and_stories_runs_all_its_configurations() -> None:
    """campaigns/stories.yaml (issues 39 and 40): each story it names with every configuration of it, none refused;
    with versions.yaml it holds every story under scenarios/versions/ and scenarios/operations/ (smoke-no-idempotence
    is a smoke for old brokers, run with --kafka-version, not a story)."""
    stories, refused = plan_cases(load_campaign(REPO / "campaigns" / "stories.yaml"), 1)
    assert not refused
    named = {c.source.resolve() for c in stories}
    configurations = {(path.stem, name) for path in named
                      for name in yaml.safe_load(path.read_text(encoding="utf-8")).get("configurations") or ["default"]}
    assert {(c.scenario, c.configuration or "default") for c in stories} == configurations
    assert len(stories) == len(configurations) == 17
    versions, _ = plan_cases(load_campaign(REPO / "campaigns" / "versions.yaml"), 1)
    in_a_campaign = named | {c.source.resolve() for c in versions}
    on_disk = {p.resolve() for folder in ("versions", "operations") for p in (REPO / "scenarios" / folder).glob("*.yaml")}
    assert on_disk - in_a_campaign == {(REPO / "scenarios" / "versions" / "smoke-no-idempotence.yaml").resolve()}
