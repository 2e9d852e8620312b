"""Synthetic finished run folders (history, verdict, run.json) for the lake's benchmark and fast tests.

The history comes from checkers.synth, the verdict from the pandas engine on it,
and the manifest has run.json's schema (docs/run-manifest.md) with settings drawn
from a small matrix, so a lake of them has something to compare.
Must never: write outside the results folder it is given.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from checkers.api import check
from checkers.synth import BASE_NS, SynthSpec, generate, write_history
from checkers.verdict import exit_status, write_verdict
from testbed.files import write_json_atomic
from testbed.manifest import SCHEMA_VERSION, iso_utc
from testbed.runfolder import RunFolder

SCENARIOS = ("synthetic-isolate", "synthetic-split")
ACKS = ("1", "all")
# Broker versions and metadata modes in turn; the first has no `metadata` key, as a run.json from before KRaft.
VERSIONS = (("2.7.2", None), ("3.9.1", "kraft"), ("4.1.1", "kraft"))
CLIENT_UNDER_TEST = {"confluent_kafka": "2.10.1", "librdkafka": "2.10.1", "python": "3.10.13"}  # every fourth run


def manifest(run_id: str, scenario: str, configuration: str, index: int, verdict: dict[str, Any],
             started: dt.datetime) -> dict[str, Any]:
    acks = ACKS[index % len(ACKS)]
    idempotent = acks == "all" and index % 4 == 3
    passed = verdict["counts"]["lost"] == 0 if acks == "all" else True
    kafka, metadata = VERSIONS[index % len(VERSIONS)]
    return {
        "schema_version": SCHEMA_VERSION, "run_id": run_id, "campaign_id": f"synthetic-{index // 50}",
        "scenario": scenario, "configuration": configuration, "status": "finished",
        "started_at": iso_utc(started.timestamp()), "ended_at": iso_utc(started.timestamp() + 60),
        "duration_s": 60.0, "runtime": "netns",
        "versions": {"faultline": "0.1.0", "kafka": kafka, "librdkafka": "2.16.1", "confluent_kafka": "2.16.1",
                     "python": "3.11", **({"client_under_test": CLIENT_UNDER_TEST} if index % 4 == 1 else {})},
        "commit": "synthetic", "seed": index, "run_duration_s": 40.0,
        "settings": {
            "producers": [{"azs": ["az1", "az2", "az3"], "per_az": 1, "rate": 150.0, "value_bytes": 0,
                           "settings": {"acks": acks, "enable.idempotence": idempotent, "retries": 2147483647,
                                        "max.in.flight.requests.per.connection": 5 if index % 3 else 1}}],
            "consumers": [{"azs": ["az1", "az2", "az3"], "per_az": 1, "mode": "group", "group": "g",
                           "commit": "auto"}],
            "topic": {"name": "faultline", "partitions": 6, "replication_factor": 3, "min_insync_replicas": 2,
                      "replica_assignment": None},
            "broker": {"nodes": 3, "unclean_leader_election": False, "replica_lag_time_max_ms": 10000,
                       "zookeeper_session_timeout_ms": 6000, "controller": None, "overrides": {},
                       **({"metadata": metadata} if metadata else {})}},
        "faults": ["isolate-az"], "exit_status": exit_status(verdict),
        "valid": verdict["valid"], "expected": "no lost" if acks == "all" else None,
        "observed": f"lost = {verdict['counts']['lost']}" if acks == "all" else None,
        "outcome": ("PASS" if passed else "FAIL") if acks == "all" else None,
    }


def write_run(results: Path, index: int, operations: int, scenario: str | None = None,
              configuration: str | None = None, started: dt.datetime | None = None) -> Path:
    """Run number `index` of a synthetic campaign: results/<scenario>/<timestamp>/<configuration>/ (by default
    one of SCENARIOS, acks1 or acksall, an hour after run `index - 1`)."""
    scenario = scenario or SCENARIOS[index % len(SCENARIOS)]
    configuration = configuration or f"acks{ACKS[index % len(ACKS)]}"
    if started is None:
        started = dt.datetime.fromtimestamp(BASE_NS / 1e9, dt.UTC) + dt.timedelta(hours=index)
    run_dir = results / scenario / started.strftime("%Y%m%d-%H%M%S") / configuration
    folder = RunFolder(run_dir)
    plant = {"lost": index % 5, "duplicate": index % 3, "divergence": 0, "recovered": 2}
    write_history(generate(SynthSpec(operations=operations, seed=index, plant=plant)), folder.history_dir)
    verdict = check(folder.history_dir, engine="pandas")
    write_verdict(verdict, run_dir)
    run_id = run_dir.relative_to(results).as_posix()
    write_json_atomic(folder.manifest, manifest(run_id, scenario, configuration, index, verdict, started))
    return run_dir


# A night of the nightly campaign (campaigns/nightly.yaml): its catalogue scenarios, each with the number of
# configurations the catalogue gives it, 65 runs in all (issue 41: 65 runs a night, ~24,000 a year).
NIGHTLY_SCENARIOS = (
    ("slow-fsync-follower", 1), ("jbod-dir-failure", 1), ("rolling-restart", 2), ("reassign-under-partition", 2),
    ("random-chaos", 5), ("link-leader-follower", 2), ("link-broker-controller", 1), ("isolate-az-follower", 2),
    ("isolate-az-leader", 4), ("isolate-az-controller", 1), ("isolate-az-controller-leader", 2),
    ("power-off-mid-replication", 2), ("unclean-election", 3), ("retry-duplicates", 2), ("inflight-reorder", 2),
    ("power-cut-cluster", 2), ("power-cut-az", 1), ("lossy-leader-link", 1), ("slow-az", 2), ("txn-smoke", 2),
    ("txn-coordinator-az", 2), ("zombie-fencing", 1), ("txn-power-cut-cluster", 2), ("eos-pipeline", 2),
    ("hanging-transaction", 3), ("txn-delayed-endtxn", 3), ("at-most-once-crash", 1), ("at-least-once-crash", 1),
    ("auto-commit-crash", 1), ("zombie-consumer", 3), ("coordinator-failover", 4), ("disk-error-leader", 1),
    ("disk-full-leader", 1),
)
NIGHT_RUNS = sum(n for _, n in NIGHTLY_SCENARIOS)
NIGHT_OPERATIONS = 100_000  # a catalogue run's ~40-80 s at the workloads' rates, reads and drains included


def night_plan() -> list[tuple[str, str]]:
    """(scenario, configuration) of each run of one night, in the campaign's order."""
    return [(name, f"config-{k}") for name, n in NIGHTLY_SCENARIOS for k in range(n)]


def write_night(results: Path, night: int, operations: int = NIGHT_OPERATIONS, runs: int | None = None) -> list[Path]:
    """Night number `night` of a nightly campaign: `runs` (default: all 65) run folders started a minute apart
    from 22:00 UTC, `night` days after checkers.synth's first day."""
    first = dt.datetime.fromtimestamp(BASE_NS / 1e9, dt.UTC).replace(hour=22, minute=0, second=0, microsecond=0)
    start = first + dt.timedelta(days=night)
    plan = night_plan()[: NIGHT_RUNS if runs is None else runs]
    return [write_run(results, night * NIGHT_RUNS + i, operations, scenario, configuration,
                      start + dt.timedelta(minutes=i)) for i, (scenario, configuration) in enumerate(plan)]
