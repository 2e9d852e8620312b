"""Contract v2 (transactions and exactly-once) by the pandas engine, the reference; in JSONL and Parquet.

The Spark engine runs the same cases in test_txn_spark.py and must agree with these verdicts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from checkers import check
from checkers.anomalies import RESTATED, V2_ANOMALIES
from checkers.cli import main
from checkers.errors import HistoryError
from tests.checkers.cases import CASES
from tests.checkers.histories import proc, r, reads, w, write
from tests.checkers.txn_cases import TXN_CASES, tw, tx

FORMATS = ["jsonl", "parquet"]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", sorted(TXN_CASES))
def test_hand_worked_v2_counts(tmp_path: Path, name: str, fmt: str) -> None:
    case = TXN_CASES[name]
    verdict = check(write(tmp_path, case.tables(), fmt), engine="pandas")
    assert verdict["counts"] == case.expected_counts()
    assert verdict["errors"] == case.errors
    assert verdict["valid"] is (not case.errors)


def test_every_v2_anomaly_and_restated_rule_has_a_case() -> None:
    covered = {name for case in TXN_CASES.values() for name, n in case.counts.items() if n}
    assert set(V2_ANOMALIES) | set(RESTATED) <= covered


def test_stats_count_transactions_by_status(tmp_path: Path) -> None:
    case = TXN_CASES["aborted-read"]
    stats = check(write(tmp_path, case.tables()), engine="pandas")["stats"]
    assert {k: stats[k] for k in ("transactions", "committed", "aborted", "unknown")} == {
        "transactions": 4, "committed": 1, "aborted": 3, "unknown": 0}
    assert stats["read_committed_final_reads"] == 2


@pytest.mark.parametrize("name", ["lost", "poll-skip", "vanished-read", "recovered"])
def test_a_v1_history_keeps_its_v1_counts_whatever_else_it_carries(tmp_path: Path, name: str) -> None:
    """An empty transactions table, read_committed readers and null txn/source columns change no v1 count."""
    case = CASES[name]
    plain = check(write(tmp_path / "v1", case.tables()), engine="pandas")
    readers = {row["process"] for row in case.reads}
    tables = {**case.tables(), "transactions": [],
              "writes": [{**row, "txn": None, "source": None} for row in case.writes],
              "processes": [*(case.processes or []),
                            *(proc(p, "consumer", isolation_level="read_committed") for p in sorted(readers))]}
    for fmt in FORMATS:
        verdict = check(write(tmp_path / fmt, tables, fmt), engine="pandas")
        assert verdict["counts"] == plain["counts"] and verdict["valid"] == plain["valid"]
        assert verdict["stats"]["transactions"] == 0 and "read_committed_final_reads" not in verdict["stats"]


def test_no_read_committed_final_read_is_unknown_and_o_is_f(tmp_path: Path) -> None:
    """With transactions and only a read_uncommitted drain: valid is unknown; O is F, so the input read twice
    into F counts as reprocessed; unreadable needs a read_committed final read and stays 0."""
    tables = {
        "writes": [w("i", 1, offset=0, process="src", topic="in"),
                   {**tw("o1", 1, "t1", offset=0, topic="out"), "source": "i"},
                   {**tw("o2", 2, "t2", offset=1, topic="out"), "source": "i"}],
        "reads": reads(r("i", 0, topic="in"), r("o1", 0, topic="out"), r("o2", 1, topic="out")),
        "transactions": [tx("t1"), tx("t2")],
        "processes": [proc("p", "transformer", acks="all", transactional_id="p"), proc("drain", "drain")],
    }
    verdict = check(write(tmp_path, tables), engine="pandas")
    assert verdict["valid"] == "unknown" and "read_committed" in verdict["reason"]
    assert verdict["counts"]["reprocessed"] == 1 and verdict["counts"]["unreadable"] == 0
    assert verdict["errors"] == {}
    assert verdict["stats"]["read_committed_final_reads"] == 0


def test_examples_lead_to_the_transaction_and_the_read(tmp_path: Path) -> None:
    verdict = check(write(tmp_path, TXN_CASES["aborted-read"].tables()), engine="pandas")
    first = verdict["examples"]["aborted-read"][0]
    assert (first["value"], first["txn"], first["transaction"]["status"]) == ("x", "t1", "fail")
    assert first["seen"]["process"] == "c-rc" and first["classified"] == "error"
    torn = check(write(tmp_path / "torn", TXN_CASES["torn-transaction"].tables()), engine="pandas")
    example = torn["examples"]["torn-transaction"][0]
    assert (example["value"], example["txn"], example["committed_write"]["value"]) == ("b", "t1", "a")
    skipped = check(write(tmp_path / "s", TXN_CASES["skipped-input"].tables()), engine="pandas")
    assert [(e["value"], e["topic"], e["offset"]) for e in skipped["examples"]["skipped-input"]] == [("i1", "in", 1)]


def _malformed(tmp_path: Path, fmt: str, transactions: list[dict] | None) -> Path:
    tables = {"writes": [tw("a", 1, "t1", offset=0), tw("b", 2, "t2", offset=1)],
              "reads": reads(r("a", 0), r("b", 1))}
    if transactions is not None:
        tables["transactions"] = transactions
    return write(tmp_path, tables, fmt)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("engine_name", ["pandas"])
def test_a_txn_without_its_row_is_malformed(tmp_path: Path, fmt: str, engine_name: str) -> None:
    with pytest.raises(HistoryError, match=r"writes\.\w+: column 'txn'.*'t1'.*no transactions table"):
        check(_malformed(tmp_path / "none", fmt, None), engine=engine_name)
    with pytest.raises(HistoryError, match=r"writes\.\w+: column 'txn'.*'t2' has no row in .*transactions\."):
        check(_malformed(tmp_path / "one", fmt, [tx("t1")]), engine=engine_name)


def test_two_rows_of_one_transaction_are_malformed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    history = _malformed(tmp_path / "h", "jsonl", [tx("t1"), tx("t2"), tx("t1", status="fail")])
    assert main([str(history), "--out", str(tmp_path / "out"), "--engine", "pandas"]) == 3
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "transactions.jsonl: line 3" in err and "'t1'" in err
    assert not (tmp_path / "out" / "verdict.json").exists()


@pytest.mark.parametrize("bad", [{"intent": "rollback"}, {"status": "maybe"}, {"consumed": "[{\"topic\": 1}]"},
                                 {"begin_ns": None}])
def test_bad_transaction_rows_are_malformed(tmp_path: Path, bad: dict) -> None:
    history = _malformed(tmp_path, "jsonl", [tx("t1"), {**tx("t2"), **bad}])
    with pytest.raises(HistoryError, match="transactions"):
        check(history, engine="pandas")


def test_consumed_may_be_a_json_list_in_jsonl(tmp_path: Path) -> None:
    case = TXN_CASES["skipped-input"]
    tables = case.tables()
    tables["transactions"] = [{**t, "consumed": json.loads(t["consumed"])} for t in tables["transactions"]]
    assert check(write(tmp_path, tables), engine="pandas")["counts"]["skipped-input"] == 1


def test_synthetic_transactional_histories_show_every_planted_v2_anomaly(tmp_path: Path) -> None:
    from checkers.synth import SynthSpec, generate, write_history
    from checkers.synth_txn import transactional

    tables = transactional(generate(SynthSpec(operations=3000, seed=5)), seed=5)
    verdict = check(write_history(tables, tmp_path), engine="pandas")
    assert all(verdict["counts"][name] > 0 for name in V2_ANOMALIES), verdict["counts"]
    assert verdict["stats"]["transactions"] == tables["transactions"].num_rows > 0
    assert verdict["stats"]["read_committed_final_reads"] > 0


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_history_without_v2_values_skips_all_v2_work(tmp_path: Path, fmt: str) -> None:
    from checkers.sources import locate_history
    from checkers.txn_terms import columns_maybe_set, prepare

    plain = write(tmp_path / "plain", CASES["lost"].tables(), fmt)
    assert prepare(locate_history(plain), {}) is None
    rows = [{**row, "txn": None, "source": "a" if row["value"] == "b" else None} for row in CASES["lost"].writes]
    some = locate_history(write(tmp_path / "some", {**CASES["lost"].tables(), "writes": rows}, fmt))
    # Parquet's footers prove txn all null; JSONL only knows the key occurs
    assert columns_maybe_set(some["writes"], ("txn", "source")) == {"txn": fmt == "jsonl", "source": True}
