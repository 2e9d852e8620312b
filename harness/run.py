"""One run of one spec configuration: provision, workloads, faults, heal, settle, drain, check.

Persist early: the resolved spec is written before anything starts, journals
grow as things happen, the history tables are built before the checker runs,
and the verdict comes last. Teardown (faults healed, processes stopped, hosts
removed) runs on every exit path through one ExitStack.

A run is two halves: `run_story` (provision, the story, heal, settle, drain,
teardown: the journals complete) on the caller's thread, and `Judgement.judge`
(history tables, replica dumps, checker, verdict, reports, the final
manifest), which needs no cluster and may run on the judging worker
(harness.pipeline) while the next run's story plays. `execute_run` does both
in turn. A run never judged (the harness stopped first) keeps its journals,
without tables or verdict.
Must never: leave run.json saying `running` once the run has ended either way.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from harness.judge import RunOutcome, judge
from harness.manifest import Manifest, run_manifest
from harness.progress import Progress
from harness.resources import ResourceMonitor
from harness.runlog import run_log
from harness.spec import Spec
from harness.spec_clients import client_upgrades
from harness.workloadset import WorkloadSet, drain_workloads, member_groups, plan_workloads
from nemesis.nemesis import Nemesis
from testbed.dist.clients import ClientEnv, made_on_hosts
from testbed.errors import ClusterError, HarnessError, RuntimeFailure
from testbed.kafka.cluster import KafkaCluster
from testbed.kafka.replicas import SnapshotBudget
from testbed.lifecycle import provision
from testbed.machine import REAL, Machine
from testbed.runfolder import RunFolder
from testbed.runtime.base import Firewalled, new_prefix
from testbed.runtime.kinds import kind

log = logging.getLogger("faultline.run")
STOP_GRACE_S = 15.0
JOURNAL_SYNC_S = 4.0
# What a run waits for after healing; a verdict that is unknown because it never came names it
# ("timed out after N s waiting for " + SETTLING + ": " what was still missing, testbed.kafka.settle's words).
SETTLING = "the cluster to settle (one leader per partition agreed by every broker, full ISRs)"


def write_spec(spec: Spec, folder: RunFolder) -> None:
    resolved = dict(spec.raw)
    resolved.pop("configurations", None)
    resolved["configuration"] = spec.configuration
    folder.spec.write_text(yaml.safe_dump(resolved, sort_keys=True))


def producer_stop_timeout(spec: Spec) -> float:
    """Long enough for every in-flight send to get its delivery report (and a transactional producer's last
    transaction its end, which may take its transaction timeout after its sends' delivery timeout)."""
    longest = max(int(g.settings.get("delivery.timeout.ms", g.settings.get("message.timeout.ms", 30000)))
                  + (g.transaction_timeout_ms if g.transactional else 0) for g in spec.producers)
    return longest / 1000 + STOP_GRACE_S


def transaction_timeout_s(spec: Spec) -> float:
    """The longest transaction.timeout.ms of the run's transactional producers and transformers, in seconds (0: none)."""
    timeouts = [g.transaction_timeout_ms for g in spec.producers if g.transactional]
    timeouts += [t.transaction_timeout_ms for t in spec.transformers if t.transactional]
    return max(timeouts, default=0) / 1000


def execute_run(spec: Spec, run_dir: Path, engine: str | None = None, keep_data: bool = False,
                machine: Machine = REAL) -> RunOutcome:
    """Run `spec` into `run_dir` on `machine`; return the verdict's exit status (0 valid, 1 invalid, 2 unknown).

    `keep_data`: keep the nodes' data folders (pruned once the replicas are dumped, by default)."""
    return run_story(spec, run_dir, engine, keep_data, machine=machine).judge()


@dataclass
class Judgement:
    """A run whose story is over (cluster gone, journals complete) and whose verdict is still to come."""

    spec: Spec
    folder: RunFolder
    notes: list[str]
    engine: str | None
    keep_data: bool
    manifest: Manifest
    machine: Machine = REAL
    resources: ResourceMonitor | None = None  # sampling since the story began; stopped once judged

    def judge(self) -> RunOutcome:
        """History tables, replica dumps, checker, verdict, reports and the final run.json; its log lines go to this run's
        harness.log from whichever thread judges it. An exception: run.json says error, and it is raised."""
        with run_log(self.folder, this_thread_only=True):
            try:
                outcome = judge(self.spec, self.folder, self.notes, self.engine, self.keep_data, self.machine)
            except BaseException as exc:
                log.error("judging %s failed: %s", self.folder.root, exc)
                self._stop_resources()
                self.manifest.finish(None, None, None, failed=True)
                raise
            self._stop_resources()
            self.manifest.finish(outcome.verdict, outcome.expectation, outcome.status, failed=False)
            return outcome

    def abandon(self, why: str) -> None:
        """Never judged (the harness stopped first): said in its harness.log, run.json says error."""
        with run_log(self.folder, this_thread_only=True):
            log.error("%s was not judged: %s", self.folder.root, why)
        self._stop_resources()
        self.manifest.finish(None, None, None, failed=True)

    def _stop_resources(self) -> None:
        if self.resources is not None:
            self.resources.stop()


def run_story(spec: Spec, run_dir: Path, engine: str | None = None, keep_data: bool = False,
              on_running: Callable[[RunFolder], None] | None = None, machine: Machine = REAL) -> Judgement:
    """Provision on `machine`, run the story, heal, settle, drain, tear down; the tables and the judging are left.

    `on_running(folder)` is called once the cluster is up and the story has started (the judging worker may start)."""
    prefix = None
    if not spec.cluster.provision:  # a cluster of the user's: the run's own topic, named after the run
        prefix = new_prefix()
        spec = own_topic(spec, prefix)
    folder = RunFolder(run_dir).make()
    write_spec(spec, folder)
    with run_log(folder) as log_handler, run_manifest(spec, run_dir) as manifest:
        log.info("run %s into %s", spec.run_name, run_dir)
        progress = Progress(spec.run_name, folder.journal_dir, log=log_handler)
        resources = ResourceMonitor(folder, lambda samples: manifest.resources(samples, resources.interval_s),
                                    phase=lambda: progress.phase_name).start()
        try:
            # On a runtime whose client hosts make the venvs (ssh), they do at bring-up and state.json has their reports.
            ensure = made_on_hosts if kind(spec.cluster.runtime).client_venvs_on_hosts else machine.ensure_client
            client = ensure(spec.client) if spec.client is not None else None
            if client is not None and client.versions:  # the client under test, as its venv reports itself
                manifest.client_under_test(client.versions)
                log.info("clients under test: confluent-kafka %s / librdkafka %s (%s)",
                         client.versions["confluent_kafka"], client.versions["librdkafka"], " ".join(client.python))
            upgrades = {v: ensure(v) for v in client_upgrades(spec.nemesis)}  # upgrade-client's venvs
            for version, env in upgrades.items():
                log.info("upgrade-client: confluent-kafka %s / librdkafka %s ready", version,
                         env.versions.get("librdkafka", "(its venv made on each client host)"))
            notes = _execute(spec, folder, progress, on_running, machine, client, prefix, upgrades)
        except BaseException:
            resources.stop()  # run.json's last version (status error) keeps the series
            raise
    return Judgement(spec, folder, notes, engine, keep_data, manifest, machine, resources)


def _execute(spec: Spec, folder: RunFolder, progress: Progress, on_running: Callable[[RunFolder], None] | None,
             machine: Machine, client: ClientEnv | None = None, prefix: str | None = None,
             upgrades: dict[str, ClientEnv] | None = None) -> list[str]:
    progress.phase("provisioning")
    notes: list[str] = []
    with provision(spec.cluster, folder.root, machine=machine, prefix=prefix) as (cluster, runtime):
        workloads = WorkloadSet(runtime, folder, cluster, client, upgrades)
        with contextlib.ExitStack() as undo:
            undo.callback(_kill_workloads, workloads)
            nemesis = make_nemesis(spec, cluster, workloads) if not spec.nemesis.empty else None
            if nemesis is not None:
                undo.callback(nemesis.close)
                undo.callback(nemesis.heal_all)
            workloads.start(plan_workloads(spec, cluster))
            progress.phase("running", spec.duration_s)
            if on_running is not None:
                on_running(folder)
            _run_phase(spec, workloads, nemesis, progress)
            progress.phase("healing")
            if nemesis is not None:
                nemesis.heal_all()
            notes += finish(spec, cluster, workloads, progress)
    progress.phase("checking")
    return notes


def own_topic(spec: Spec, prefix: str) -> Spec:
    """`spec` with its topic named after the run (`faultline-<prefix>`): on a cluster of the user's, the one topic
    the run makes and deletes."""
    topic = f"faultline-{prefix}"
    raw = {**spec.raw, "cluster": {**(spec.raw.get("cluster") or {}), "topic": topic}}
    return dataclasses.replace(spec, cluster=dataclasses.replace(spec.cluster, topic=topic), raw=raw)


def make_nemesis(spec: Spec, cluster: KafkaCluster, workloads: WorkloadSet | None = None) -> Nemesis:
    """The run's nemesis, journaling into the run folder, copying the replicas' segments before each undo within the
    run's budget for such copies (not on a cluster of the user's: nothing of the run is written on its hosts)."""
    runtime = cluster.runtime
    if not isinstance(runtime, Firewalled):
        raise RuntimeFailure(f"the {runtime.kind} runtime has no firewall per host: no nemesis can run on it")
    snapshot = SnapshotBudget(cluster) if spec.cluster.provision else None
    return Nemesis(cluster, runtime, cluster.folder.nemesis_journal, spec.seed, snapshot=snapshot,
                   workloads=workloads)


def _run_phase(spec: Spec, workloads: WorkloadSet, nemesis: Nemesis | None, progress: Progress) -> None:
    stop = threading.Event()
    schedule_run = nemesis.run(spec.nemesis, time.monotonic(), stop) if nemesis is not None else None
    deadline = time.monotonic() + spec.duration_s
    synced = time.monotonic()
    try:
        while time.monotonic() < deadline:
            workloads.check_alive()
            if time.monotonic() - synced >= JOURNAL_SYNC_S:  # hosts that do not share our disk: fresh rates
                workloads.collect(journals_only=True)
                synced = time.monotonic()
            progress.tick(nemesis.active_names() if nemesis is not None else [])
            time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))
    finally:
        stop.set()
        if schedule_run is not None:
            schedule_run.join()  # re-raises a fault that failed


def finish(spec: Spec, cluster: KafkaCluster, workloads: WorkloadSet, progress: Progress,
           drain_suffix: str = "") -> list[str]:
    """The end of a run after healing: settle, stop clients, final drain. Returns reasons for 'unknown'."""
    notes: list[str] = []
    cluster.power_on_all()
    progress.phase("settling")
    try:
        cluster.wait_settled(SETTLING, spec.settle_timeout_s)
    except ClusterError as exc:
        notes.append(str(exc))
    progress.phase("stopping producers")
    workloads.check_alive()
    # Consumers stop with the producers, not after them: what they read is the run's record of reads, and the
    # drains that follow read every partition to its end whatever the consumers had reached.
    stopping = time.monotonic()
    workloads.stop_roles({"producer": producer_stop_timeout(spec), "consumer": STOP_GRACE_S,
                          # a transformer ends its batch (a commit may take its transaction timeout) and leaves its group
                          "transformer": transaction_timeout_s(spec) + 2 * STOP_GRACE_S})
    # Contract v2: the drain starts once every transaction has ended or its transaction timeout has passed. No
    # producer begins one after the stop was asked for, so its timeout from that moment covers every one (a
    # transaction whose outcome is unknown, or whose producer died, is then aborted or committed by its coordinator).
    time.sleep(max(0.0, stopping + transaction_timeout_s(spec) - time.monotonic()))
    progress.phase("draining")
    codes = workloads.run_to_completion(drain_workloads(cluster, spec.drain_timeout_s, drain_suffix,
                                                        both_views=spec.transactional, groups=member_groups(spec)),
                                        spec.drain_timeout_s + STOP_GRACE_S)
    for name, code in sorted(codes.items()):
        if code != 0:
            notes.append(f"{name} did not read every partition to its high watermark within "
                         f"{spec.drain_timeout_s:.0f} s (exit {code})")
    workloads.stop("observer", STOP_GRACE_S)
    workloads.collect()
    return notes


def _kill_workloads(workloads: WorkloadSet) -> None:
    for role in ("producer", "transformer", "consumer", "drain", "observer"):
        with contextlib.suppress(HarnessError):
            workloads.stop(role, 5.0)
    with contextlib.suppress(HarnessError):
        workloads.collect()
