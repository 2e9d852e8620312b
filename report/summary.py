"""The few lines `python -m harness show RUN_DIR` prints: verdict, counts, faults, split brains, where the report is."""

from __future__ import annotations

from pathlib import Path

from checkers.facts import split_brains
from report import fmt
from report.faults import fault_windows
from report.loaded_run import Run, load_run
from report.replicas import read_replicas
from report.verdict_view import read_expectation, read_outcome, verdict_line
from testbed.runfolder import RunFolder

MAX_FAULTS = 6


def summary(run_dir: str | Path) -> str:
    """A short text verdict summary of the run in ``run_dir`` (ReportError if it is not a folder)."""
    run = load_run(run_dir, tables=("writes", "reads", "nemesis", "observations"))
    outcome = read_outcome(run.verdict)
    expectation = read_expectation(run.verdict)
    name = f"{run.scenario} [{run.configuration}]" if run.configuration else run.scenario
    lines = [f"{name} / {run.run_id}: {verdict_line(run.verdict)}"]
    if expectation is not None:
        lines.append(f"  expected:   {expectation.expected}")
        lines.append(f"  observed:   {expectation.observed}")
        lines += [f"  mismatch:   {m}" for m in expectation.mismatches]
        lines += [f"  missing:    {m}" for m in expectation.inconclusive]
    if outcome.errors:
        lines.append(f"  errors:     {outcome.errors_line}")
    if outcome.information:
        lines.append(f"  allowed:    {outcome.information_line}")
    lines += _volume(outcome.stats)
    lines += _faults(run)
    lines += _splits(run)
    lines += _replicas(run)
    lines += [f"  problem:    {p}" for p in run.problems]
    report = RunFolder(run.run_dir).report
    lines.append(f"  report:     {report}" if report.is_file() else
                 f"  report:     not written yet (python -m harness report {run.run_dir})")
    return "\n".join(lines)


def _replicas(run: Run) -> list[str]:
    view = read_replicas(run.run_dir, run.problems)
    if view is None:
        return []
    if view.state == "error":
        return [f"  replicas:   not dumped ({view.error})"]
    gone = [f"  truncated:  {r['node']} held {r['gone']} records of partition {r['partition']} before undoing "
            f"{r['label']} that no replica holds at the end (e.g. {r['examples']})"
            for r in view.snapshots if isinstance(r["gone"], int) and r["gone"]]
    if view.state == "agree":
        final = ", and the final log read exactly them" if view.final_checked else ""
        return [f"  replicas:   every replica on disk holds the same records{final}"] + gone
    final = " or the final log" if view.final_checked else ""
    return [f"  replicas:   the replicas on disk{final} differ:"] + [
        f"              {d}" for d in view.differences[:MAX_FAULTS]] + gone


def _volume(stats: dict[str, object]) -> list[str]:
    if "writes" not in stats:
        return []
    line = f"  writes:     {fmt.count(stats['writes'])}"
    parts = [f"{label} {fmt.count(stats[key])}" for key, label in (("ok", "acked"), ("fail", "failed"),
                                                                     ("info", "unknown")) if key in stats]
    if parts:
        line += f" ({', '.join(parts)})"
    if "final_reads" in stats:
        line += f"; final log {fmt.count(stats['final_reads'])} records"
    return [line]


def _faults(run: Run) -> list[str]:
    windows = fault_windows(run.table("nemesis"))
    span = run.span_ns()
    if not windows or span is None:
        return []
    shown = [f"{w.label} at {fmt.rel(w.start_ns, span[0])} for "
             f"{fmt.duration(w.stop_ns - w.start_ns) if w.stop_ns is not None else 'the rest of the run'}"
             for w in windows[:MAX_FAULTS]]
    if len(windows) > MAX_FAULTS:
        shown.append(f"and {len(windows) - MAX_FAULTS} more")
    return [f"  faults:     {shown[0]}"] + [f"              {s}" for s in shown[1:]]


def _splits(run: Run) -> list[str]:
    observations = run.table("observations")
    span = run.span_ns()
    if not len(observations) or span is None:
        return []
    brains = split_brains(observations)
    found = [(f"{topic}/{partition}", "leaders", d) for (topic, partition), splits in brains.leaders.items()
             for d in splits]
    found += [("cluster", "controllers", d) for d in brains.controller_splits]
    return [f"  split:      {where}: {len(d.brokers)} {what} at once ({', '.join(map(str, d.brokers))}) "
            f"at {fmt.rel(d.start_ns, span[0])} for {fmt.duration(d.end_ns - d.start_ns)}"
            for where, what, d in found]
