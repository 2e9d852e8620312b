"""scenarios/at-most-once-crash.yaml and at-least-once-crash.yaml on a real cluster: group members SIGKILLed while they
consume, judged by contract v3 (about 2.5 minutes for both on 2 cores, in one harness process).

Both scenarios' expectations must hold (the harness exits 0), and each count must come from the mechanism the
commit mode promises (tests/workloads/group_crash.py says which, read from the history).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import faultline
from tests.workloads.group_crash import (
    SCENARIO_FILES,
    SCENARIOS,
    assert_at_least_once_repeats_what_a_killed_member_had_not_committed,
    assert_at_most_once_skips_what_a_killed_member_committed,
)

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    results = tmp_path_factory.mktemp("groups")
    proc = faultline("run", *SCENARIO_FILES, "--results", str(results), timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]  # both configurations' expectations held
    return {n: (results / n / "latest").resolve() for n in SCENARIOS}


def test_at_most_once_skips_what_a_killed_member_had_committed_and_not_processed(runs: dict[str, Path]) -> None:
    assert_at_most_once_skips_what_a_killed_member_committed(runs["at-most-once-crash"])


def test_at_least_once_hands_again_what_a_killed_member_had_processed_and_not_committed(
        runs: dict[str, Path]) -> None:
    assert_at_least_once_repeats_what_a_killed_member_had_not_committed(runs["at-least-once-crash"])
