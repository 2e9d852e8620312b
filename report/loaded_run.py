"""One finished run folder, loaded for reporting: spec, verdict and history tables.

Reads only files (DESIGN.md's results layout and spec/history.md's tables);
never imports the workloads, the nemesis or the checker's engines. Tables are
read by the checker's reader in its lenient mode (checkers.lenient_tables): a
table that is missing or unreadable becomes an empty table plus a line in
``problems``, so a report of a broken run still shows what there is. Integer
columns keep full nanosecond precision (pandas ``Int64``), never float.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from checkers.lenient_tables import empty_frame, frame_columns, read_frame
from checkers.schema import TABLES
from report.errors import ReportError
from testbed.runfolder import RunFolder

# Contract columns the report never shows, left unread (the big tables' cost).
_UNUSED: dict[str, frozenset[str]] = {"reads": frozenset({"key", "leader_epoch"}), "writes": frozenset({"source"})}


@dataclass
class Run:
    """A run folder's contents as the report needs them."""

    run_dir: Path
    spec: dict[str, Any]
    verdict: dict[str, Any] | None
    tables: dict[str, pd.DataFrame]
    problems: list[str] = field(default_factory=list)

    def table(self, name: str) -> pd.DataFrame:
        return self.tables[name]

    @property
    def configuration(self) -> str | None:
        """The scenario configuration this run is (spec.yaml's ``configuration``), if any."""
        value = self.spec.get("configuration")
        return str(value) if isinstance(value, str | int) and str(value) else None

    @property
    def scenario(self) -> str:
        """The scenario id: the spec's ``name``, else the folder above the run's timestamp folder."""
        for key in ("name", "scenario"):
            if isinstance(self.spec.get(key), str) and self.spec[key]:
                return str(self.spec[key])
        return self._timestamp_dir.parent.name or "run"

    @property
    def run_id(self) -> str:
        """The run's timestamp folder (results/<scenario>/<timestamp>[/<configuration>])."""
        return self._timestamp_dir.name

    @property
    def _timestamp_dir(self) -> Path:
        here = self.run_dir.resolve()
        return here.parent if self.configuration and here.name == self.configuration else here

    def span_ns(self) -> tuple[int, int] | None:
        """(first, last) time in the history (sends, polls, faults, observations), or None if it is empty."""
        times: list[int] = []
        for name, cols in (("writes", ("invoke_ns", "complete_ns")), ("reads", ("poll_ns",)),
                           ("nemesis", ("time_ns",)), ("observations", ("time_ns",))):
            frame = self.tables[name]
            for col in cols:
                series = frame[col].dropna()
                if len(series):
                    times += [int(series.min()), int(series.max())]
        return (min(times), max(times)) if times else None


def load_run(run_dir: str | Path, tables: Iterable[str] | None = None) -> Run:
    """Load ``run_dir``; only a missing folder raises (ReportError).

    ``tables`` names the history tables to read (default: all); the others are left empty.
    """
    root = Path(run_dir)
    if not root.is_dir():
        raise ReportError(f"{root}: not a run folder")
    problems: list[str] = []
    folder = RunFolder(root)
    spec = _load_spec(folder.spec, problems)
    verdict = load_json_object(folder.verdict, problems)
    wanted = set(TABLES if tables is None else tables)
    loaded: dict[str, pd.DataFrame] = {}
    for name in TABLES:
        skip = _UNUSED.get(name, frozenset())
        loaded[name] = (read_frame(folder.history_dir, name, problems, skip) if name in wanted
                        else empty_frame(frame_columns(name, skip)))
    return Run(root, spec, verdict, loaded, problems)


def _load_spec(path: Path, problems: list[str]) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        problems.append(f"{path.name}: unreadable ({exc.__class__.__name__})")
        return {}
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        problems.append(f"{path.name}: not a mapping")
        return {}
    return loaded


def load_json_object(path: Path, problems: list[str]) -> dict[str, Any] | None:
    """A run file holding one JSON object; None if absent (not a problem) or unreadable (a line in `problems`)."""
    if not path.is_file():  # not a reading problem: the section that shows it says there is none
        return None
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        problems.append(f"{path.name}: unreadable ({exc})")
        return None
    if not isinstance(loaded, dict):
        problems.append(f"{path.name}: not a JSON object")
        return None
    return loaded


def parse_json(text: Any) -> Any:
    """A json column's cell as a Python value (text that is not JSON stays text)."""
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text
