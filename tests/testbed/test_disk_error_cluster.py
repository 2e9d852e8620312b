"""scenarios/disk-error-leader.yaml on a real cluster (netns; about 1.5 minutes on 2 cores; `make test-disks`, marker
`disks`): EIO on every write and fsync of the leader's log directory. Its expectation must hold (the harness exits 0:
the broker's halt in its server.log, no `lost`), and the mechanism must be the fault's: the filesystem failed the
broker's writes (counted in the stop row), and the stop started the broker that had halted."""

from __future__ import annotations

from pathlib import Path

import pytest

from nemesis.journal import read_journal
from testbed.runfolder import RunFolder
from tests.conftest import run_passing

pytestmark = [pytest.mark.cluster, pytest.mark.disks]


def test_eio_on_the_leaders_log_dir_halts_it_and_loses_nothing_acknowledged(tmp_path: Path) -> None:
    run = RunFolder(run_passing("scenarios/disk-error-leader.yaml", tmp_path, "--runtime", "netns", timeout=600)[0])
    rows = {row["type"]: row for row in read_journal(run.nemesis_journal) if row["fault"] == "disk-error"}
    assert rows["start"]["targets"]["paths"] == {"az1-node": "kafka-data"}  # broker-0, the preferred leader
    counted = rows["stop"]["detail"]["counts"]["az1-node"]
    assert counted["counts"].get("eio-write", 0) + counted["counts"].get("eio-fsync", 0) > 0
    assert rows["stop"]["detail"]["restarted"] == ["az1-node/broker"]
