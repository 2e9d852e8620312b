"""Contract v3 (consumer groups) by the pandas engine, the reference; in JSONL and Parquet.

The Spark engine runs the same cases in test_groups_spark.py and must agree with these verdicts.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from checkers import check
from checkers.anomalies import V3_ANOMALIES
from checkers.errors import HistoryError
from tests.checkers.cases import CASES
from tests.checkers.group_cases import GROUP_CASES, cm, final
from tests.checkers.histories import write

FORMATS = ["jsonl", "parquet"]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", sorted(GROUP_CASES))
def test_hand_worked_v3_counts(tmp_path: Path, name: str, fmt: str) -> None:
    case = GROUP_CASES[name]
    verdict = check(write(tmp_path, case.tables(), fmt), engine="pandas")
    assert verdict["counts"] == case.expected_counts()
    assert verdict["errors"] == case.errors
    assert verdict["valid"] is (not case.errors)


def test_every_v3_anomaly_has_a_case() -> None:
    covered = {name for case in GROUP_CASES.values() for name, n in case.counts.items() if n}
    assert set(V3_ANOMALIES) <= covered


def test_examples_lead_to_the_group_member_commit_and_reads(tmp_path: Path) -> None:
    rewound = check(write(tmp_path / "rw", GROUP_CASES["rewound"].tables()), engine="pandas")["examples"]["rewound"]
    first = rewound[0]  # m4's read of v1 at offset 1 (sort key: group, topic, partition, offset)
    assert (first["group"], first["process"], first["value"], first["offset"]) == ("g", "m4", "v1", 1)
    assert first["commit"]["process"] == "m1" and first["commit"]["offset"] == 4  # m4's own 8 was refused
    assert [r["process"] for r in first["reads"]] == ["m1", "m4"] and first["classified"] == "error"
    skip = check(write(tmp_path / "gs", GROUP_CASES["group-skip-before"].tables()), engine="pandas")["examples"]
    v3 = skip["group-skip"][0]
    assert (v3["value"], v3["process"], v3["committed"]["offset"], v3["classified"]) == ("v3", "m1", 10, "info")
    assert (v3["commit"]["process"], v3["commit"]["offset"]) == ("m1", 5)  # the first acknowledged commit past 3
    lost = check(write(tmp_path / "lc", GROUP_CASES["lost-commit"].tables()), engine="pandas")["examples"]
    assert [(e["partition"], e["offset"], e["commit"]["offset"]) for e in lost["lost-commit"]] == [(0, 3, 6),
                                                                                                   (1, None, 2)]


def test_stats_count_the_members_commits(tmp_path: Path) -> None:
    stats = check(write(tmp_path, GROUP_CASES["clean-group"].tables()), engine="pandas")["stats"]
    assert (stats["commits"], stats["commits_ok"]) == (4, 3)  # the final row is not a commit; one info


def test_a_group_without_a_final_row_is_unknown_naming_it(tmp_path: Path) -> None:
    tables = GROUP_CASES["rewound"].tables()
    tables["commits"] = [*tables["commits"], cm(3, "x", 100, group="other")]
    verdict = check(write(tmp_path, tables), engine="pandas")
    assert verdict["valid"] == "unknown" and verdict["errors"] == {}
    assert "group 'other'" in verdict["reason"] and verdict["counts"]["rewound"] == 2


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(("row", "column", "words"), [
    ({"status": "fail"}, "status", "a final row is always ok"),
    ({"kind": "manual"}, "kind", "'manual' is not one of"),
    ({"status": "maybe"}, "status", "'maybe' is not one of"),
])
def test_a_bad_final_row_is_malformed(tmp_path: Path, fmt: str, row: dict[str, str], column: str,
                                      words: str) -> None:
    tables = GROUP_CASES["clean-group"].tables()
    tables["commits"] = [*tables["commits"][:-1], {**tables["commits"][-1], **row}]
    with pytest.raises(HistoryError, match=rf"commits\.{fmt}.*column '{column}'.*{words}"):
        check(write(tmp_path, tables, fmt), engine="pandas")


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_null_commit_offset_and_a_second_final_row_are_malformed(tmp_path: Path, fmt: str) -> None:
    tables = GROUP_CASES["clean-group"].tables()
    null = {**tables, "commits": [*tables["commits"], cm(None, "m1", 400)]}
    with pytest.raises(HistoryError, match=r"column 'offset'.*row 6 \(process='m1'.*a sync commit needs an offset"):
        check(write(tmp_path / "null", null, fmt), engine="pandas")
    twice = {**tables, "commits": [*tables["commits"], final(5)]}
    with pytest.raises(HistoryError, match=r"column 'kind'.*second final row for group 'g', topic 't', partition 0"):
        check(write(tmp_path / "twice", twice, fmt), engine="pandas")
    # malformed wins over unknown: a group without its final row as well
    both = {**tables, "commits": [*twice["commits"], cm(3, "x", 100, group="other")]}
    with pytest.raises(HistoryError):
        check(write(tmp_path / "both", both, fmt), engine="pandas")


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_history_without_group_commits_keeps_its_counts_and_bytes(tmp_path: Path, name: str) -> None:
    """No commits table: every v3 count 0 and nothing else changes (the stats gain no key). An empty one: the
    same counts, and the stats say it held 0 commits."""
    case = CASES[name]
    plain = check(write(tmp_path / "v1", case.tables()), engine="pandas")
    assert all(plain["counts"][n] == 0 for n in V3_ANOMALIES) and "commits" not in plain["stats"]
    assert plain["counts"] == case.expected_counts() and plain["errors"] == case.errors
    empty = check(write(tmp_path / "empty", {**case.tables(), "commits": []}), engine="pandas")
    assert empty["counts"] == plain["counts"] and empty["valid"] == plain["valid"]
    assert empty["examples"] == plain["examples"]
    assert empty["stats"] == {**plain["stats"], "commits": 0, "commits_ok": 0}


def test_poll_skip_of_a_group_reader_is_an_error_without_group_commits(tmp_path: Path) -> None:
    """The restated rule needs a commits row: the same jump with no commits table is an error (v1 rule)."""
    tables = GROUP_CASES["member-without-row"].tables()
    del tables["commits"]
    verdict = check(write(tmp_path, tables), engine="pandas")
    assert verdict["counts"]["poll-skip"] == 1 and verdict["errors"] == {"poll-skip": 1}


def test_an_examples_commit_is_the_first_in_commit_order() -> None:
    """The commit an example names (checkers.group_examples): the first acknowledged one past the record by
    completion (an uncompleted one after every completed one), then invocation and process; for rewound,
    completed strictly before the read; for lost-commit, the first of the greatest offset."""
    import pyarrow as pa

    from checkers import group_examples as ge
    from checkers.engine import Evidence
    from checkers.example_builders import EvidenceIndex
    from checkers.group_terms import GroupTerms
    from checkers.schema import arrow_schema

    rows = [cm(9, "m3", 50, done_ms=None), cm(7, "m2", 10, done_ms=30), cm(7, "m1", 10, done_ms=30),
            cm(9, "m1", 5, done_ms=40), cm(3, "m1", 1, done_ms=2), cm(9, "m4", 60, status="fail"),
            cm(8, "m2", 70, partition=1)]
    table = pa.Table.from_pylist(rows, schema=arrow_schema("commits"))
    idx = EvidenceIndex(Evidence(writes=[], reads=[]), groups=GroupTerms(commits=table, finals=table.slice(0, 0)))
    inst = {"value": "v", "group": "g", "topic": "t", "partition": 0, "offset": 5, "process": "m1", "seq": 1,
            "poll_ns": rows[3]["complete_ns"]}
    assert ge.group_skip(inst, idx)[0]["commit"]["process"] == "m1"  # (30 ms, m1) before (30 ms, m2)
    assert ge.group_skip(inst, idx)[0]["commit"]["offset"] == 7
    assert ge.rewound({**inst, "offset": 7}, idx)[0]["commit"] is None  # 9 completed at 40 ms, not before it
    assert ge.rewound({**inst, "offset": 7, "poll_ns": inst["poll_ns"] + 1}, idx)[0]["commit"]["offset"] == 9
    best = ge.lost_commit(inst, idx)[0]["commit"]
    assert (best["process"], best["offset"]) == ("m1", 9)  # completed (40 ms) before the uncompleted m3
