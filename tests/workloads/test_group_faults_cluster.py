"""scenarios/zombie-consumer.yaml and coordinator-failover.yaml on a real cluster (marked `groups`: `make test-groups`,
not `make test`; about 2.5 minutes a configuration on 2 cores, the consumer protocol's first run fetching Kafka 4.1.1).

Each configuration's expectation must hold (the harness exits 0), and what it rests on is read from the run's history:

- zombie-consumer: the paused member held a poll it had not committed when it was paused; its partitions were read
  by the other members while it was paused; its first commit after the resume is exactly that poll's offsets and
  was refused (`fail`) with a refusal of its group protocol.
- coordinator-failover: the fault hit the broker that coordinated the group when it fired (FindCoordinator, journaled
  in the start row); the commits in flight when it fired or made while it lasted ended `ok` or unknown (`info`, with
  an error that leaves the outcome open: never `fail`).
- coordinator-failover offsets-rf1-power-cut: every lost-commit names an acknowledged commit answered before the
  power cut, above the group's final committed offset (or there is none).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.conftest import run_passing
from workloads.classify_commit import MAYBE_STORED

pytestmark = [pytest.mark.cluster, pytest.mark.groups]

ZOMBIE = "consumer-az1-0"
REFUSALS = {"classic": {"UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION", "REBALANCE_IN_PROGRESS"},
            "consumer": {"UNKNOWN_MEMBER_ID", "STALE_MEMBER_EPOCH"}}


def table(run: Path, name: str) -> pd.DataFrame:
    return pd.read_parquet(run / "history" / f"{name}.parquet")


def rebalances(run: Path) -> list[dict[str, Any]]:
    """Every group member's journaled rebalance events (assign, revoke, lost), each with its `process`."""
    events = []
    for journal in sorted((run / "journal").glob("consumer-*.jsonl")):
        for line in journal.read_text().splitlines():
            event = json.loads(line)
            if event.get("kind") == "rebalance":
                events.append({**event, "process": journal.stem})
    return events


def fault_rows(run: Path, *faults: str) -> tuple[pd.Series, pd.Series | None]:
    """The start row of the run's first fault of these kinds, and its stop row (None: healed at the end)."""
    nemesis = table(run, "nemesis")
    rows = nemesis[nemesis["fault"].isin(faults)].sort_values("time_ns")
    start = rows[rows["type"] == "start"].iloc[0]
    stops = rows[(rows["type"] == "stop") & (rows["time_ns"] > start["time_ns"])]
    return start, (stops.iloc[0] if len(stops) else None)


@pytest.mark.parametrize("configuration, protocol", [("eager", "classic"), ("cooperative", "classic"),
                                                     ("consumer-protocol", "consumer")])
def test_zombie_consumer_commit_after_resume_is_refused(tmp_path: Path, configuration: str, protocol: str) -> None:
    run, verdict = run_passing("scenarios/zombie-consumer.yaml", tmp_path, configuration=configuration)
    counts = verdict["counts"]
    assert counts["rewound"] == counts["lost-commit"] == counts["group-skip"] == 0, counts
    config = json.loads(table(run, "processes").set_index("process").loc[ZOMBIE, "config"])
    assert config.get("group.protocol", "classic") == protocol, config
    start, stop = fault_rows(run, "pause-workload")
    assert stop is not None
    # Paused once the SIGSTOP took effect; resumed from when the nemesis began the SIGCONT (its row's time is when
    # that returned: the zombie's commit may come first, measured 0.4 ms after the invocation).
    paused, resumed = int(start["time_ns"]), int(json.loads(stop["detail"])["invoked_ns"])
    reads = table(run, "reads").query("phase == 'live'")
    mine = reads[reads["process"] == ZOMBIE]
    last_poll = mine.loc[mine["poll_ns"] < paused, "poll_ns"].max()
    held = mine[mine["poll_ns"] == last_poll].groupby("partition")["offset"].max() + 1  # what it would commit
    # Its partitions moved: another member was assigned them while it was paused (the members' journals; reading
    # them may come later: with 6 s of processing a member's 500-record poll can fill from its older partition).
    moved = {p for e in rebalances(run) if e["process"] != ZOMBIE and e["event"] == "assign"
             and paused < e["t"] < resumed for p in e["partitions"]}
    assert set(held.index) <= moved, (held, moved)
    commits = table(run, "commits")
    zombie = commits[(commits["process"] == ZOMBIE) & (commits["kind"] == "sync")]
    assert not ((zombie["invoke_ns"] > last_poll) & (zombie["invoke_ns"] < resumed)).any(), \
        "the zombie committed its held poll before the resume: the pause did not land in its processing"
    after = zombie[zombie["invoke_ns"] > resumed]
    late = after[after["invoke_ns"] == after["invoke_ns"].min()]  # one commit: its rows share invoke_ns
    assert dict(zip(late["partition"], late["offset"], strict=True)) == held.to_dict(), (late, held)
    assert (late["status"] == "fail").all() and set(late["error"]) <= REFUSALS[protocol], late


def commits_around(run: Path, start_ns: int, end_ns: int) -> pd.DataFrame:
    """The members' commits in flight at `start_ns` or asked for before `end_ns`."""
    commits = table(run, "commits")
    commits = commits[commits["kind"] != "final"]
    answered = commits["complete_ns"].fillna(end_ns + 1)
    return commits[(commits["invoke_ns"] < end_ns) & (answered > start_ns)]


def coordinator_hit(start: pd.Series) -> int:
    """The broker `group-coordinator:failover` resolved to when the fault fired, checked against what it hit."""
    targets, detail = json.loads(start["targets"]), json.loads(start["detail"])
    broker = int(detail["group_coordinators"]["failover"])
    # A process fault names its brokers; an isolation its AZ (its brokers too: the AZ's node's).
    assert targets["brokers"] == [broker] and targets.get("az", f"az{broker + 1}") == f"az{broker + 1}", targets
    return broker


@pytest.mark.parametrize("configuration, faults", [("kill", ("kill",)), ("isolate-az", ("isolate-az",)),
                                                   pytest.param("power-off", ("power-off", "power-cut"),
                                                                marks=pytest.mark.fuse)])
def test_coordinator_failover_keeps_every_acknowledged_commit(tmp_path: Path, configuration: str,
                                                             faults: tuple[str, ...]) -> None:
    run, verdict = run_passing("scenarios/coordinator-failover.yaml", tmp_path, configuration=configuration)
    counts = verdict["counts"]
    assert counts["lost-commit"] == counts["rewound"] == counts["group-skip"] == 0, counts
    start, stop = fault_rows(run, *faults)
    coordinator_hit(start)
    assert stop is not None
    during = commits_around(run, int(start["time_ns"]), int(stop["time_ns"]))
    in_flight = during[during["invoke_ns"] < start["time_ns"]]
    assert set(in_flight["status"]) <= {"ok", "info"}, in_flight
    unknown = during[during["status"] == "info"]
    assert set(unknown["error"].dropna()) <= set(MAYBE_STORED), unknown
    assert (table(run, "commits").query("kind == 'final'")["offset"].notna()).all()


@pytest.mark.fuse
def test_offsets_with_one_replica_lose_acknowledged_commits_in_a_power_cut(tmp_path: Path) -> None:
    run, verdict = run_passing("scenarios/coordinator-failover.yaml", tmp_path,
                               configuration="offsets-rf1-power-cut")
    assert verdict["counts"]["lost-commit"] > 0 and "lost-commit" in verdict["errors"]
    start, _ = fault_rows(run, "power-off", "power-cut")
    coordinator_hit(start)
    cut = int(start["time_ns"])
    for example in verdict["examples"]["lost-commit"]:
        commit = example["commit"]
        assert commit["status"] == "ok" and commit["complete_ns"] < cut, example  # acknowledged before the cut
        assert example["offset"] is None or example["offset"] < commit["offset"], example
