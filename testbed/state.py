"""The run's state file: every resource a runtime created, written the moment it exists.

A killed harness leaves this file behind; `cluster down` and `clean` read it.
`clean` does not depend on it (it finds resources by prefix), so a lost state
file still leaves a clean machine.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from testbed.errors import ClusterBusy
from testbed.files import write_json_atomic
from testbed.paths import ACTIVE_FILE
from testbed.runfolder import RunFolder


class RunState:
    """A JSON document of the run's resources, rewritten on every change."""

    def __init__(self, run_dir: Path, data: dict[str, Any]) -> None:
        self.run_dir = run_dir
        self.data = data

    @classmethod
    def create(cls, run_dir: Path, prefix: str, **fields: Any) -> RunState:
        data: dict[str, Any] = {"prefix": prefix, "processes": {}, **fields}
        state = cls(run_dir, data)
        state.save()
        return state

    @classmethod
    def load(cls, run_dir: Path) -> RunState:
        return cls(run_dir, json.loads(RunFolder(run_dir).state.read_text()))

    @property
    def prefix(self) -> str:
        return str(self.data["prefix"])

    def save(self) -> None:
        write_json_atomic(RunFolder(self.run_dir).state, self.data)

    def add(self, kind: str, name: str) -> None:
        """Record a resource of `kind` (a runtime's word: "namespaces", "containers", ...) the moment it exists."""
        names = self.data.setdefault(kind, [])
        if name not in names:
            names.append(name)
            self.save()

    def discard(self, kind: str, name: str) -> None:
        if name in self.data.get(kind, []):
            self.data[kind].remove(name)
            self.save()

    def set_process(self, name: str, info: dict[str, Any] | None) -> None:
        if info is None:
            self.data["processes"].pop(name, None)
        else:
            self.data["processes"][name] = info
        self.save()

    def update(self, **fields: Any) -> None:
        self.data.update(fields)
        self.save()


def read_active(active_file: Path | None = None) -> dict[str, Any] | None:
    """The machine's one-cluster record (`active_file`, else ACTIVE_FILE); None if there is none."""
    try:
        return dict(json.loads((active_file or ACTIVE_FILE).read_text()))
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def claim_active(run_dir: Path, prefix: str, active_file: Path | None = None) -> None:
    """Record this run as the machine's one cluster (the caller has checked none is alive)."""
    write_json_atomic(active_file or ACTIVE_FILE, {"run_dir": str(run_dir), "prefix": prefix, "owner_pid": os.getpid()})


def refuse_if_busy(current: dict[str, Any] | None) -> None:
    if current is not None:
        raise ClusterBusy(f"a cluster is already running: prefix {current['prefix']}, run dir {current['run_dir']}; "
                          f"stop it with 'python -m harness cluster down' (or 'clean')")


def release_active(prefix: str, active_file: Path | None = None) -> None:
    current = read_active(active_file)
    if current is not None and current.get("prefix") == prefix:
        (active_file or ACTIVE_FILE).unlink(missing_ok=True)
