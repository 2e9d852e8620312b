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
import json
import logging
import time
from pathlib import Path
from typing import Any

import yaml

from harness.progress import Progress
from harness.run import finish
from harness.runlog import run_log
from harness.spec import parse_spec
from harness.verdicts import RunOutcome, judge
from harness.workloadset import Workload, WorkloadSet
from testbed.addressing import Host
from testbed.errors import HarnessError, SpecError
from testbed.lifecycle import cluster_from_state, hosts_exist, tear_down
from testbed.state import RunState, claim_active, read_active

log = logging.getLogger("faultline.recover")


def load_run_spec(run_dir: Path) -> Any:
    path = run_dir / "spec.yaml"
    try:
        raw = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise SpecError(f"{path}: cannot read the run's spec: {exc}") from exc
    configuration = raw.pop("configuration", None)
    if configuration is not None:
        raw["configurations"] = {configuration: {}}
    return parse_spec(raw, configuration)


def adopt_workloads(state: RunState, workloads: WorkloadSet, cluster_hosts: dict[str, Host]) -> None:
    """Take over the dead harness's client processes from the state file."""
    for name, info in state.data.get("processes", {}).items():
        if name.startswith("workload/"):
            short = name.split("/", 1)[1]
            role = short.split("-", 1)[0]
            workloads.running[short] = Workload(short, role, cluster_hosts[info["host"]], {}, int(info["pid"]))


def recover(run_dir: Path, engine: str | None = None) -> RunOutcome:
    if not (run_dir / "state.json").exists():
        raise HarnessError(f"{run_dir}: not a run folder (no state.json)")
    spec = load_run_spec(run_dir)
    with run_log(run_dir) as log_handler:
        log.info("recover %s in %s", spec.run_name, run_dir)
        return _recover(spec, run_dir, engine, log_handler)


def _recover(spec: Any, run_dir: Path, engine: str | None, log_handler: logging.Handler) -> RunOutcome:
    state = RunState.load(run_dir)
    journal_dir = run_dir / "journal"
    progress = Progress(f"recover {spec.run_name}", journal_dir, log=log_handler)
    notes: list[str] = []
    if hosts_exist(state.prefix):
        cluster, runtime = cluster_from_state(run_dir)
        if read_active() is None:
            claim_active(run_dir, state.prefix)
        with contextlib.ExitStack() as undo:
            undo.callback(tear_down, run_dir)
            workloads = WorkloadSet(runtime, run_dir)
            adopt_workloads(state, workloads, {h.name: h for h in cluster.plan.hosts})
            progress.phase("healing")
            heal_everything(cluster, runtime, journal_dir)
            notes += finish(spec, cluster, runtime, workloads, progress, drain_suffix="-recover")
    else:
        notes.append("the run's cluster was already gone: no final drain after the harness died")
    progress.phase("checking")
    return judge(spec, run_dir, journal_dir, notes, engine)


def heal_everything(cluster: Any, runtime: Any, journal_dir: Path) -> None:
    """Clear every host's fault rules and resume every paused process; note it in the nemesis journal."""
    for host in cluster.plan.hosts:
        runtime.clear_firewall(host)
    for node in cluster.nodes:
        for pid in cluster.pids(node).values():
            if pid is not None:
                runtime.resume(pid)
    if (journal_dir / "nemesis.jsonl").exists():
        with open(journal_dir / "nemesis.jsonl", "a") as fh:
            fh.write(json.dumps({"time_ns": time.time_ns(), "type": "info", "fault": "heal-all", "targets": "[]",
                                 "detail": "recover: healed every fault the dead harness left"}) + "\n")
