"""The nightly workflow: actionlint accepts it, and every command it runs is a make target that exists."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO

WORKFLOW = REPO / ".github" / "workflows" / "nightly-chaos.yml"
ACTIONLINT = REPO / ".venv" / "bin" / "actionlint"


def actionlint(path: Path) -> subprocess.CompletedProcess[str]:
    if not ACTIONLINT.exists():
        pytest.fail(f"{ACTIONLINT} is missing: `make setup` installs it (setup-actionlint)")
    return subprocess.run([str(ACTIONLINT), "-no-color", str(path)], capture_output=True, text=True, timeout=120,
                          cwd=REPO, check=False)


def steps(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    return [step for job in workflow["jobs"].values() for step in job["steps"]]


def test_actionlint_passes_on_the_workflow() -> None:
    done = actionlint(WORKFLOW)
    assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path: Path) -> None:
    broken = tmp_path / ".github" / "workflows" / "broken.yml"
    broken.parent.mkdir(parents=True)
    text = WORKFLOW.read_text().replace("inputs.budget ||", "inputs.budgett ||").replace("runs-on:", "runs_on:")
    broken.write_text(text)
    done = actionlint(broken)
    assert done.returncode == 1 and "budgett" in done.stdout and "runs-on" in done.stdout, done.stdout


def test_every_run_step_calls_a_make_target_that_exists() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as true
    assert "schedule" in triggers and set(triggers["workflow_dispatch"]["inputs"]) == {
        "campaign", "budget", "seed", "kafka_version", "runtime"}
    commands = [line.strip() for step in steps(workflow) if "run" in step
                for line in step["run"].splitlines() if line.strip() and not line.strip().startswith("#")]
    assert [c.split()[:2] for c in commands] == [["make", "setup"], ["make", "nightly"], ["make", "campaign-summary"],
                                                 ["make", "setup-lake"], ["make", "campaign-merge"],
                                                 ["make", "campaign-summary"], ["make", "campaign-flakes"]]
    for command in commands:
        words = shlex.split(command)
        assert words[0] == "make" and all("=" in w for w in words[2:]), command
        dry = subprocess.run(["make", "-n", *words[1:]], cwd=REPO, capture_output=True, text=True, timeout=60,
                             check=False)
        assert dry.returncode == 0 and "No rule to make target" not in dry.stderr, (command, dry.stderr)
    uses = [step["uses"].split("@")[0] for step in steps(workflow) if "uses" in step]
    assert "actions/upload-artifact" in uses and "mikepenz/action-junit-report" in uses


def test_the_shards_run_as_a_matrix_and_the_last_job_merges_them() -> None:
    jobs = yaml.safe_load(WORKFLOW.read_text())["jobs"]
    shard, merge = jobs["shard"], jobs["merge"]
    count = len(shard["strategy"]["matrix"]["shard"])
    assert shard["strategy"]["matrix"]["shard"] == list(range(1, count + 1)) and count >= 2
    assert shard["env"]["SHARD"] == f"${{{{ matrix.shard }}}}/{count}" and f"/{count}" in shard["name"]
    assert shard["strategy"]["fail-fast"] is False  # a failing shard does not cancel the others
    upload = [s for s in shard["steps"] if s.get("uses", "").startswith("actions/upload-artifact")]
    assert upload and upload[0]["if"] == "always()" and "matrix.shard" in upload[0]["with"]["name"]
    assert merge["needs"] == "shard" and merge["if"] == "always()"
    names = [s.get("uses", s.get("run", "")).split("@")[0] for s in merge["steps"]]
    assert names.index("actions/download-artifact") < names.index("make campaign-merge SHARDS=shards")
    assert names.index("make campaign-merge SHARDS=shards") < names.index("make campaign-summary")
    assert "mikepenz/action-junit-report" in names and "actions/cache" in names  # the lake lives with the merge


def test_a_step_calling_a_missing_target_is_caught() -> None:
    dry = subprocess.run(["make", "-n", "no-such-target"], cwd=REPO, capture_output=True, text=True, timeout=60,
                         check=False)
    assert dry.returncode != 0 and "No rule to make target" in dry.stderr


CI = REPO / ".github" / "workflows" / "ci.yml"


def test_actionlint_passes_on_the_ci_workflow() -> None:
    done = actionlint(CI)
    assert done.returncode == 0, done.stdout + done.stderr


def test_ci_runs_lint_and_the_fast_set_on_every_push_and_the_whole_suite_on_main() -> None:
    workflow = yaml.safe_load(CI.read_text())
    triggers = workflow[True]
    assert "push" in triggers and "pull_request" in triggers and not (triggers["push"] or {}).get("branches")
    runs = {name: [step["run"] for step in job["steps"] if "run" in step] for name, job in workflow["jobs"].items()}
    assert runs == {"fast": ["make setup", "make lint", "make test-fast"], "whole": ["make setup", "make test"]}
    assert workflow["jobs"]["whole"]["if"] == "github.event_name == 'push' && github.ref == 'refs/heads/main'"
    for job in workflow["jobs"].values():
        python = [s for s in job["steps"] if s.get("uses", "").startswith("actions/setup-python")]
        assert python and python[0]["with"]["python-version"] == "3.11"
