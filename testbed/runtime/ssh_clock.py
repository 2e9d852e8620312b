"""Each ssh host's clock against the harness's: measured at the start and the end of a run, bounded by the round trip.

A sample asks the host for `date +%s.%N` and takes the harness's clock before
and after: the host's reading was taken somewhere in between, so the offset is
known to within half the round trip. The best (shortest) of SAMPLES round
trips is kept. Workloads stamp events with their own host's clock, so an
offset larger than LARGE_S can reorder events of different hosts in the
timeline; `large_offsets` names them for the report, and `host_clocks` gives what moves a host's log stamps onto
the harness's clock (the expectations' log windows, the report's excerpts): between the start's and the end's
measurement the offset is interpolated, so a host whose clock drifts during the run is followed.
Must never: change a host's clock.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from testbed.errors import RuntimeFailure
from testbed.files import write_json_atomic

if TYPE_CHECKING:  # only a type here: the report reads clocks.json without the ssh extra (paramiko)
    from testbed.runtime.ssh_conn import SshConnection

SAMPLES = 5
LARGE_S = 0.010  # beyond this (after the round-trip bound), events of two hosts may be drawn in the wrong order


def measure(conn: SshConnection) -> dict[str, float]:
    """{"offset_s": host clock minus harness clock, "bound_s": the offset's uncertainty (half the round trip),
    "at_s": when it was measured, by the harness's clock (the kept sample's midpoint)}."""
    best: tuple[float, float, float] | None = None  # (round trip, offset, midpoint)
    for _ in range(SAMPLES):
        before = time.time()
        out = conn.check("date +%s.%N").strip()
        after = time.time()
        try:
            remote = float(out)
        except ValueError as exc:
            raise RuntimeFailure(f"{conn.host.name}: 'date +%s.%N' said {out!r}") from exc
        sample = (after - before, remote - (before + after) / 2, (before + after) / 2)
        if best is None or sample[0] < best[0]:
            best = sample
    assert best is not None
    return {"offset_s": round(best[1], 6), "bound_s": round(best[0] / 2, 6), "at_s": round(best[2], 6)}


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


@dataclass(frozen=True)
class HostClock:
    """One host's clock over a run: (harness time ns, host clock minus harness clock ns) at each measured moment,
    in time order. Between two moments the offset is interpolated; before the first and after the last it is held.
    A moment without its time (a clocks file written before "at_s") makes it one offset, the moments' mean."""

    points: tuple[tuple[int, int], ...]

    def harness_ns(self, stamp_ns: int) -> int:
        """A host stamp on the harness's clock. Between two moments the host's clock ran from t0 + o0 to t1 + o1
        while the harness's ran from t0 to t1, so a stamp maps in proportion."""
        (t0, o0), (t1, o1) = self.points[0], self.points[-1]
        h0, h1 = t0 + o0, t1 + o1
        if stamp_ns <= h0 or h1 <= h0:
            return stamp_ns - o0
        if stamp_ns >= h1:
            return stamp_ns - o1
        return t0 + round((stamp_ns - h0) * (t1 - t0) / (h1 - h0))


SAME_CLOCK = HostClock(((0, 0),))  # a host on the harness's own clock (netns, docker; a host not measured)


def host_clocks(path: Path) -> dict[str, HostClock]:
    """Each host's clock in `path` (a run's clocks file). {} without the file (one clock: netns, docker) or when it
    cannot be read; a host without a readable measurement is left out (callers use SAME_CLOCK)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    seen: dict[str, list[tuple[float | None, float]]] = {}
    for moment in ("start", "end"):
        measured = data.get(moment)
        for host, v in (measured if isinstance(measured, dict) else {}).items():
            if isinstance(v, dict) and isinstance(v.get("offset_s"), int | float):
                at = v.get("at_s")
                seen.setdefault(host, []).append((float(at) if isinstance(at, int | float) else None,
                                                  float(v["offset_s"])))
    clocks = {}
    for host, moments in seen.items():
        timed = [(round(at * 1e9), round(o * 1e9)) for at, o in moments if at is not None]
        if len(timed) == len(moments):
            clocks[host] = HostClock(tuple(sorted(timed)))
        else:
            clocks[host] = HostClock(((0, round(sum(o for _, o in moments) / len(moments) * 1e9)),))
    return clocks
