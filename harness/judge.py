"""Judging a run: from journals to a verdict (build the history tables, run the checker, hold the result to
the spec). The verdict document itself is `checkers/verdict.py`'s; how a report reads it, `report/verdict_view.py`.

The history is written before the checker runs (a crash in analysis never
loses it). A run whose end phases were incomplete (the cluster never settled,
a drain did not finish) can never be valid: its verdict is 'unknown' with the
reasons, whatever the checker found.
Must never: write the verdict before the history tables, or let a report that fails to render hide the verdict.
"""

from __future__ import annotations

import logging
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checkers.facts import observed_facts
from checkers.verdict import exit_status, write_verdict
from harness.evidence import gather
from harness.expectation import compare
from harness.spec import Spec
from testbed.errors import HarnessError
from testbed.files import write_json_atomic
from testbed.handover import prune_node_data
from testbed.machine import REAL, Machine
from testbed.runfolder import RunFolder

log = logging.getLogger("faultline.verdicts")


@dataclass
class RunOutcome:
    run_dir: Path
    status: int
    verdict: dict[str, Any]
    expectation: dict[str, Any] | None = None


def build_tables(journal_dir: Path, history_dir: Path) -> dict[str, Any]:
    from workloads.history import build_history

    return build_history(journal_dir, history_dir)


def check_replicas(folder: RunFolder, topic: str, kafka_version: str, machine: Machine = REAL) -> bool:
    """`replicas.json`: every replica on disk, compared with the others and with the final log.

    Forensics beside the verdict, not part of it: a dump that fails is said in the
    file and the log, and the run's verdict stands on the history alone. Whether the replicas were dumped.
    """
    from testbed.kafka.replicas import final_log

    started = time.monotonic()
    try:
        report = machine.dump_replicas(folder, topic, kafka_version, final_log(folder.history_dir, topic))
    except (OSError, RuntimeError, subprocess.SubprocessError, ValueError) as exc:
        log.error("could not dump the replicas of %s: %s", folder.root, exc)
        write_json_atomic(folder.replicas, {"topic": topic, "error": str(exc)})
        return False
    records = sum(r["records"] for p in report["partitions"] for r in p["replicas"].values())
    log.info("replicas of %s dumped and compared in %.1f s (%d records on disk): %s", topic,
             time.monotonic() - started, records, "they agree" if report["agree"] else "they DIFFER")
    if not report["agree"]:
        log.warning("replicas of %s differ on disk: see %s", topic, folder.replicas)
    if report.get("final_matches") is False:
        log.warning("the final log of %s differs from what the replicas hold: see %s", topic, folder.replicas)
    return True


def run_checker(history_dir: Path, engine: str) -> dict[str, Any]:
    import checkers

    try:
        return dict(checkers.check(history_dir, engine=engine))
    except Exception as exc:  # the checker's own input errors: the harness wrote a bad history
        raise HarnessError(f"checker failed on {history_dir}: {exc}") from exc


def availability_rows(history_dir: Path) -> list[dict[str, Any]]:
    """Each fault's availability per AZ (checkers.availability); a failure is a log line and no rows."""
    from checkers.availability import availability_of

    try:
        return availability_of(history_dir)
    except Exception as exc:  # noqa: BLE001 - forensics beside the verdict, never a reason to lose it
        log.error("could not compute availability from %s: %s", history_dir, exc)
        return []


def judge(spec: Spec, folder: RunFolder, notes: list[str], engine: str | None, keep_data: bool = False,
          machine: Machine = REAL) -> RunOutcome:
    """Build the history tables, then judge them (`judge_history`)."""
    started = time.monotonic()
    build_tables(folder.journal_dir, folder.history_dir)
    log.info("history tables built in %.1f s", time.monotonic() - started)
    return judge_history(spec, folder, notes, engine, keep_data, machine)


def judge_history(spec: Spec, folder: RunFolder, notes: list[str], engine: str | None,
                  keep_data: bool = False, machine: Machine = REAL) -> RunOutcome:
    """The verdict of a run whose history tables exist (written with its reports); the nodes' data folders
    pruned once the replicas are dumped, unless `keep_data` (or the dump failed: then the segments are the
    only evidence). Needs no cluster: harness.pipeline runs it while the next run's story plays."""
    run_dir, history_dir = folder.root, folder.history_dir
    started = time.monotonic()
    log.info("judging %s: replica dumps, checker, reports", run_dir)
    for extra in spec.cluster.extra_topics:  # each extra topic's dump kept as replicas-<topic>.json, the topic's last
        if check_replicas(folder, extra, spec.cluster.kafka_version, machine):
            folder.replicas.replace(folder.replicas.with_name(f"replicas-{extra}.json"))
    if check_replicas(folder, spec.cluster.topic, spec.cluster.kafka_version, machine) and not keep_data:
        prune_node_data(folder)
    replicas_at = time.monotonic()
    verdict = run_checker(history_dir, engine or spec.checker)
    checked_at = time.monotonic()
    if notes:
        verdict["valid"] = "unknown"
        verdict["reason"] = "; ".join(notes)
    verdict["availability"] = availability_rows(history_dir)
    expectation = compare(spec.expect, verdict, observed_facts(history_dir), gather(spec.expect, folder))
    if expectation is not None:
        verdict["expectation"] = expectation
    write_verdict(verdict, run_dir)
    write_reports(run_dir)
    log.info("judged in %.1f s: replica dumps %.1f s, checker (%s) %.1f s, reports %.1f s",
             time.monotonic() - started, replicas_at - started, verdict.get("engine"),
             checked_at - replicas_at, time.monotonic() - checked_at)
    return RunOutcome(run_dir, exit_status(verdict), verdict, expectation)


def write_reports(run_dir: Path) -> None:
    """report.html and junit.xml beside the verdict; a report failure never hides the verdict."""
    try:
        from report import render_junit, render_report

        render_junit(run_dir)
        render_report(run_dir)
    except Exception as exc:  # noqa: BLE001 - the verdict is already persisted; say what went wrong
        log.error("could not render report.html for %s: %s", run_dir, exc)
