"""`python -m harness recover RUN_DIR`: finish a run whose harness was killed, and judge it.

If the run's hosts are still on the machine, recover does what the dead
harness would have done next: stop its clients gracefully (so they journal
every outcome they know), heal every fault, wait for the cluster to settle,
drain the final log from each AZ, and tear everything down. Then it builds
the tables from every journal and runs the checker. If the hosts are gone,
the verdict covers the journals alone (and is unknown: there is no final log).

A recover that fails before its drain is done (a drain that cannot start, a
client that will not stop) leaves the cluster as it found it, up, so that a
second `recover` can finish the job: tearing it down would leave only an
unknown verdict. Each attempt's drains have names of their own. Must never:
tear down a cluster whose final log it has not read, or judge a run twice
into different folders.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

import yaml

from harness.judge import RunOutcome, judge
from harness.manifest import finish_recovered
from harness.progress import Progress
from harness.run import finish, make_nemesis
from harness.runlog import run_log
from harness.spec import Spec, parse_spec
from harness.workloadset import PROCESS_PREFIX, WorkloadSet
from testbed.errors import HarnessError, SpecError
from testbed.handover import hand_over
from testbed.kafka.cluster import KafkaCluster
from testbed.lifecycle import cluster_from_state, tear_down
from testbed.machine import REAL, Machine
from testbed.runfolder import RunFolder
from testbed.runtime.base import Runtime
from testbed.state import RunState, claim_active, read_active

log = logging.getLogger("faultline.recover")


def load_run_spec(folder: RunFolder) -> Spec:
    try:
        raw = yaml.safe_load(folder.spec.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise SpecError(f"{folder.spec}: cannot read the run's spec: {exc}") from exc
    configuration = raw.pop("configuration", None)
    if configuration is not None:
        raw["configurations"] = {configuration: {}}
    return parse_spec(raw, configuration)


def recover(run_dir: Path, engine: str | None = None, keep_data: bool = False, machine: Machine = REAL) -> RunOutcome:
    """Finish and judge the run in `run_dir` (an absolute path: the CLI resolves what a user types) on `machine`."""
    folder = RunFolder(run_dir.resolve())
    if not folder.state.exists():
        raise HarnessError(f"{run_dir}: not a run folder (no state.json)")
    spec = load_run_spec(folder)
    try:
        with run_log(folder) as log_handler:
            log.info("recover %s in %s", spec.run_name, folder.root)
            return _recover(spec, folder, engine, log_handler, keep_data, machine)
    finally:
        hand_over(folder.root)


def drain_suffix(folder: RunFolder, runtime: Runtime) -> str:
    """`-recover`, or `-recover2`, `-recover3`... when an earlier recover's drains already used it."""
    used = {name.removeprefix(PROCESS_PREFIX) for name in runtime.process_names()}
    used |= {p.stem for p in folder.journal_dir.glob("drain-*.jsonl")}
    attempt = 1
    while any(name.endswith(f"-recover{attempt if attempt > 1 else ''}") for name in used):
        attempt += 1
    return f"-recover{attempt if attempt > 1 else ''}"


def _recover(spec: Spec, folder: RunFolder, engine: str | None, log_handler: logging.Handler,
             keep_data: bool, machine: Machine) -> RunOutcome:
    progress = Progress(f"recover {spec.run_name}", folder.journal_dir, log=log_handler)
    notes: list[str] = []
    cluster, runtime = cluster_from_state(folder.root, machine)
    if runtime.exists():
        if read_active(machine.active_file) is None:
            claim_active(folder.root, RunState.load(folder.root).prefix, machine.active_file)
        workloads = WorkloadSet(runtime, folder, cluster)
        with contextlib.ExitStack() as undo:
            undo.callback(_left_up, cluster, folder, workloads)  # popped once the final log is read
            workloads.adopt()
            progress.phase("healing")
            # The nemesis's own heal: every host's rules cleared, paused processes resumed, stopped ones
            # started again, journaled as a heal-all row like any other (it knows no active fault: the
            # dead harness's journal says which were).
            with contextlib.closing(make_nemesis(spec, cluster)) as nemesis:
                nemesis.heal_all(by="recover")
                closed = nemesis.close_orphans(by="recover")
                if closed:
                    log.info("recover: the dead harness's faults %s healed", ", ".join(closed))
                notes += finish(spec, cluster, workloads, progress, drain_suffix=drain_suffix(folder, runtime))
            undo.pop_all()
        tear_down(cluster, machine)
    else:
        notes.append("the run's cluster was already gone: no final drain after the harness died")
    progress.phase("checking")
    outcome = judge(spec, folder, notes, engine, keep_data, machine)
    finish_recovered(spec, folder.root, outcome.verdict, outcome.expectation, outcome.status)
    return outcome


def _left_up(cluster: KafkaCluster, folder: RunFolder, workloads: WorkloadSet) -> None:
    """A recover that failed: its own drains stopped, what the hosts hold fetched, the cluster left up."""
    with contextlib.suppress(HarnessError):
        workloads.stop("drain", 5.0)
    with contextlib.suppress(HarnessError):
        workloads.collect()
    log.error("recover did not finish: the run's cluster %s is left up, as the dead harness left it, healed; "
              "run 'python -m harness recover %s' again (or 'python -m harness clean' to give up)",
              cluster.runtime.prefix, folder.root)
