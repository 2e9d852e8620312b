"""The verdict document of spec/history.md and how it is written.

``valid`` is true, false or "unknown"; false exactly when ``errors`` is not
empty. "unknown" carries a ``reason``: no final reads (the drain never
completed), a history with transactions and no final read by a read_committed
process (contract v2), a group with commits and no final row (contract v3), or an engine that failed; then ``errors`` is empty and nothing
is judged. The file is written atomically (temp file, then rename), so a
reader never sees half a verdict.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from checkers.anomalies import REGISTRY, Registry
from checkers.engine import Analysis

VERDICT_FILE = "verdict.json"
EXIT_VALID, EXIT_INVALID, EXIT_UNKNOWN, EXIT_FAILED = 0, 1, 2, 3
EXIT_INCONCLUSIVE = 4  # a run whose expectation's precondition was never shown: neither passed nor failed

# What a run showed against its scenario's expectation (the verdict's ``expectation``): everything it expected
# (PASSED), something else (FAILED), or nothing it can be judged by, a precondition's evidence missing (INCONCLUSIVE).
PASSED, FAILED, INCONCLUSIVE = "passed", "failed", "inconclusive"
# A run's outcome against that expectation (the manifest's `outcome`, the lake's runs.outcome, a campaign attempt's):
# PASS, FAIL, ERROR (no verdict to judge) or INCONCLUSIVE (neither passed nor failed). Every tally of them counts all.
RUN_OUTCOMES = ("PASS", "FAIL", "ERROR", "INCONCLUSIVE")

NO_FINAL_READS = "no final reads: the final drain never completed, so nothing can be judged"
NO_COMMITTED_VIEW = ("the history has transactions but no final read by a read_committed process: the committed "
                     "view of the log was never drained, so nothing can be judged")


def assemble(engine: str, analysis: Analysis, examples: dict[str, list[dict[str, Any]]],
             registry: Registry = REGISTRY, unknown: str | None = None) -> dict[str, Any]:
    """The verdict of one analysed history (its counts and errors: those of ``registry``'s anomalies); ``unknown``:
    why the small tables cannot support one (contract v3: a group's committed offsets never drained), after the
    reasons of the final reads."""
    errors = {name: analysis.errors[name] for name in registry.names if analysis.errors.get(name, 0) > 0}
    valid: bool | str = not errors
    reason = None
    if analysis.stats.get("final_reads", 0) == 0:
        valid, errors, reason = "unknown", {}, NO_FINAL_READS
    elif analysis.stats.get("transactions", 0) > 0 and analysis.stats.get("read_committed_final_reads", 0) == 0:
        valid, errors, reason = "unknown", {}, NO_COMMITTED_VIEW
    elif unknown is not None:
        valid, errors, reason = "unknown", {}, unknown
    verdict: dict[str, Any] = {
        "valid": valid,
        "engine": engine,
        "counts": {name: int(analysis.counts.get(name, 0)) for name in registry.names},
        "errors": errors,
        "examples": examples,
        "stats": analysis.stats,
    }
    if reason:
        verdict["reason"] = reason
    return verdict


def failed(engine: str, exc: BaseException) -> dict[str, Any]:
    """The "unknown" verdict of an engine that raised ``exc``: nothing counted, nothing judged."""
    text = str(exc).strip().splitlines()
    reason = f"{engine} engine failed: {type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")
    return {
        "valid": "unknown",
        "engine": engine,
        "counts": dict.fromkeys(REGISTRY.names),
        "errors": {},
        "examples": {},
        "stats": {},
        "reason": reason,
    }


def exit_status(verdict: dict[str, Any]) -> int:
    """0 valid, 1 invalid, 2 unknown."""
    if verdict["valid"] is True:
        return EXIT_VALID
    return EXIT_INVALID if verdict["valid"] is False else EXIT_UNKNOWN


def expectation_state(expectation: dict[str, Any] | None) -> str | None:
    """PASSED, FAILED or INCONCLUSIVE for a verdict's ``expectation`` (None where there is none). A run is
    inconclusive when its expectation lists a missing precondition (``inconclusive``) and nothing failed it."""
    if not isinstance(expectation, dict):
        return None
    if expectation.get("passed") is True:
        return PASSED
    return INCONCLUSIVE if expectation.get("inconclusive") else FAILED


def dumps(verdict: dict[str, Any]) -> str:
    """The verdict's bytes: stable for a given history."""
    return json.dumps(verdict, indent=2, ensure_ascii=False) + "\n"


def write_verdict(verdict: dict[str, Any], out_dir: str | Path) -> Path:
    """Write ``OUT_DIR/verdict.json`` atomically; return its path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    target = out / VERDICT_FILE
    fd, tmp = tempfile.mkstemp(prefix=".verdict-", suffix=".tmp", dir=out)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(dumps(verdict))
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes it 0600: a verdict is for anyone to read
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
