"""The report's view of `replicas.json`: what each broker held on disk, and where replicas or the final log differ.

Lenient like the rest of the report: a missing file means the run predates
replica dumps (no section), an unreadable one is a problem line, never a crash.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from report.loaded_run import load_json_object
from testbed.runfolder import RunFolder


@dataclass
class ReplicaView:
    """`state`: "agree", "differ" or "error"; one row per partition and node, differences as text."""

    state: str
    final_checked: bool = False
    error: str = ""
    rows: list[dict[str, Any]] = field(default_factory=list)
    differences: list[str] = field(default_factory=list)
    snapshots: list[dict[str, Any]] = field(default_factory=list)


def read_replicas(run_dir: Path, problems: list[str]) -> ReplicaView | None:
    data = load_json_object(RunFolder(run_dir).replicas, problems)
    if data is None:
        return None
    if "error" in data:
        return ReplicaView("error", error=str(data["error"]))
    partitions = data.get("partitions") or []
    final_checked = "final_matches" in data
    differs = not data.get("agree", True) or data.get("final_matches") is False
    view = ReplicaView("differ" if differs else "agree", final_checked)
    for part in partitions:
        view.rows += [_row(part, node, rep, final_checked) for node, rep in sorted(part.get("replicas", {}).items())]
        view.differences += _differences(part)
    view.snapshots = [row for snap in data.get("snapshots") or [] for row in _snapshot_rows(snap)]
    return view


def _snapshot_rows(snap: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per partition and node of a before-heal snapshot, with what of it is gone by the end."""
    if snap.get("error"):
        return [{"label": snap.get("label"), "partition": "", "node": "", "records": "", "offsets": "",
                 "epochs": "", "gone": "", "examples": f"not dumped: {snap['error']}"}]
    rows = []
    for part in snap.get("partitions", []):
        for node, rep in sorted(part.get("nodes", {}).items()):
            examples = ", ".join(f"{e.get('value')}@{e.get('offset')}" for e in rep.get("gone_examples", [])[:3])
            rows.append({"label": snap.get("label"), **_held(part, node, rep), "gone": rep.get("gone", 0),
                         "examples": examples})
    return rows


def _held(part: dict[str, Any], node: str, rep: dict[str, Any]) -> dict[str, Any]:
    """What one replica held: its records, offset span and leader epochs, as table cells."""
    first, last = rep.get("first_offset"), rep.get("last_offset")
    return {"partition": part.get("partition"), "node": node, "records": rep.get("records", 0),
            "offsets": "—" if first is None else f"{first}–{last}",
            "epochs": ", ".join(str(e) for e in rep.get("leader_epochs", []))}


def _row(part: dict[str, Any], node: str, rep: dict[str, Any], final_checked: bool) -> dict[str, Any]:
    return {
        **_held(part, node, rep),
        "invalid": rep.get("invalid_batches", 0),
        "agree": bool(part.get("agree", True)),
        "not_in_final": part.get("not_in_final") if final_checked else None,
        "final_not_on_disk": part.get("final_not_on_disk") if final_checked else None,
    }


def _differences(part: dict[str, Any]) -> list[str]:
    where = f"{part.get('topic')}-{part.get('partition')}"
    out = []
    for ex in part.get("examples", []):
        held = ", ".join(f"{node}: {value}" for node, value in sorted(ex.get("values", {}).items()))
        out.append(f"{where} offset {ex.get('offset')}: {held}")
    if not part.get("same_end", True):
        ends = ", ".join(f"{n}: {r.get('last_offset')}" for n, r in sorted(part.get("replicas", {}).items()))
        out.append(f"{where}: replicas end at different offsets ({ends})")
    if part.get("not_in_final"):
        out.append(f"{where}: {part['not_in_final']} offsets on every replica never read by the final drain, "
                   f"e.g. {', '.join(str(o) for o in part.get('not_in_final_examples', [])[:5])}")
    if part.get("final_not_on_disk"):
        out.append(f"{where}: {part['final_not_on_disk']} offsets read by the final drain with a value no replica "
                   f"holds there, e.g. {', '.join(str(o) for o in part.get('final_not_on_disk_examples', [])[:5])}")
    return out
