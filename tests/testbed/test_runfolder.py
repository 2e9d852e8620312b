"""Which folder is a run and which run finished: one answer (testbed.runfolder), asked by `show` and the lake."""

from __future__ import annotations

import shutil
from pathlib import Path

from harness.runfolders import find_runs
from spark_analysis.lake import run_folders
from testbed.runfolder import RunFolder


def test_a_run_folder_is_one_a_run_wrote_into_and_it_finished_with_its_verdict(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path / "run").make()
    assert (folder.is_run, folder.finished) == (False, False), "journal/ alone is not a run"
    for first in (folder.spec, folder.manifest):
        first.write_text("{}")
        assert (folder.is_run, folder.finished) == (True, False), first.name
        first.unlink()
    folder.verdict.write_text("{}")
    assert (folder.is_run, folder.finished) == (True, True)


def test_show_and_the_lake_find_the_same_runs(tmp_path: Path) -> None:
    top = tmp_path / "results" / "scenario" / "20260101T000000Z"
    finished, crashed, stray = RunFolder(top / "acks1").make(), RunFolder(top / "crashed").make(), top / "notes"
    finished.spec.write_text("{}")
    finished.verdict.write_text("{}")
    crashed.spec.write_text("{}")
    stray.mkdir()
    shutil.copytree(finished.root, finished.history_dir / "copy")  # the inside of a run is never another run
    found = find_runs(top)
    assert (found.finished, found.unfinished) == ([finished.root], [crashed.root])
    assert list(run_folders(tmp_path / "results", tmp_path / "results" / "lake")) == [finished.root, crashed.root]
