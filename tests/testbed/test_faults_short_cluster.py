"""One short disk-error and one short clock-jump configuration on a real cluster (netns), in `make test` (marker
`faults_short`, each about 90 s on 2 cores): the catalogue's disk-error-leader and clock-jump-coordinator with their
timelines shortened by `--set`, their expectations held (the harness exits 0) and their mechanisms checked. The full
configurations, and deeper checks, are `make test-disks-clocks`'s."""

from __future__ import annotations

from pathlib import Path

import pytest

from nemesis.journal import read_journal
from testbed.runfolder import RunFolder
from tests.conftest import faultline
from tests.testbed.clock_checks import coordinator_jumps, jump_times_ms, transaction_log, transactional_id

pytestmark = [pytest.mark.cluster, pytest.mark.faults_short]


def _sets(**values: object) -> list[str]:
    return [arg for key, value in values.items() for arg in ("--set", f"{key.replace('__', '.')}={value}")]


def test_eio_on_the_leaders_log_dir_for_6_s_halts_it_and_loses_nothing(tmp_path: Path) -> None:
    sets = _sets(duration_s=18, **{"nemesis[0]__at": 5, "nemesis[1]__at": 11})
    proc = faultline("run", "scenarios/disk-error-leader.yaml", "--configuration", "acksall", "--runtime", "netns",
                     "--results", str(tmp_path), *sets, timeout=400)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = RunFolder((tmp_path / "disk-error-leader" / "latest" / "acksall").resolve())
    rows = {row["type"]: row for row in read_journal(run.nemesis_journal) if row["fault"] == "disk-error"}
    counted = rows["stop"]["detail"]["counts"]["az1-node"]["counts"]
    assert counted.get("eio-write", 0) + counted.get("eio-fsync", 0) > 0  # the filesystem failed its writes
    assert rows["stop"]["detail"]["restarted"] == ["az1-node/broker"]  # it had halted on them


def test_the_coordinators_clock_steps_back_and_forward_and_every_transaction_still_ends(tmp_path: Path) -> None:
    sets = _sets(duration_s=18, **{"nemesis[0]__at": 5, "nemesis[1]__at": 11})
    proc = faultline("run", "scenarios/clock-jump-coordinator.yaml", "--runtime", "netns", "--results",
                     str(tmp_path), "--keep-data", *sets, timeout=400)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]  # no unreadable, no torn transaction
    run = RunFolder((tmp_path / "clock-jump-coordinator" / "latest" / "back-and-forward").resolve())
    node = coordinator_jumps(run)
    jumps = jump_times_ms(run)
    log = transaction_log(run, node, transactional_id(run, "producer-az1-0"), "2.7.2")
    behind = [s for t, s in log if jumps["coordinator-back"] - 31000 <= t <= jumps["coordinator-forward"] - 29000]
    assert "CompleteCommit" in behind, log  # the coordinator wrote 30 s behind, and its transactions committed
    assert log[-1][1] in ("CompleteCommit", "CompleteAbort", "Empty"), log[-5:]  # none left open
