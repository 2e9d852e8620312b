"""On a real cluster (make test-operations): scenarios/versions/rolling-upgrade-kraft.yaml, a KRaft cluster rolled from
3.7.2 to 3.9.1 with metadata.version raised at the end, and one rolled up with it left at 3.7-IV4, then back to 3.7.2
(the level already the older release's: journaled unchanged), and one raised then lowered, every metadata log
waited for to snapshot past the lowering before anything rolls back. Each run is held to its spec's expectation (the harness's exit status: nothing acknowledged lost, each node's
start line on the new version, the active controller's metadata.version line), and to the mechanism here: the
journal's order of steps and the level the cluster named before and after."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import run_passing

pytestmark = [pytest.mark.cluster, pytest.mark.operations]
SPEC = "scenarios/versions/rolling-upgrade-kraft.yaml"


def steps(folder: Path, fault: str) -> tuple[list[tuple[str, int]], dict[str, object]]:
    """The operation's (role, broker) steps in order, and its metadata.version row's detail."""
    nemesis = pd.read_parquet(folder / "history" / "nemesis.parquet")
    rows = nemesis[(nemesis["fault"] == fault) & (nemesis["type"] == "info")].sort_values("time_ns")
    targets = [json.loads(t) for t in rows["targets"]]
    details = [json.loads(d) for d in rows["detail"]]
    rolled = [(t["role"], t["brokers"][0]) for t in targets if "version" in t]
    (metadata,) = [d for t, d in zip(targets, details, strict=True) if "level" in t]
    return rolled, metadata


@pytest.mark.parametrize(("configuration", "fault", "first", "levels"), [
    ("upgrade", "rolling-upgrade", "controller", ("3.7-IV4", "3.9-IV0")),
    ("downgrade", "rolling-downgrade", "broker", ("3.7-IV4", "3.7-IV4")),
    ("raised-and-lowered", "rolling-downgrade", "broker", ("3.9-IV0", "3.7-IV4")),
])
def test_a_kraft_roll_changes_every_process_and_metadata_version(tmp_path: Path, configuration: str, fault: str,
                                                                 first: str, levels: tuple[str, str]) -> None:
    folder, _ = run_passing(SPEC, tmp_path, configuration=configuration)
    rolled, metadata = steps(folder, fault)
    assert [r for r, _ in rolled] == [first] * 3 + [{"controller": "broker", "broker": "controller"}[first]] * 3
    assert sorted(b for _, b in rolled[:3]) == [0, 1, 2]
    assert (metadata["before"], metadata["finalized"]) == levels
    if fault == "rolling-downgrade" and levels[0] != levels[1]:  # lowered: every metadata log snapshotted past it
        past, found = metadata["snapshot_past"], metadata["snapshots"]
        assert isinstance(past, int) and isinstance(found, dict) and len(found) == 6, metadata
        assert all(end is not None and end >= past for end in found.values()), metadata
    else:
        assert "snapshots" not in metadata
    manifest = json.loads((folder / "run.json").read_text())
    want = "3.9.1" if fault == "rolling-upgrade" else "3.7.2"
    assert {lane: steps_[-1]["version"] for lane, steps_ in manifest["node_versions"].items()} == {
        f"az{i}-node{r}": want for i in (1, 2, 3) for r in ("", "/controller")}
