"""What at-most-once-crash and at-least-once-crash must show on any runtime, read from a run's history: each
count comes from the mechanism its commit mode promises. tests/workloads/test_group_crash_cluster.py (netns) and
tests/docker/test_docker_group_crash.py (docker) hold their runs to it.

Every skipped record of the at-most-once group lies below a commit its member made and was killed right after, in
the processing time before it recorded the poll; every record the at-least-once group was handed twice was first
handed to a member killed in the processing time after it recorded the poll and before it committed past the
record.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from tests.conftest import REPO

SCENARIOS = ("at-most-once-crash", "at-least-once-crash")
SCENARIO_FILES = tuple(str(REPO / "scenarios" / f"{n}.yaml") for n in SCENARIOS)
SLACK_NS = 200_000_000  # a SIGKILL lands within this of when the supervisor chose to send it (2 cores, loaded)


def verdict_of(run: Path) -> dict[str, Any]:
    return json.loads((run / "verdict.json").read_text())


def processing_ns(run: Path) -> int:
    """The members' processing time (the run's spec, its consumers' processing_ms), in nanoseconds."""
    (members,) = yaml.safe_load((run / "spec.yaml").read_text())["workloads"]["consumers"]
    return int(members["processing_ms"]) * 1_000_000


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
    # At 10, 20 and 30 s of each member's own clock, every member at least once; az1's next kill at 40 s may come
    # within the 40 s run where its client started first (docker starts the clients one after another).
    assert kills(run)["process"].nunique() == 3
    return commits


def assert_at_most_once_skips_what_a_killed_member_committed(run: Path) -> None:
    """at-most-once-crash's run: group-skip > 0 as information, each skip below a commit of a member killed in the
    processing time after it; no redelivered, rewound or lost-commit."""
    verdict = verdict_of(run)
    counts = verdict["counts"]
    assert counts["group-skip"] > 0 and "group-skip" not in verdict["errors"]  # information with commit before
    assert counts["redelivered"] == counts["rewound"] == counts["lost-commit"] == 0
    commits = commits_and_kills_are_recorded(run)
    killed, processing = kills(run), processing_ns(run)
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
            if ((past["process"] == process) & (answered < at) & (answered > at - processing - SLACK_NS)).any()]
        assert killed_in_processing, (example, killed, past)


def assert_at_least_once_repeats_what_a_killed_member_had_not_committed(run: Path) -> None:
    """at-least-once-crash's run: redelivered > 0 (never an error), each repeat first handed to a member killed in
    the processing time after it recorded the poll, or whose commit was refused; no group-skip, rewound or
    lost-commit."""
    verdict = verdict_of(run)
    counts = verdict["counts"]
    assert counts["redelivered"] > 0 and "redelivered" not in verdict["errors"]  # never an error
    assert counts["group-skip"] == counts["rewound"] == counts["lost-commit"] == 0
    commits = commits_and_kills_are_recorded(run)
    killed, processing = kills(run), processing_ns(run)
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
                      & (killed["at"] < first["poll_ns"] + processing + SLACK_NS)]
        assert len(dead) == 1 or (mine["status"] == "fail").any(), (example, killed, mine)
