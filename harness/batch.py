"""Several spec files in one `harness run`: every scenario in turn, in one process, through one judging pipeline.

A make target that runs a list of scenarios (`make test-scenarios`) gives them
to one `harness run`: one Spark session (started and warmed while the first
story runs) serves every check, and each configuration, a scenario's last one
included, is judged while the next story runs (harness.pipeline); only the
last configuration of the whole batch is judged with nothing else going on.
Each file keeps its own timestamp folder, `latest` link, junit.xml and result
lines (harness.scenario.ScenarioRun); every file is read and checked before
the first run starts.

Exit status: the worst of the files' statuses, ranked 3 (the harness failed)
> 1 (a mismatch, or an invalid verdict) > 2 (unknown) > 0, so a harness
failure never reads as a mismatch nor a mismatch as an unknown. With more
than one file, a last line says how many scenarios passed and names the
others with their status (and the files never started, after an interrupt).
Must never: start anything before every file was validated, or let one
scenario's failure stop the others.
"""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from checkers.verdict import EXIT_FAILED, EXIT_INCONCLUSIVE, EXIT_INVALID, EXIT_UNKNOWN, EXIT_VALID
from harness.scenario import ScenarioRun, judging_pipeline
from harness.spec import Spec
from testbed.lifecycle import terminate_on_sigterm
from testbed.machine import REAL, Machine

SEVERITY = {EXIT_VALID: 0, EXIT_INCONCLUSIVE: 1, EXIT_UNKNOWN: 2, EXIT_INVALID: 3, EXIT_FAILED: 4}
MEANING = {EXIT_INVALID: "a mismatch", EXIT_UNKNOWN: "unknown", EXIT_FAILED: "the harness failed",
           EXIT_INCONCLUSIVE: "inconclusive"}


def worst(statuses: list[int]) -> int:
    """The status that says most: 3 over 1 over 2 over 4 over 0."""
    return max(statuses, key=lambda s: SEVERITY.get(s, SEVERITY[EXIT_FAILED]), default=EXIT_VALID)


def run_batch(batch: list[list[Spec]], results: Path | None, engine: str | None, out: TextIO,
              keep_data: bool = False, machine: Machine = REAL) -> int:
    """Run each file's configurations (`batch`: each file's specs, validated) on `machine`; the worst exit status."""
    runs: list[ScenarioRun] = []
    statuses: list[int] = []
    try:
        with terminate_on_sigterm(), judging_pipeline([s for specs in batch for s in specs], engine) as pipe:
            for specs in batch:
                runs.append(ScenarioRun(specs, results, machine))
                runs[-1].run(pipe, engine, out, keep_data)
    finally:
        statuses = [run.close() for run in runs]
        if len(batch) > 1:
            out.write(summary([specs[0].name for specs in batch], statuses) + "\n")
            out.flush()
    return worst(statuses)


def summary(names: list[str], statuses: list[int]) -> str:
    """`N of M scenarios passed`, then each other scenario with its status, and those never started."""
    failed = [f"{name} ({status}: {MEANING.get(status, 'failed')})"
              for name, status in zip(names, statuses, strict=False) if status != EXIT_VALID]
    line = f"{statuses.count(EXIT_VALID)} of {len(names)} scenarios passed"
    line += f"; FAILED: {', '.join(failed)}" if failed else ""
    if len(statuses) < len(names):
        line += f"; not run (interrupted): {' '.join(names[len(statuses):])}"
    return line
