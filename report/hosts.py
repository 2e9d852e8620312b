"""What the report says about where the hosts were: the runtime's caveats a reader must weigh the verdict against.

Each caveat is the runtime kind's record's (`testbed.runtime.kinds`).

Read from the run folder only (state.json, clocks.json). For the ssh runtime:
how host keys were checked, what a power-off was on each node host (unsyncfs,
its power command, or processes only), that the hosts whose power-off only
killed processes kept their page cache, and any clock offset large enough to reorder events of
different hosts in the timeline. Must never: fail the report (a missing or
unreadable file is simply not mentioned).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from testbed.journal_names import POWER_OFF
from testbed.runfolder import RunFolder
from testbed.runtime.kinds import KIND_NAMES, kind
from testbed.runtime.ssh_clock import large_offsets


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def host_notes(run_dir: Path, nemesis: pd.DataFrame) -> list[str]:
    """One sentence per caveat of the run's runtime; none for runtimes whose hosts share this machine."""
    folder = RunFolder(run_dir)
    state = _read(folder.state)
    powered_off = "fault" in nemesis and bool((nemesis["fault"] == POWER_OFF).any())
    if state.get("runtime") not in KIND_NAMES:
        return []
    hosts = kind(state["runtime"])
    where = hosts.hosts_note(state)
    notes = [where] if where else []
    caveat = hosts.power_note(state) if powered_off else None
    if caveat:
        notes.append(caveat)
    if not hosts.own_clocks:
        return notes
    clocks = _read(folder.clocks)
    large = large_offsets(clocks)
    if large:
        notes.append(f"clock offsets large enough to reorder events of different hosts in the timeline (beyond "
                     f"{clocks.get('large_s', 0) * 1000:.0f} ms): {'; '.join(large)}")
    elif clocks:
        worst = max((abs(v["offset_s"]) for moment in ("start", "end") for v in (clocks.get(moment) or {}).values()),
                    default=0.0)
        notes.append(f"host clocks within {worst * 1000:.1f} ms of the harness's at the start and the end "
                     f"({folder.clocks.name})")
    return notes
