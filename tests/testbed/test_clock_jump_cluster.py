"""scenarios/clock-jump-coordinator.yaml on a real cluster (netns, Kafka 2.7.2; about 1.5 minutes on 2 cores; `make
test-disks-clocks`, marker `clocks`): the transaction coordinator's clock 30 s back at 8 s and forward to true time at
18 s. Its expectation must hold (the harness exits 0: no unreadable partition, no aborted, uncommitted or torn read,
nothing lost), and the mechanism must be the fault's: the times the coordinator wrote producer-az1-0's transactions
with went 30 s back between the jumps, and those transactions went on committing through both steps and ended (the
last entry a completed one)."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.runfolder import RunFolder
from tests.conftest import run_passing
from tests.testbed.clock_checks import coordinator_jumps, jump_times_ms, transaction_log, transactional_id

pytestmark = [pytest.mark.cluster, pytest.mark.clocks]


def test_the_coordinator_stamps_transactions_30_s_back_and_still_ends_every_one(tmp_path: Path) -> None:
    run = RunFolder(run_passing("scenarios/clock-jump-coordinator.yaml", tmp_path, "--runtime", "netns", "--keep-data",
                                timeout=600)[0])
    node = coordinator_jumps(run)
    jumps = jump_times_ms(run)
    log = transaction_log(run, node, transactional_id(run, "producer-az1-0"), "2.7.2")
    # The coordinator wrote with its own clock: 30 s behind the harness's between the jumps, true before and after.
    behind = [(t, s) for t, s in log if t < jumps["coordinator-back"] - 20000]
    assert behind and all(jumps["coordinator-back"] - 31000 <= t <= jumps["coordinator-forward"] - 29000
                          for t, _ in behind), behind
    assert any(s == "CompleteCommit" for _, s in behind)  # transactions committed on the stepped-back clock
    assert any(t > jumps["coordinator-forward"] and s == "CompleteCommit" for t, s in log)  # and after the step forward
    assert log[-1][1] in ("CompleteCommit", "CompleteAbort", "Empty"), log[-5:]  # none left open
