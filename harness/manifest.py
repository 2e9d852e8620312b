"""`RUN_DIR/run.json`: the run manifest, what a run was, in one small file others can read without the harness.

Written twice: when the run starts (``status: running``, no end, no outcome), so a
half-written run folder is recognisable, and when it ends, whatever the ending
(``status: finished`` or ``error``). Readers (the results lake, campaigns, CI
artifacts) take the scenario, the configuration, the settings, the versions and
the outcome from here instead of re-deriving them. docs/run-manifest.md is the
schema; its version and time format are testbed.manifest's (readers use them without the harness).
Must never: decide a verdict or an exit status (it records the ones the run
reached) or fail a run (a manifest that cannot be written is a log line).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from checkers.verdict import INCONCLUSIVE as STATE_INCONCLUSIVE
from checkers.verdict import PASSED, RUN_OUTCOMES, expectation_state
from harness.spec import Spec
from harness.versions import commit, software_versions
from nemesis.journal import read_journal
from nemesis.migrate import modes_over_time
from nemesis.upgrade import versions_over_time
from testbed.errors import UsageError
from testbed.files import write_json_atomic
from testbed.manifest import SCHEMA_VERSION, iso_utc
from testbed.runfolder import RunFolder
from testbed.runtime.kinds import kind

log = logging.getLogger("faultline.manifest")

CAMPAIGN_ENV = "FAULTLINE_CAMPAIGN_ID"
# Outcome of a run held to a scenario's expectation; None when the spec expects nothing.
PASS, FAIL, ERROR, INCONCLUSIVE = RUN_OUTCOMES
EXIT_HARNESS_FAILED = 3


def run_id_of(spec: Spec, run_dir: Path) -> str:
    """The run folder relative to the results root: `<scenario>/<timestamp>[/<configuration>]`."""
    parts = Path(os.path.abspath(run_dir)).parts
    depth = 3 if spec.configuration and parts[-1] == spec.configuration else 2
    return "/".join(parts[-depth:])


def settings_of(spec: Spec) -> dict[str, Any]:
    """The producer, consumer, topic and broker settings of the run, as the spec resolved them."""
    c = spec.cluster
    return {
        "producers": [{"azs": list(g.azs), "per_az": g.per_az, "rate": g.rate, "value_bytes": g.value_bytes,
                       "settings": dict(sorted(g.settings.items()))} for g in spec.producers],
        "consumers": [{"azs": list(g.azs), "per_az": g.per_az, "mode": g.mode, "group": g.group,
                       "commit": g.commit} for g in spec.consumers],
        "topic": {"name": c.topic, "partitions": c.partitions, "replication_factor": c.replication_factor,
                  "min_insync_replicas": c.min_insync_replicas,
                  "replica_assignment": [list(r) for r in c.replica_assignment] if c.replica_assignment else None},
        "broker": {"nodes": c.nodes, "metadata": c.metadata, "kraft_controllers": c.kraft_controllers,
                   "unclean_leader_election": c.unclean_leader_election,
                   "replica_lag_time_max_ms": c.replica_lag_time_max_ms,
                   "zookeeper_session_timeout_ms": c.zookeeper_session_timeout_ms, "controller": c.controller,
                   "overrides": dict(sorted(c.broker_overrides.items()))},
    }


def fault_kinds(spec: Spec) -> list[str]:
    """Every fault kind the spec's schedule can start (random chaos: every kind it draws from), sorted."""
    kinds: set[str] = set()
    for item in spec.nemesis.items:
        fault = getattr(item, "fault", None)
        if fault is not None:
            kinds.add(fault.fault)
        kinds.update(f.fault for f in getattr(item, "faults", ()))
    return sorted(kinds)


def outcome_of(verdict: dict[str, Any] | None, expectation: dict[str, Any] | None, expected: bool,
               failed: bool) -> str | None:
    """PASS / FAIL / ERROR / INCONCLUSIVE against the spec's expectation; None when the spec expects nothing."""
    if not expected:
        return None
    if failed or verdict is None:
        return ERROR
    state = expectation_state(expectation)
    return PASS if state == PASSED else INCONCLUSIVE if state == STATE_INCONCLUSIVE else FAIL


class Manifest:
    """One run's manifest: `start` writes the first version, `finish` the last."""

    def __init__(self, spec: Spec, run_dir: Path) -> None:
        self.spec = spec
        self.path = RunFolder(Path(run_dir)).manifest
        self.started = time.time()
        self._lock = threading.Lock()  # the resources sampler writes from its own thread
        self.doc: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "run_id": run_id_of(spec, run_dir),
            "campaign_id": os.environ.get(CAMPAIGN_ENV) or None,
            "scenario": spec.name,
            "configuration": spec.configuration,
            "status": "running",
            "started_at": iso_utc(self.started),
            "ended_at": None,
            "duration_s": None,
            "runtime": spec.cluster.runtime,
            "versions": software_versions(spec.cluster.kafka_version),
            "commit": commit(),
            "seed": spec.seed,
            "run_duration_s": spec.duration_s,
            "settings": settings_of(spec),
            "faults": fault_kinds(spec),
            "exit_status": None,
            "valid": None,
            "expected": None,
            "observed": None,
            "outcome": None,
        }

    def client_under_test(self, versions: dict[str, str]) -> None:
        """The producers' and consumers' client, as its venv reports it (the drain, observers and admin keep
        `versions.confluent_kafka` / `versions.librdkafka`, the harness's own)."""
        self.doc["versions"]["client_under_test"] = {k: versions[k] for k in ("confluent_kafka", "librdkafka", "python")}
        self.write()

    def write(self) -> None:
        try:
            with self._lock:
                write_json_atomic(self.path, self.doc)
        except OSError as exc:
            log.error("could not write %s: %s", self.path, exc)

    def resources(self, samples: list[dict[str, Any]], interval_s: float) -> None:
        """The harness's memory and the run's disk so far (harness.resources), written at once: a killed run keeps
        them up to its last sample."""
        with self._lock:
            self.doc["resources"] = {"interval_s": interval_s, "samples": samples}
        self.write()

    def finish(self, verdict: dict[str, Any] | None, expectation: dict[str, Any] | None,
               exit_status: int | None, failed: bool) -> None:
        ended = time.time()
        power = power_offs(self.path.parent)
        versions = node_versions(self.path.parent, self.spec.cluster.kafka_version, self.started)
        modes = node_modes(self.path.parent, self.started)
        on_hosts = hosts_client(self.path.parent, self.spec.client)
        with self._lock:
            self._finished(ended, verdict, expectation, exit_status, failed)
            if on_hosts:
                self.doc["versions"]["client_under_test"] = on_hosts
            if power:
                self.doc["power_offs"] = power
            if versions:
                self.doc["node_versions"] = versions
            if modes:
                self.doc["node_modes"] = modes
        self.write()

    def _finished(self, ended: float, verdict: dict[str, Any] | None, expectation: dict[str, Any] | None,
                  exit_status: int | None, failed: bool) -> None:
        self.doc.update({
            "status": "error" if failed else "finished",
            "ended_at": iso_utc(ended),
            "duration_s": round(ended - self.started, 3),
            "exit_status": EXIT_HARNESS_FAILED if failed and exit_status is None else exit_status,
            "valid": None if verdict is None else verdict.get("valid"),
            "expected": None if expectation is None else expectation.get("expected"),
            "observed": None if expectation is None else expectation.get("observed"),
            "outcome": outcome_of(verdict, expectation, not self.spec.expect.empty, failed),
        })


def power_offs(run_dir: Path) -> dict[str, str] | None:
    """What a power-off was on each node host, where the runtime's hosts differ (ssh: `unsyncfs`, `command` or
    `processes`, from state.json); None elsewhere or when unreadable."""
    try:
        state = json.loads(RunFolder(run_dir).state.read_text(encoding="utf-8"))
        return kind(state["runtime"]).power_offs(state)
    except (OSError, ValueError, KeyError, TypeError, UsageError):
        return None


def hosts_client(run_dir: Path, version: str | None) -> dict[str, Any] | None:
    """The client under test `version` as the venvs its client hosts made report it (a runtime whose hosts make
    their own, ssh: state.json's `client_venvs`): the one report, with `by_host` when hosts differ (their Pythons);
    None elsewhere, without a client under test, or when unreadable."""
    try:
        state = json.loads(RunFolder(run_dir).state.read_text(encoding="utf-8"))
        reports: dict[str, dict[str, str]] = (state.get("client_venvs") or {}).get(version) or {}
    except (OSError, ValueError, AttributeError):
        return None
    if not reports or version is None:
        return None
    first = reports[min(reports)]
    same = all(r == first for r in reports.values())
    return {k: first[k] for k in ("confluent_kafka", "librdkafka", "python")} | ({} if same else {"by_host": reports})


def node_versions(run_dir: Path, version: str, started: float) -> dict[str, list[dict[str, Any]]] | None:
    """After a rolling upgrade: each rolled node's broker version from each moment on (`from` an ISO instant), read
    from the nemesis journal (`nemesis.upgrade.versions_over_time`); None without one or when unreadable."""
    try:
        rows = read_journal(RunFolder(run_dir).nemesis_journal)
    except (OSError, ValueError):
        return None
    over_time = versions_over_time(rows, version, int(started * 1e9))
    return {node: [{"from": iso_utc(v["from_ns"] / 1e9), "version": v["version"],
                    "inter_broker_protocol": v["inter_broker_protocol"]} for v in steps]
            for node, steps in over_time.items()} or None


def node_modes(run_dir: Path, started: float) -> dict[str, list[dict[str, Any]]] | None:
    """After a ZooKeeper to KRaft migration: what each node's broker and controller ran from each moment on (`from`
    an ISO instant; broker `zookeeper`, `migrating` or `kraft`, controller null, `migrating` or `kraft`), read from
    the nemesis journal (`nemesis.migrate.modes_over_time`); None without one or when unreadable."""
    try:
        rows = read_journal(RunFolder(run_dir).nemesis_journal)
    except (OSError, ValueError):
        return None
    over_time = modes_over_time(rows, int(started * 1e9))
    return {node: [{"from": iso_utc(m["from_ns"] / 1e9), "broker": m["broker"], "controller": m["controller"]}
                   for m in steps] for node, steps in over_time.items()} or None


def finish_recovered(spec: Spec, run_dir: Path, verdict: dict[str, Any], expectation: dict[str, Any] | None,
                     exit_status: int) -> None:
    """After `recover`: the manifest the killed run left (`running`) finished, its start kept."""
    manifest = Manifest(spec, run_dir)
    with contextlib.suppress(OSError, ValueError):
        previous = json.loads(manifest.path.read_text(encoding="utf-8"))
        if isinstance(previous, dict) and isinstance(previous.get("started_at"), str):
            manifest.doc.update({k: previous[k] for k in ("started_at", "campaign_id", "run_id", "resources")
                                 if k in previous})  # the killed harness's resources series, to its last sample
            started = dt.datetime.fromisoformat(previous["started_at"].replace("Z", "+00:00"))
            manifest.started = started.timestamp()
    manifest.doc["recovered"] = True
    manifest.finish(verdict, expectation, exit_status, failed=False)


@contextlib.contextmanager
def run_manifest(spec: Spec, run_dir: Path) -> Iterator[Manifest]:
    """Write the starting manifest; on leaving, the final one (an exception: status error, exit status 3)."""
    manifest = Manifest(spec, run_dir)
    manifest.write()
    try:
        yield manifest
    except BaseException:
        manifest.finish(None, None, None, failed=True)
        raise
