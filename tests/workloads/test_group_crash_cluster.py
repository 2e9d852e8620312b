"""scenarios/at-most-once-crash.yaml and at-least-once-crash.yaml on a real cluster: group members SIGKILLed while they
consume, judged by contract v3 (about 2.5 minutes for both on 2 cores, in one harness process).

Both scenarios' expectations must hold (the harness exits 0), and each count must come from the mechanism the
commit mode promises, read from the history: every skipped record of the at-most-once group lies below a commit its
member made and was killed right after, in the processing time before it recorded the poll; every record the
at-least-once group was handed twice was first handed to a member killed in the processing time after it recorded
the poll and before it committed past the record.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.conftest import REPO, faultline

pytestmark = pytest.mark.cluster

PROCESSING_NS = 400_000_000  # the scenarios' processing_ms
SLACK_NS = 200_000_000  # a SIGKILL lands within this of when the supervisor chose to send it (2 cores, loaded)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    results = tmp_path_factory.mktemp("groups")
    names = ("at-most-once-crash", "at-least-once-crash")
    proc = faultline("run", *(str(REPO / "scenarios" / f"{n}.yaml") for n in names), "--results", str(results),
                     timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]  # both configurations' expectations held
    return {n: (results / n / "latest").resolve() for n in names}


def verdict_of(run: Path) -> dict[str, Any]:
    return json.loads((run / "verdict.json").read_text())


def kills(run: Path) -> pd.DataFrame:
    """The supervisors' kills: the killed process and when the kill came."""
    nemesis = pd.read_parquet(run / "history" / "nemesis.parquet").query("fault == 'kill-client' and type == 'start'")
    return pd.DataFrame({"process": [json.loads(t)["processes"][0] for t in nemesis["targets"]],
                         "at": nemesis["time_ns"].to_numpy()})


def commits_and_kills_are_recorded(run: Path) -> pd.DataFrame:
    """The run's commits table, once its final rows and its kills are as the scenario makes them."""
    commits = pd.read_parquet(run / "history" / "commits.parquet")
    final = commits[commits["kind"] == "final"]
    assert sorted(final["partition"]) == [0, 1, 2] and (final["status"] == "ok").all() and final["offset"].notna().all()
    assert (commits.loc[commits["kind"] == "sync", "status"] == "ok").sum() > 0
    assert len(kills(run)) == 3  # at 6, 16 and 26 s, each member once
    return commits


def test_at_most_once_skips_what_a_killed_member_had_committed_and_not_processed(runs: dict[str, Path]) -> None:
    run = runs["at-most-once-crash"]
    verdict = verdict_of(run)
    counts = verdict["counts"]
    assert counts["group-skip"] > 0 and "group-skip" not in verdict["errors"]  # information with commit before
    assert counts["redelivered"] == counts["rewound"] == counts["lost-commit"] == 0
    commits_and_kills_are_recorded(run)
    commits = commits_and_kills_are_recorded(run)
    killed = kills(run)
    reads = pd.read_parquet(run / "history" / "reads.parquet").query("phase == 'live'")
    for example in verdict["examples"]["group-skip"]:
        assert example["value"] not in set(reads["value"])  # handed to no member
        assert example["commit"]["status"] == "ok" and example["commit"]["offset"] > example["offset"], example
        # A member committed past the record (acknowledged, or with no answer before it died) and was killed in the
        # processing time that followed, before it recorded the poll.
        past = commits[(commits["kind"] == "sync") & (commits["status"] != "fail")
                       & (commits["partition"] == example["partition"]) & (commits["offset"] > example["offset"])]
        answered = past["complete_ns"].fillna(past["invoke_ns"])
        killed_in_processing = [
            process for process, at in zip(killed["process"], killed["at"], strict=True)
            if ((past["process"] == process) & (answered < at) & (answered > at - PROCESSING_NS - SLACK_NS)).any()]
        assert killed_in_processing, (example, killed, past)


def test_at_least_once_hands_again_what_a_killed_member_had_processed_and_not_committed(
        runs: dict[str, Path]) -> None:
    run = runs["at-least-once-crash"]
    verdict = verdict_of(run)
    counts = verdict["counts"]
    assert counts["redelivered"] > 0 and "redelivered" not in verdict["errors"]  # never an error
    assert counts["group-skip"] == counts["rewound"] == counts["lost-commit"] == 0
    commits = commits_and_kills_are_recorded(run)
    killed = kills(run)
    for example in verdict["examples"]["redelivered"]:
        assert len(example["reads"]) >= 2, example
        first, again = sorted(example["reads"], key=lambda r: r["poll_ns"])[:2]
        mine = commits[(commits["process"] == first["process"]) & (commits["partition"] == example["partition"])
                       & (commits["offset"] > example["offset"]) & (commits["invoke_ns"] > first["poll_ns"])
                       & (commits["invoke_ns"] < again["poll_ns"])]
        # Its first reader never had a commit past it acknowledged before the record was handed again...
        assert not (mine["status"] == "ok").any(), (example, mine)
        # ... because it was killed in the processing time after it recorded the poll, or its commit was refused.
        dead = killed[(killed["process"] == first["process"]) & (killed["at"] > first["poll_ns"])
                      & (killed["at"] < first["poll_ns"] + PROCESSING_NS + SLACK_NS)]
        assert len(dead) == 1 or (mine["status"] == "fail").any(), (example, killed, mine)
