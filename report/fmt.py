"""How the report writes times, targets and values: one place, so every table agrees.

Times in the report are seconds since the run's first recorded event (t0),
with the absolute UTC time beside them where a person may want to grep a
broker log for it.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

NS = 1_000_000_000


def seconds_since(ns: int, t0: int) -> float:
    """``ns`` as seconds since ``t0``, rounded to the millisecond (plots need no more; bytes stay stable)."""
    return round((ns - t0) / NS, 3)


def rel(ns: int | None, t0: int) -> str:
    """"+12.345 s" (or an em dash for no time)."""
    if ns is None:
        return "—"
    return f"{'+' if ns >= t0 else '−'}{abs(ns - t0) / NS:.3f} s"


def utc(ns: int | None) -> str:
    """"2026-11-01 12:00:05.123 UTC"."""
    if ns is None:
        return "—"
    stamp = datetime.fromtimestamp(ns // NS, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
    return f"{stamp}.{(ns % NS) // 1_000_000:03d} UTC"


def duration(ns: int | None) -> str:
    """"12.3 s", "4 min 05 s"."""
    if ns is None:
        return "—"
    seconds = ns / NS
    if seconds < 120:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(round(seconds)), 60)
    return f"{minutes} min {rest:02d} s"


def targets(value: Any) -> str:
    """A nemesis ``targets`` cell as a short label: "az1", "broker-0 ↮ broker-1", "links=[…]"."""
    if value is None or value == "" or value == [] or value == {}:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return ", ".join(targets(v) if isinstance(v, list | dict) else str(v) for v in value)
    if isinstance(value, dict):
        return "; ".join(f"{k}={targets(v) if isinstance(v, list | dict) else v}" for k, v in sorted(value.items()))
    return str(value)


def compact(value: Any) -> str:
    """Any JSON value on one line, keys sorted."""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(", ", ": "))


def count(n: Any) -> str:
    """12345 as "12,345"; None as an em dash."""
    if n is None:
        return "—"
    if isinstance(n, int | float):
        return f"{n:,}"
    return str(n)


def percent(part: Any, whole: Any) -> str:
    if not isinstance(part, int | float) or not isinstance(whole, int | float) or whole <= 0:
        return ""
    return f"{100 * part / whole:.1f}%"
