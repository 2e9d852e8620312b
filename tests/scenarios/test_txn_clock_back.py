"""txn-clock-back (KAFKA-8803) on a real cluster: the coordinator's clock 30 s back; Kafka 2.4.1 refuses the next
transaction's start and leaves it pending for good, 2.5.0 takes it.

`make test-versions` (marker `versions`), not `make test`. Each configuration's expectation is in the spec (2.4.1:
the coordinator logs the refused transition; 2.5.0: no such line, every transaction ended); the run exits 0 only when
both hold. Here the mechanism is read again from the coordinator's own __transaction_state (DumpLogSegments over the
kept data): on 2.4.1 producer-az1-0's last entry is the Ongoing the coordinator refused, stamped on the stepped-back
clock, and nothing follows it though the producer tried for 18 s more; on 2.5.0 transactions commit on that clock and
the last entry is a completed one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.runfolder import RunFolder
from tests.conftest import REPO, faultline
from tests.testbed.clock_checks import coordinator_jumps, jump_times_ms, transaction_log, transactional_id

pytestmark = [pytest.mark.cluster, pytest.mark.versions]
SPEC = REPO / "scenarios" / "versions" / "txn-clock-back.yaml"
ENDED = ("CompleteCommit", "CompleteAbort", "Empty")


@pytest.mark.parametrize(("configuration", "version", "stuck"),
                         [("kafka-2-4-1", "2.4.1", True), ("kafka-2-5-0", "2.5.0", False)])
def test_a_transaction_begun_on_a_clock_stepped_back_stays_pending_before_2_5(
        tmp_path: Path, configuration: str, version: str, stuck: bool) -> None:
    proc = faultline("run", str(SPEC), "--configuration", configuration, "--results", str(tmp_path), "--keep-data",
                     timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = RunFolder((tmp_path / "txn-clock-back" / "latest" / configuration).resolve())
    node = coordinator_jumps(run)
    jumps = jump_times_ms(run)
    log = transaction_log(run, node, transactional_id(run, "producer-az1-0"), version)
    # Entries the coordinator wrote on its stepped-back clock: 30 s behind the harness's, between the jumps.
    # (Entries before back - 20 s cannot be true-time ones: the run starts 8 s before the step.)
    behind = [(t, s) for t, s in log if jumps["coordinator-back"] - 31000 <= t < jumps["coordinator-back"] - 20000]
    assert behind, log[-10:]
    if stuck:
        # The refused start: written to the log (the append succeeded; the callback threw after it), then nothing,
        # neither a commit nor the abort a timed-out transaction gets, though the producer went on trying.
        # (The transaction in flight at the step may still commit on the new clock: its start does not move.)
        assert log[-1][1] == "Ongoing" and log[-1] in behind, log[-5:]
    else:
        assert any(s == "CompleteCommit" for _, s in behind), behind  # transactions committed on that clock
        assert log[-1][1] in ENDED, log[-5:]
