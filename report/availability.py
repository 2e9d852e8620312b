"""The report's availability table: per fault and AZ, how long writes went unacknowledged (from the verdict).

Rows come from the verdict's ``availability`` key (checkers.availability computes them from the
history); this module only words them for the page. A verdict without the key (an older run)
gives no rows and the section says so.
Must never: compute availability itself or read anything but the verdict it is handed.
"""

from __future__ import annotations

from typing import Any

from report import fmt


def _seconds(value: Any) -> str:
    return "never" if value is None else f"{float(value):.3f} s"


def availability_rows(verdict: dict[str, Any] | None, t0: int) -> list[dict[str, Any]]:
    """One row per fault and AZ, in the verdict's order, worded for the template."""
    rows = (verdict or {}).get("availability") or []
    out = []
    for r in rows:
        if not isinstance(r, dict):
            continue
        stop = r.get("stop_ns")
        out.append({
            "fault": f"{r.get('fault')} {fmt.targets(r.get('targets'))}".strip(),
            "window": f"{fmt.rel(r.get('start_ns'), t0)} – {fmt.rel(stop, t0) if stop is not None else 'end'}",
            "az": r.get("az"),
            "targeted": bool(r.get("targeted")),
            "acks_during": fmt.count(r.get("acks_during")),
            "first_ack": _seconds(r.get("first_ack_after_start_s")),
            "longest_gap": _seconds(r.get("longest_gap_s")),
            "after_heal": "—" if stop is None else _seconds(r.get("first_ack_after_heal_s")),
        })
    return out
