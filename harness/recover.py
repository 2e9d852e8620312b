"""`python -m harness recover RUN_DIR`: finish a run whose harness was killed, and judge it.

If the run's hosts are still on the machine, recover does what the dead
harness would have done next: stop its clients gracefully (so they journal
every outcome they know), heal every fault, wait for the cluster to settle,
drain the final log from each AZ, and tear everything down. Then it builds
the tables from every journal and runs the checker. If the hosts are gone,
the verdict covers the journals alone (and is unknown: there is no final log).
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

import yaml

from harness.manifest import finish_recovered
from harness.progress import Progress
from harness.run import finish, make_nemesis
from harness.runlog import run_log
from harness.spec import Spec, parse_spec
from harness.verdicts import RunOutcome, judge
from harness.workloadset import WorkloadSet
from testbed.errors import HarnessError, SpecError
from testbed.lifecycle import cluster_from_state, tear_down
from testbed.runfolder import RunFolder
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


def recover(run_dir: Path, engine: str | None = None) -> RunOutcome:
    folder = RunFolder(run_dir)
    if not folder.state.exists():
        raise HarnessError(f"{run_dir}: not a run folder (no state.json)")
    spec = load_run_spec(folder)
    with run_log(folder) as log_handler:
        log.info("recover %s in %s", spec.run_name, run_dir)
        return _recover(spec, folder, engine, log_handler)


def _recover(spec: Spec, folder: RunFolder, engine: str | None, log_handler: logging.Handler) -> RunOutcome:
    progress = Progress(f"recover {spec.run_name}", folder.journal_dir, log=log_handler)
    notes: list[str] = []
    cluster, runtime = cluster_from_state(folder.root)
    if runtime.exists():
        if read_active() is None:
            claim_active(folder.root, RunState.load(folder.root).prefix)
        with contextlib.ExitStack() as undo:
            undo.callback(tear_down, cluster)
            workloads = WorkloadSet(runtime, folder, cluster)
            workloads.adopt()
            progress.phase("healing")
            # The nemesis's own heal: every host's rules cleared, paused processes resumed, stopped ones
            # started again, journaled as a heal-all row like any other (it knows no active fault: the
            # dead harness's journal says which were).
            nemesis = make_nemesis(spec, cluster)
            undo.callback(nemesis.close)
            nemesis.heal_all(by="recover")
            closed = nemesis.close_orphans(by="recover")
            if closed:
                log.info("recover: the dead harness's faults %s healed", ", ".join(closed))
            notes += finish(spec, cluster, workloads, progress, drain_suffix="-recover")
    else:
        notes.append("the run's cluster was already gone: no final drain after the harness died")
    progress.phase("checking")
    outcome = judge(spec, folder, notes, engine)
    finish_recovered(spec, folder.root, outcome.verdict, outcome.expectation, outcome.status)
    return outcome
