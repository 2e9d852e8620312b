"""at-most-once-crash and at-least-once-crash on the docker runtime: each group member's supervisor runs inside its
AZ's client container (`docker exec`) and SIGKILLs and restarts the member there; the instances' journals come back
with the run's journals. Both expectations hold and each count comes from its mechanism, as on netns
(tests/workloads/group_crash.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import faultline
from tests.docker.test_docker_runtime import ours
from tests.workloads.group_crash import (
    SCENARIO_FILES,
    SCENARIOS,
    assert_at_least_once_repeats_what_a_killed_member_had_not_committed,
    assert_at_most_once_skips_what_a_killed_member_committed,
)

pytestmark = [pytest.mark.docker, pytest.mark.catalogue]  # `make test-docker`, not `make test` (~4 min)


def test_at_most_and_at_least_once_on_docker_skip_and_repeat_what_their_kills_interrupted(tmp_path: Path) -> None:
    proc = faultline("run", *SCENARIO_FILES, "--runtime", "docker", "--results", str(tmp_path), timeout=1200)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]  # both configurations' expectations held
    runs = {n: (tmp_path / n / "latest").resolve() for n in SCENARIOS}
    for run in runs.values():
        state = json.loads((run / "state.json").read_text())
        assert state["runtime"] == "docker"
        # Three members' journals of the first instance and one more per kill, fetched from the client containers.
        assert len(list((run / "journal").glob("consumer-*.jsonl"))) >= 6, sorted((run / "journal").iterdir())
        assert ours(state["prefix"]) == []
    assert_at_most_once_skips_what_a_killed_member_committed(runs["at-most-once-crash"])
    assert_at_least_once_repeats_what_a_killed_member_had_not_committed(runs["at-least-once-crash"])
