"""Campaigns on the fake runtime: scenario files in a temporary folder, runs that take no root and ~1 s each.

`fake_campaign` writes a campaign file and its scenario specs; `Driver` is the run function the
campaign is given (`campaign.runner.RunSpecs`): the real `run_specs` of `harness run` on the
fake machine (tests/harness/test_run_fake.py), with a hook after each run and a clock it moves on
by a chosen number of seconds per run, so budgets are tested without waiting.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import yaml

from checkers.configuration_result import ConfigurationResult
from harness.scenario import run_specs
from harness.spec import Spec
from testbed.machine import Machine

SPEC: dict[str, Any] = {
    "seed": 3, "duration_s": 1, "settle_timeout_s": 1, "drain_timeout_s": 1, "checker": "pandas",
    "workloads": {"producers": [{"azs": ["az1"], "rate": 10}], "consumers": [{"azs": ["az2"]}]},
    "nemesis": [{"at": 0, "fault": "isolate-az", "target": "az2", "name": "iso"}],
}


def write_scenario(folder: Path, name: str, expect: dict[str, Any] | None = None, **extra: Any) -> Path:
    path = folder / f"{name}.yaml"
    spec = {"name": name, **SPEC, **extra}
    if expect is not None:
        spec["expect"] = expect
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def write_campaign(folder: Path, entries: list[dict[str, Any]], name: str = "fake", **extra: Any) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"name": name, "budget": "1h", "entries": entries, **extra}, sort_keys=False))
    return path


@dataclass
class Driver:
    """The campaign's run function: the real run flow on the fake machine, a clock moved on per run."""

    machine: Machine
    seconds_per_run: float = 60.0
    after: Callable[[Spec, Path, int], None] | None = None  # (spec, run folder, how many runs so far)
    now: float = 0.0
    runs: list[Path] = field(default_factory=list)

    def clock(self) -> float:
        return self.now

    def __call__(self, specs: list[Spec], results: Path | None, engine: str | None,
                 out: TextIO) -> tuple[int, list[ConfigurationResult]]:
        status, cases = run_specs(specs, results, engine, out, machine=self.machine)
        self.now += self.seconds_per_run
        run_dir = cases[0].run_dir
        assert run_dir is not None, "the run flow names every configuration's folder"
        self.runs.append(run_dir)
        if self.after is not None:
            self.after(specs[0], run_dir, len(self.runs))
        return status, cases
