"""The soak (issue 41) on the real cluster: scenarios/soak.yaml for 20 minutes (`make test-soak`, marker `soak`).

Its six hours are `python -m harness run scenarios/soak.yaml`; no test runs them (BENCHMARKS.md, "Soak"). The run
must pass its expectation, have started a fault of every family its list draws from, and leave in run.json a
`resources` series whose harness memory is flat: the last quarter's peak RSS within FLAT of the second quarter's
(the first quarter is the warm-up: imports, the nemesis's first faults, the consumers' first buffers).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from nemesis.registry import fault_kinds
from tests.conftest import faultline, run_dir_of

pytestmark = [pytest.mark.cluster, pytest.mark.soak]

SOAK_S = 1200
FLAT = 1.25  # the last quarter's peak RSS at most 25 % above the second quarter's
FAMILIES = {"partition", "process", "link", "workload", "disk", "clock", "operation"}


def quarter_peaks(samples: list[dict[str, Any]]) -> list[int]:
    """The peak RSS of each quarter of the running phase's samples."""
    running = [s for s in samples if s["phase"] == "running" and s["peak_rss_bytes"] is not None]
    n = len(running)
    return [max(s["peak_rss_bytes"] for s in running[q * n // 4:(q + 1) * n // 4]) for q in range(4)]


@pytest.mark.timeout(3600)
def test_twenty_minutes_of_soak_pass_with_the_harness_flat(tmp_path: Path) -> None:
    proc = faultline("run", "scenarios/soak.yaml", "--set", f"duration_s={SOAK_S}", "--results", str(tmp_path),
                     timeout=3300)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert [line for line in proc.stdout.splitlines() if line.startswith(("PASS", "FAIL"))][0].startswith("PASS")
    run = run_dir_of(tmp_path, "soak")
    manifest = json.loads((run / "run.json").read_text())
    assert manifest["outcome"] == "PASS" and manifest["run_duration_s"] == SOAK_S
    started = pd.read_parquet(run / "history" / "nemesis.parquet").query("type == 'start'")["fault"]
    family = {name: kind.category for kind in fault_kinds() for name in kind.journal_names}  # power-cut: power-off's
    families = {family[name] for name in set(started) if name in family}
    assert families >= FAMILIES, f"no fault of {FAMILIES - families} started"
    samples = manifest["resources"]["samples"]
    assert manifest["resources"]["interval_s"] == 60
    assert sum(s["phase"] == "running" for s in samples) >= SOAK_S // 60 - 1, "a sample a minute while running"
    peaks = quarter_peaks(samples)
    assert peaks[3] <= peaks[1] * FLAT, f"the harness's peak RSS per quarter grew: {peaks}"
    journals = [s["journal_bytes"] for s in samples if s["phase"] == "running"]
    assert journals == sorted(journals) and journals[-1] > journals[0], "the journals grow on disk, as they are written"
    judged = samples[-1]
    assert judged["history_bytes"] > 0 and judged["phase"] == "checking", "the last sample is after the judging"
