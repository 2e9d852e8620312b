"""Which run folders a path a user typed names: `show` and `report` at every level of the results tree.

    results/<scenario>                      its `latest` run
    results/<scenario>/latest, .../<ts>     that run; or, for a spec with several configurations, each one's
    results/<scenario>/<ts>/<configuration> that configuration's run

A configuration folder is a run folder (testbed.runfolder's `is_run`); it is
finished once it has a verdict (`finished`). One whose harness failed has no verdict
and is named as unfinished, not hidden. Must never: write anything, or call a
folder without a verdict.json a finished run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from testbed.errors import UsageError
from testbed.runfolder import RunFolder

LATEST = "latest"  # results/<scenario>/latest: the newest timestamp folder of that scenario


@dataclass(frozen=True)
class RunFolders:
    """The finished run folders under the folder a user named, and the configurations that did not finish."""

    top: Path
    finished: list[Path]
    unfinished: list[Path]

    @property
    def several(self) -> bool:
        """Whether `top` holds one folder per configuration (rather than being a run folder itself)."""
        return self.finished != [self.top]


def find_runs(path: Path) -> RunFolders:
    """The run folders `path` names (UsageError, naming it, when it holds no finished run)."""
    path = path.resolve()
    if not path.is_dir():
        raise UsageError(f"{path}: no such folder")
    if not RunFolder(path).is_run and (path / LATEST).is_dir():
        path = (path / LATEST).resolve()
    if RunFolder(path).finished:
        return RunFolders(path, [path], [])
    configurations = [p for p in sorted(path.iterdir()) if p.is_dir() and RunFolder(p).is_run]
    finished = [p for p in configurations if RunFolder(p).finished]
    if not finished:
        started = " (the run did not finish: see its harness.log)" if RunFolder(path).is_run or configurations \
            else ""
        raise UsageError(f"{path}: not a finished run folder (no verdict.json){started}")
    return RunFolders(path, finished, [p for p in configurations if p not in finished])
