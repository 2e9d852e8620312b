"""The lake's `commits` rows: contract columns as they are, seconds since t0, latency, the faults during each."""

from __future__ import annotations

import pyarrow as pa

from checkers.schema import arrow_schema
from spark_analysis import lake_tables as s
from spark_analysis.lake_commits import commit_rows

NS, MS = 1_000_000_000, 1_000_000
T0 = 1_700_000_000 * NS
KEY = {"run_id": "r", "scenario": "sc", "day": "2023-11-14"}
WINDOWS = [(T0 + 5 * NS, T0 + 8 * NS, "isolate-az az1"), (T0 + 2 * NS, T0 + 3 * NS, "kill-member consumer-az2-0"),
           (T0 + 9 * NS, None, "pause-coordinator")]


def _commit(invoke: int, complete: int | None, kind: str = "sync", status: str = "ok") -> dict[str, object]:
    return {"process": "consumer-az1-0", "group": "g", "kind": kind, "topic": "t", "partition": 0, "offset": 7,
            "status": status, "error": None if status == "ok" else "REQUEST_TIMED_OUT", "invoke_ns": invoke,
            "complete_ns": complete, "az": "az1"}


def test_each_commit_gets_its_times_latency_and_the_faults_active_between_invoke_and_outcome() -> None:
    history = [_commit(T0 + NS, T0 + NS + 2 * MS),  # before every fault
               _commit(T0 + 2 * NS + 5, T0 + 6 * NS, status="info"),  # spans the kill, into the isolation
               _commit(T0 + 8 * NS, None, status="info"),  # no outcome: the instant of its invocation, a stop's edge
               _commit(T0 + 10 * NS, T0 + 10 * NS, kind="final")]  # a fault never stopped
    commits = pa.Table.from_pylist(history, schema=arrow_schema("commits"))
    rows = commit_rows(KEY, commits, WINDOWS, T0)
    assert [{k: r[k] for k in commits.column_names} for r in rows] == history
    assert [r["faults"] for r in rows] == [None, "kill-member consumer-az2-0,isolate-az az1", "isolate-az az1",
                                           "pause-coordinator"]
    assert [(r["invoke_s"], r["complete_s"], r["latency_ms"]) for r in rows] == [
        (1.0, 1.002, 2.0), (2.0, 6.0, 4000.0), (8.0, None, None), (10.0, 10.0, 0.0)]
    assert pa.Table.from_pylist(rows, schema=s.COMMITS).num_rows == 4  # the lake's schema takes them
