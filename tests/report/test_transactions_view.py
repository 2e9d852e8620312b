"""The transactions view of report.html: outcomes per producer against the fault bands, the last stable offset's
lag per partition, and anomaly examples traced to their transaction, its writes and the reads that saw them."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from checkers.restated import Restated, notes, restated
from report import render_report
from report.figures import Frame
from report.transactions import lso_lag, outcomes_per_second
from tests.report.runfolder import NS, T0

FRAME = Frame(T0, T0 + 20 * NS)


def test_outcomes_are_counted_per_producer_and_second_of_their_outcome() -> None:
    txns = pd.DataFrame({"process": ["p-b", "p-b", "p-a", "p-a"], "status": ["ok", "fail", "info", "ok"],
                         "begin_ns": [T0, T0, T0 + 3 * NS, T0], "complete_ns": [T0 + NS // 2, T0 + 2 * NS, None,
                                                                                  T0 + 2 * NS + 1]})
    per = outcomes_per_second(txns, FRAME)
    assert list(per) == ["p-a", "p-b"]
    assert per["p-a"].to_dict("index") == {2: {"ok": 1, "fail": 0, "info": 0}, 3: {"ok": 0, "fail": 0, "info": 1}}
    assert per["p-b"].to_dict("index") == {0: {"ok": 1, "fail": 0, "info": 0}, 2: {"ok": 0, "fail": 1, "info": 0}}


def test_lso_lag_is_the_leaders_high_watermark_minus_its_last_stable_offset() -> None:
    observations = pd.DataFrame({
        "time_ns": [T0 + 2 * NS, T0 + NS, T0 + NS, T0 + NS], "topic": ["t"] * 4, "partition": [0, 0, 1, 1],
        "observer": ["broker-0", "broker-0", "broker-1", "broker-2"],
        "high_watermark": [30, 12, 8, None], "last_stable_offset": [30, 6, 8, None]})
    assert lso_lag(observations, FRAME) == {"t/0": [(1.0, 6), (2.0, 0)], "t/1": [(1.0, 0)]}
    assert lso_lag(pd.DataFrame({"time_ns": []}), FRAME) == {}


def _make_transactional(run: Path) -> None:
    """producer-az1-0's writes in transactions of four; its txn t25 (op_ids 100-103) torn; HW/LSO observed."""
    history = run / "history"
    writes = pq.read_table(history / "writes.parquet").to_pandas()
    mine = writes["process"] == "producer-az1-0"
    writes["txn"] = None
    writes.loc[mine, "txn"] = [f"producer-az1-0-t{op // 4}" for op in writes.loc[mine, "op_id"]]
    pq.write_table(pa.Table.from_pandas(writes, preserve_index=False), history / "writes.parquet")
    rows = []
    for n in range(100):
        ops = writes[mine & (writes["op_id"] // 4 == n)]
        rows.append({"process": "producer-az1-0", "txn": f"producer-az1-0-t{n}", "intent": "commit",
                     "status": "fail" if n % 10 == 9 else "ok", "error": None,
                     "begin_ns": int(ops["invoke_ns"].min()), "end_ns": int(ops["invoke_ns"].max()) + 1,
                     "complete_ns": int(ops["complete_ns"].max()) + 2, "group": None, "consumed": None, "az": "az1"})
    (history / "transactions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    observations = [json.loads(line) for line in (history / "observations.jsonl").read_text().splitlines()]
    for o in observations:
        o["high_watermark"], o["last_stable_offset"] = 500, 500 - (7 if o["partition"] == 0 else 0)
    (history / "observations.jsonl").write_text("".join(json.dumps(o) + "\n" for o in observations))
    verdict = json.loads((run / "verdict.json").read_text())
    torn = dict(verdict["examples"]["lost"][0], txn="producer-az1-0-t25")
    verdict["examples"]["torn-transaction"] = [torn]
    verdict["counts"]["torn-transaction"] = 1
    (run / "verdict.json").write_text(json.dumps(verdict))


def test_the_report_shows_transactions_lso_lag_and_traces_an_anomaly(run_copy: Path) -> None:
    _make_transactional(run_copy)
    html = render_report(run_copy).read_text(encoding="utf-8")
    section = html[html.index('<section id="transactions"'):]
    section = section[:section.index("</section>")]
    assert "1 transactional producer:" in section and "90 committed, 10 aborted, 0 unknown" in section
    assert 'id="plot-transactions"' in section and 'id="plot-lso"' in section
    assert "<code>t/0</code> 7" in section  # the largest lag per partition
    drill = section[section.index('id="txn-torn-transaction-1"'):]
    assert "in transaction <code>producer-az1-0-t25</code>" in drill
    for op in range(100, 104):  # the transaction's four writes, then the reads that saw them
        assert f"<code>p-az1-0-{op}</code>" in drill
    assert "reads of them" in drill and "read_uncommitted" in drill


def test_a_run_without_transactions_has_no_transactions_section(report_html: str) -> None:
    assert 'id="transactions"' not in report_html


def test_restated_counts_are_found_in_the_history() -> None:
    """uncommitted-read values that are aborted-read values; transactions torn only by unreadable values."""
    txns = pd.DataFrame({"txn": ["a", "b", "c", "d"], "status": ["fail", "ok", "ok", "ok"],
                         "intent": ["abort", "commit", "commit", "commit"], "end_ns": [50, 10, 10, 10],
                         "process": ["p"] * 4})
    writes = pd.DataFrame({"value": ["a0", "a1", "b0", "b1", "c0", "c1", "d0"], "txn": ["a", "a", "b", "b", "c", "c", "d"],
                           "status": ["ok"] * 7})
    reads = pd.DataFrame({  # rc reads both of a (aborted, abort-intent); b torn behind a stuck LSO; c torn for good
        "value": ["a0", "a1", "b0", "b1", "c0", "d0"], "process": ["rc", "rc", "rc", "ru", "rc", "rc"],
        "phase": ["live", "final", "final", "final", "final", "final"], "poll_ns": [20, 60, 70, 70, 70, 70]})
    found = restated(writes, reads, txns, {"rc"})
    assert found == Restated(uncommitted_read=2, same_as_aborted=2, torn=2, torn_by_unreadable=1, their_unreadable=1)
    said = dict(notes(found, {"uncommitted-read": 2, "torn-transaction": 2}))
    assert said["uncommitted-read"].startswith("2 of these 2 values are the same values as aborted-read")
    assert said["torn-transaction"].startswith("1 of these 2 transactions are torn only by values counted unreadable "
                                               "(1 values")
    assert notes(found, {}) == []  # nothing restated where the verdict counts nothing
    committed_reads = reads.assign(process="ru")  # nothing read read_committed: nothing restated
    assert restated(writes, committed_reads, txns, {"rc"}).same_as_aborted == 0


def test_the_report_notes_restated_counts_and_lists_unknown_outcomes(run_copy: Path) -> None:
    _make_transactional(run_copy)
    history = run_copy / "history"
    rows = [json.loads(line) for line in (history / "transactions.jsonl").read_text().splitlines()]
    for row in rows:  # the deliberately aborted ones were never asked to commit, the others before any read; t42
        row["end_ns"] = row["begin_ns"]  # ended unknown
        if row["status"] == "fail":
            row["intent"] = "abort"
        if row["txn"] == "producer-az1-0-t42":
            row.update(status="info", error="INVALID_TXN_STATE")
    (history / "transactions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    processes = [json.loads(line) for line in (history / "processes.jsonl").read_text().splitlines()]
    for p in processes:
        if p["process"] == "consumer-az2-0":
            p["config"]["isolation.level"] = "read_committed"
    (history / "processes.jsonl").write_text("".join(json.dumps(p) + "\n" for p in processes))
    writes = pq.read_table(history / "writes.parquet").to_pandas()
    reads = pd.DataFrame([json.loads(line) for line in (history / "reads.jsonl").read_text().splitlines()])
    aborted = set(writes.loc[writes["txn"].isin([r["txn"] for r in rows if r["status"] == "fail"]), "value"])
    n = len(aborted & set(reads.loc[reads["process"] == "consumer-az2-0", "value"]))
    assert n > 0
    verdict = json.loads((run_copy / "verdict.json").read_text())
    verdict["counts"].update({"aborted-read": n, "uncommitted-read": n})
    (run_copy / "verdict.json").write_text(json.dumps(verdict))

    html = render_report(run_copy).read_text(encoding="utf-8")
    section = html[html.index('<section id="transactions"'):]
    section = section[:section.index("</section>")]
    assert "Counts that restate another" in section
    assert f"{n} of these {n} values are the same values as aborted-read" in section
    table = section[section.index('id="unknown-transactions"'):]
    row = table[table.index("producer-az1-0-t42"):]
    row = row[:row.index("</tr>")]
    assert "INVALID_TXN_STATE" in row and "0 of 4" in row  # written while az1 was cut off: none of its values read
    assert "isolate-az" in row and "(+5.0 s to +12.0 s)" in row  # the last fault before its end
