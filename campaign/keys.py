"""The one check of a campaign file's mappings: only known keys, each error naming the key's path.
Must never: read a file or look at a value's contents (the callers do)."""

from __future__ import annotations

from typing import Any

from harness.spec_types import fail


def check_keys(where: str, raw: Any, allowed: set[str]) -> dict[str, Any]:
    """`raw` as a mapping of `allowed` keys; SpecError naming `where` (and the key) otherwise."""
    if not isinstance(raw, dict):
        raise fail(where, f"must be a mapping, got {type(raw).__name__}")
    for key in raw:
        if key not in allowed:
            raise fail(f"{where}.{key}", f"unknown key (allowed: {', '.join(sorted(allowed))})")
    return raw
