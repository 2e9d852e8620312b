"""Each ssh host's clock against the harness's: measured at the start and the end of a run, bounded by the round trip.

A sample asks the host for `date +%s.%N` and takes the harness's clock before
and after: the host's reading was taken somewhere in between, so the offset is
known to within half the round trip. The best (shortest) of SAMPLES round
trips is kept. Workloads stamp events with their own host's clock, so an
offset larger than LARGE_S can reorder events of different hosts in the
timeline; `large_offsets` names them for the report, and `offsets_ns` gives what moves a host's log stamps onto
the harness's clock (the expectations' log windows, the report's excerpts).
Must never: change a host's clock.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from testbed.errors import RuntimeFailure
from testbed.files import write_json_atomic

if TYPE_CHECKING:  # only a type here: the report reads clocks.json without the ssh extra (paramiko)
    from testbed.runtime.ssh_conn import SshConnection

SAMPLES = 5
LARGE_S = 0.010  # beyond this (after the round-trip bound), events of two hosts may be drawn in the wrong order


def measure(conn: SshConnection) -> dict[str, float]:
    """{"offset_s": host clock minus harness clock, "bound_s": the offset's uncertainty (half the round trip)}."""
    best: tuple[float, float] | None = None
    for _ in range(SAMPLES):
        before = time.time()
        out = conn.check("date +%s.%N").strip()
        after = time.time()
        try:
            remote = float(out)
        except ValueError as exc:
            raise RuntimeFailure(f"{conn.host.name}: 'date +%s.%N' said {out!r}") from exc
        sample = (after - before, remote - (before + after) / 2)
        if best is None or sample[0] < best[0]:
            best = sample
    assert best is not None
    return {"offset_s": round(best[1], 6), "bound_s": round(best[0] / 2, 6)}


def record(path: Path, moment: str, offsets: Mapping[str, Mapping[str, float]]) -> None:
    """Add one moment's offsets ("start" or "end") to the run's clocks file."""
    data: dict[str, Any] = {}
    if path.exists():
        data = json.loads(path.read_text())
    data[moment] = {host: dict(v) for host, v in sorted(offsets.items())}
    data["large_s"] = LARGE_S
    write_json_atomic(path, data)


def large_offsets(data: Mapping[str, Any]) -> list[str]:
    """'az1-node +0.150 s at the start', ... for every offset that may reorder the timeline."""
    found = []
    for moment in ("start", "end"):
        for host, v in (data.get(moment) or {}).items():
            if abs(v["offset_s"]) - v["bound_s"] > float(data.get("large_s", LARGE_S)):
                found.append(f"{host} {v['offset_s']:+.3f} s (±{v['bound_s']:.3f}) at the {moment}")
    return found


def offsets_ns(path: Path) -> dict[str, int]:
    """Each host's offset in `path` (a run's clocks file) in ns, host clock minus harness clock: the mean of the
    moments measured (a host's stamp less it is the harness's time). {} without the file (one clock: netns,
    docker) or when it cannot be read; a host without a readable measurement is left out."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    seen: dict[str, list[float]] = {}
    for moment in ("start", "end"):
        measured = data.get(moment)
        for host, v in (measured if isinstance(measured, dict) else {}).items():
            if isinstance(v, dict) and isinstance(v.get("offset_s"), int | float):
                seen.setdefault(host, []).append(float(v["offset_s"]))
    return {host: round(sum(values) / len(values) * 1e9) for host, values in seen.items()}
