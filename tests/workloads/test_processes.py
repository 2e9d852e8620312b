"""`python -m workloads` as the harness runs it, without a cluster: exits, stops, kills, journals.

A producer pointed at a closed port never gets an answer, which is enough to
exercise SIGTERM (flush until every send has its outcome), SIGKILL (a journal
that still makes a history) and the exit statuses.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from tests.conftest import REPO
from workloads.history import build_history
from workloads.journal import JournalReader

NOWHERE = "127.0.0.1:1"  # nothing listens on port 1: every connection is refused


def start(tmp_path: Path, config: dict[str, Any]) -> tuple[subprocess.Popen[str], Path]:
    journal = tmp_path / "journal" / f"{config['process']}.jsonl"
    path = tmp_path / f"{config['process']}.json"
    path.write_text(
        json.dumps({"journal": str(journal), "az": "az1", "topic": "t", "bootstrap": NOWHERE, **config})
    )
    child = subprocess.Popen(
        [sys.executable, "-m", "workloads", str(path)],
        cwd=REPO,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    return child, journal


def kinds(journal: Path) -> list[str]:
    """The journal's line kinds, leaving out librdkafka's reports of refused connections."""
    return [str(record["kind"]) for _, record in JournalReader(journal) if record["kind"] != "client_error"]


def test_a_bad_config_exits_1_with_one_line(tmp_path: Path) -> None:
    child, journal = start(tmp_path, {"process": "p", "role": "producer"})
    _, err = child.communicate(timeout=30)
    assert child.returncode == 1
    assert err.strip().splitlines() == [f"workload config {tmp_path / 'p.json'}: partitions: required"]
    assert not journal.exists()


def test_a_journal_is_never_appended_to_by_a_second_process(tmp_path: Path) -> None:
    (tmp_path / "journal").mkdir()
    (tmp_path / "journal" / "p.jsonl").write_text("{}\n")
    child, _ = start(tmp_path, {"process": "p", "role": "producer", "partitions": 1})
    _, err = child.communicate(timeout=30)
    assert child.returncode == 1 and "cannot open journal" in err and len(err.strip().splitlines()) == 1


def test_sigterm_flushes_until_every_send_has_its_outcome(tmp_path: Path) -> None:
    child, journal = start(
        tmp_path,
        {
            "process": "p",
            "role": "producer",
            "partitions": 2,
            "rate": 200,
            "kafka": {"delivery.timeout.ms": 1500},
        },
    )
    time.sleep(1.5)
    child.send_signal(signal.SIGTERM)
    out, err = child.communicate(timeout=30)
    assert child.returncode == 0, err
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["sent"] > 50 and summary["info"] == summary["sent"] and summary["ok"] == 0
    assert kinds(journal)[0] == "process" and kinds(journal)[-1] == "end"
    build_history(journal.parent, tmp_path / "history")
    writes = pq.read_table(tmp_path / "history" / "writes.parquet").to_pylist()
    assert len(writes) == summary["sent"]
    assert {(w["status"], w["error"]) for w in writes} == {("info", "_MSG_TIMED_OUT")}
    assert all(w["complete_ns"] >= w["invoke_ns"] for w in writes)
    assert [w["op_id"] for w in writes] == list(range(len(writes)))


def test_a_sigkilled_producer_leaves_a_usable_journal(tmp_path: Path) -> None:
    child, journal = start(tmp_path, {"process": "p", "role": "producer", "partitions": 3, "rate": 1000})
    time.sleep(1.5)
    child.kill()
    child.communicate(timeout=30)
    with journal.open("a") as fh:  # as if the kill had torn a write in half
        fh.write('{"kind":"invoke","t":1,"op":')
    summary = build_history(journal.parent, tmp_path / "history")
    assert summary["writes"] > 100 and summary["info"] == summary["writes"]
    assert summary["unfinished"] == ["p"] and summary["torn"] == 1
    writes = pq.read_table(tmp_path / "history" / "writes.parquet").to_pylist()
    assert all(w["complete_ns"] is None and w["error"] is None for w in writes)


def test_a_drain_that_cannot_finish_says_so_and_exits_2(tmp_path: Path) -> None:
    child, journal = start(tmp_path, {"process": "d", "role": "drain", "partitions": 2, "timeout_s": 2})
    out, err = child.communicate(timeout=60)
    assert child.returncode == 2
    assert err.strip().splitlines()[-1].startswith("d: drain incomplete: no watermarks for partitions [0, 1]")
    assert json.loads(out.strip().splitlines()[-1])["complete"] is False
    assert kinds(journal)[-1] == "drain_end"
    assert build_history(journal.parent, tmp_path / "history")["drains"] == {"d": "incomplete"}


def test_a_consumer_and_an_observer_stop_on_sigterm(tmp_path: Path) -> None:
    consumer, consumer_journal = start(
        tmp_path, {"process": "c", "role": "consumer", "mode": "assign", "partitions": 2}
    )
    observer, observer_journal = start(
        tmp_path,
        {
            "process": "o",
            "role": "observer",
            "az": None,
            "broker_id": 0,
            "broker_address": NOWHERE,
            "interval_s": 0.1,
        },
    )
    time.sleep(1.5)
    for child in (consumer, observer):
        child.send_signal(signal.SIGTERM)
        _, err = child.communicate(timeout=30)
        assert child.returncode == 0, err
    assert kinds(consumer_journal) == ["process", "rebalance", "end"]
    observed = kinds(observer_journal)
    assert observed[0] == "process" and observed[-1] == "end" and observed.count("unreachable") >= 5
    summary = build_history(tmp_path / "journal", tmp_path / "history")
    assert summary["observations"] == 0 and summary["processes"] == 1  # observers are not client processes


def test_a_config_librdkafka_refuses_exits_1_and_says_why(tmp_path: Path) -> None:
    child, journal = start(
        tmp_path,
        {
            "process": "p",
            "role": "producer",
            "partitions": 1,
            "kafka": {"acks": 1, "enable.idempotence": True},
        },
    )
    _, err = child.communicate(timeout=30)
    assert child.returncode == 1
    assert err.strip().splitlines() == [line for line in err.strip().splitlines() if line.startswith("p: ")]
    assert "`acks` must be set to `all` when `enable.idempotence` is true" in err
    assert kinds(journal) == ["process", "crash"]
    summary = build_history(journal.parent, tmp_path / "history")
    assert summary["crashed"] == ["p"] and summary["writes"] == 0
