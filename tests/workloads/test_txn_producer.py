"""The transactional producer against librdkafka's in-process mock cluster (transactions included).

Every send belongs to one transaction, journaled before it is handed over; every transaction begun gets one
`transactions` row whose status follows what librdkafka answered; a share of them is aborted on purpose
after their sends were written; a fatal error mid-commit makes the outcome unknown and a new instance with
the same transactional.id takes over. The journal and the history built from it are real.
"""

from __future__ import annotations

import ctypes
import json
import threading
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from confluent_kafka import KafkaError, KafkaException, Producer

from tests.workloads.test_producer import librdkafka, make_fatal
from workloads import exits
from workloads.config import ProducerConfig
from workloads.history import build_history
from workloads.journal import Journal
from workloads.stopping import StopFlag
from workloads.txn_producer import TxnProducerWorkload

MOCK = {"test.mock.num.brokers": 3, "transaction.timeout.ms": 10000, "linger.ms": 5}


def run(tmp_path: Path, seconds: float, make_producer: Any = Producer, abort_share: float = 0.3,
        size: int = 5, fenced: str = "renew") -> tuple[int, dict[str, pd.DataFrame], dict[str, Any]]:
    path = tmp_path / "journal" / "producer-az1-0.jsonl"
    config = ProducerConfig(process="producer-az1-0", role="producer", az="az1", journal=path, topic="t",
                            bootstrap="127.0.0.1:1", partitions=3, rate=500, value_prefix="producer-az1-0-",
                            kafka=MOCK, transactional_id="fl00abcd-producer-az1-0", txn_size=size,
                            txn_abort_share=abort_share, fenced=fenced)
    stop = StopFlag()
    timer = threading.Timer(seconds, stop.set)
    timer.start()
    journal = Journal(path)
    try:
        code = TxnProducerWorkload(config, journal, stop, make_producer=make_producer).run()
    finally:
        timer.cancel()
        journal.close()
    summary = build_history(path.parent, tmp_path / "history")
    tables = {name: pd.read_parquet(tmp_path / "history" / f"{name}.parquet")
              for name in ("writes", "transactions", "processes")}
    return code, tables, summary


def test_every_send_is_in_one_transaction_with_its_outcome(tmp_path: Path) -> None:
    code, t, _ = run(tmp_path, 2.0)
    assert code == exits.DONE
    writes, txns = t["writes"], t["transactions"]
    assert len(txns) >= 20 and txns["txn"].is_unique
    assert set(writes["txn"]) == set(txns["txn"])  # every send has its transaction, every transaction its sends
    assert (writes.groupby("txn")["value"].count() == 5).all()
    assert (writes.groupby("txn")["partition"].nunique() == 3).all()  # five sends spread over three partitions
    committed, aborted = txns[txns["intent"] == "commit"], txns[txns["intent"] == "abort"]
    assert (committed["status"] == "ok").all() and (aborted["status"] == "fail").all()
    assert 0.1 < len(aborted) / len(txns) < 0.5 and aborted["error"].isna().all()
    assert (txns["begin_ns"] <= txns["end_ns"]).all() and (txns["end_ns"] <= txns["complete_ns"]).all()
    assert (writes["status"] == "ok").all()  # aborted only after their sends were written, never purged unsent
    by_txn = writes.groupby("txn")["invoke_ns"].min()
    assert (txns.set_index("txn")["begin_ns"].sort_index() <= by_txn.sort_index()).all()
    config = json.loads(t["processes"]["config"][0])
    assert config["transactional.id"] == "fl00abcd-producer-az1-0" and config["enable.idempotence"] is True
    assert config["transaction.timeout.ms"] == 10000 and config["acks"] == "all"


class FatalAtCommit:
    """Makes instance 0 fatal at its third commit_transaction(); later instances stay healthy."""

    def __init__(self) -> None:
        self.made: list[Producer] = []

    def __call__(self, conf: dict[str, Any]) -> Producer:
        first = not self.made
        commits = [0]

        class Cued(Producer):
            def commit_transaction(self, timeout: float = -1) -> None:
                commits[0] += 1
                if first and commits[0] == 3:
                    make_fatal(self)
                super().commit_transaction(timeout)

        self.made.append(Cued(conf))
        return self.made[-1]


def test_a_fatal_commit_is_unknown_and_a_new_instance_takes_the_same_id(tmp_path: Path) -> None:
    factory = FatalAtCommit()
    code, t, _ = run(tmp_path, 2.0, make_producer=factory, abort_share=0.0)
    assert code == exits.DONE and len(factory.made) == 2
    txns = t["transactions"].sort_values("begin_ns").reset_index(drop=True)
    assert list(txns["status"][:3]) == ["ok", "ok", "info"]
    assert txns["error"][2] == "OUT_OF_ORDER_SEQUENCE_NUMBER" and txns["intent"][2] == "commit"
    assert (txns["status"][3:] == "ok").all() and len(txns) > 10  # the new instance went on committing
    writes = t["writes"]
    assert writes["txn"].notna().all() and writes["value"].is_unique


def test_a_transaction_cut_short_by_death_is_unknown(tmp_path: Path) -> None:
    """A journal that stops mid-transaction (a SIGKILL): its row is info, intent and end null; its sends info."""
    journal = tmp_path / "journal"
    journal.mkdir()
    lines = [
        {"kind": "process", "process": "p", "role": "producer", "az": "az1", "topic": "t",
         "config": {"transactional.id": "x"}, "values": {"prefix": "p-", "width": 0, "partitions": 2, "key": "none"}},
        {"kind": "txn_begin", "t": 10, "txn": "p-t0"},
        {"kind": "invoke", "t": 11, "op": 0, "n": 2, "txn": "p-t0"},
        {"kind": "ack", "t": 12, "op": "0,1", "offset": [0, 0]},
        {"kind": "txn_end", "t": 13, "txn": "p-t0", "intent": "commit"},
        {"kind": "txn_done", "t": 14, "txn": "p-t0", "status": "ok", "error": None},
        {"kind": "txn_begin", "t": 20, "txn": "p-t1"},
        {"kind": "invoke", "t": 21, "op": 2, "n": 2, "txn": "p-t1"},
    ]
    (journal / "p.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    build_history(journal, tmp_path / "history")
    txns = pd.read_parquet(tmp_path / "history" / "transactions.parquet").set_index("txn")
    assert txns.loc["p-t0", "status"] == "ok" and txns.loc["p-t0", "end_ns"] == 13
    assert txns.loc["p-t1", "status"] == "info" and pd.isna(txns.loc["p-t1", "intent"])
    assert pd.isna(txns.loc["p-t1", "end_ns"]) and pd.isna(txns.loc["p-t1", "complete_ns"])
    writes = pd.read_parquet(tmp_path / "history" / "writes.parquet").set_index("value")
    assert list(writes["txn"]) == ["p-t0", "p-t0", "p-t1", "p-t1"]
    assert list(writes["status"]) == ["ok", "ok", "info", "info"]


@pytest.mark.parametrize("bad, says", [
    ({"kind": "invoke", "t": 30, "op": 4, "n": 1, "txn": "p-t9"}, "transaction p-t9 was never begun"),
    ({"kind": "txn_begin", "t": 30, "txn": "p-t0"}, "transaction p-t0 begun twice"),
    ({"kind": "txn_done", "t": 30, "txn": "p-t0", "status": "ok"}, "a second outcome for transaction p-t0"),
    ({"kind": "invoke", "t": 30, "op": 4, "n": 1, "txn": "p-t0"}, "a send in transaction p-t0, which had ended"),
])
def test_a_journal_that_breaks_transactions_is_refused(tmp_path: Path, bad: dict[str, Any], says: str) -> None:
    from workloads.history import HistoryError

    journal = tmp_path / "journal"
    journal.mkdir()
    lines = [
        {"kind": "process", "process": "p", "role": "producer", "az": "az1", "topic": "t", "config": {},
         "values": {"prefix": "p-", "width": 0, "partitions": 2, "key": "none"}},
        {"kind": "txn_begin", "t": 10, "txn": "p-t0"},
        {"kind": "invoke", "t": 11, "op": 0, "n": 2, "txn": "p-t0"},
        {"kind": "txn_done", "t": 14, "txn": "p-t0", "status": "ok", "error": None},
        bad, {"kind": "end", "t": 40},
    ]
    (journal / "p.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(HistoryError, match=says):
        build_history(journal, tmp_path / "history")


def mock_cluster_of(instance: Producer) -> tuple[ctypes.CDLL, int]:
    """librdkafka and the instance's mock cluster (rd_kafka_handle_mock_cluster), to inject broker errors."""
    lib = librdkafka()
    lib.rd_kafka_handle_mock_cluster.argtypes, lib.rd_kafka_handle_mock_cluster.restype = [ctypes.c_void_p], \
        ctypes.c_void_p
    lib.rd_kafka_mock_push_request_errors_array.argtypes = [ctypes.c_void_p, ctypes.c_int16, ctypes.c_size_t,
                                                           ctypes.POINTER(ctypes.c_int)]
    lib.rd_kafka_mock_broker_set_rtt.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_int]
    rk = ctypes.c_void_p.from_address(id(instance) + object.__basicsize__).value
    return lib, lib.rd_kafka_handle_mock_cluster(rk)


PRODUCE, END_TXN = 0, 26  # Kafka API keys


class BrokerTrouble:
    """Before instance 0's third commit_transaction(): `errors` pushed for the API key (each answers one
    request), or every broker's round trip set to `rtt_ms` for that one call of it."""

    def __init__(self, api: int = 0, errors: tuple[int, ...] = (), rtt_ms: int = 0) -> None:
        self.api, self.errors, self.rtt_ms = api, errors, rtt_ms
        self.made: list[Producer] = []
        self.raised: list[KafkaError] = []  # what that commit_transaction() raised

    def __call__(self, conf: dict[str, Any]) -> Producer:
        first, commits, trouble = not self.made, [0], self

        class Cued(Producer):
            def commit_transaction(self, timeout: float = -1) -> None:
                commits[0] += 1
                if not (first and commits[0] == 3):
                    return super().commit_transaction(timeout)
                lib, cluster = mock_cluster_of(self)
                if trouble.errors:
                    n = len(trouble.errors)
                    lib.rd_kafka_mock_push_request_errors_array(cluster, trouble.api, n, (ctypes.c_int * n)(*trouble.errors))
                for broker in (1, 2, 3) if trouble.rtt_ms else ():
                    lib.rd_kafka_mock_broker_set_rtt(cluster, broker, trouble.rtt_ms)
                try:
                    return super().commit_transaction(timeout)
                except KafkaException as exc:
                    trouble.raised.append(exc.args[0])
                    raise
                finally:
                    for broker in (1, 2, 3) if trouble.rtt_ms else ():
                        lib.rd_kafka_mock_broker_set_rtt(cluster, broker, 0)

        self.made.append(Cued(conf))
        return self.made[-1]


def third(tmp_path: Path, trouble: BrokerTrouble) -> tuple[pd.Series, pd.DataFrame]:
    code, t, _ = run(tmp_path, 3.0, make_producer=trouble, abort_share=0.0)
    assert code == exits.DONE
    txns = t["transactions"].sort_values("begin_ns").reset_index(drop=True)
    assert (txns["status"][:2] == "ok").all() and (txns["status"][3:] == "ok").all() and len(txns) > 10
    return txns.iloc[2], txns


@pytest.mark.parametrize("timeouts, status, instances", [(1, "fail", 1), (2, "info", 2)])
def test_an_error_that_requires_abort_aborts(tmp_path: Path, timeouts: int, status: str, instances: int) -> None:
    """The coordinator answers EndTxn(commit) REQUEST_TIMED_OUT: librdkafka says abort. The abort's EndTxn
    succeeds (the transaction is `fail`, the instance goes on), or times out too (`info`: commit was asked
    for and no abort completed; a new instance fences the old)."""
    trouble = BrokerTrouble(END_TXN, (KafkaError.REQUEST_TIMED_OUT,) * timeouts)
    row, _ = third(tmp_path, trouble)
    assert (row["intent"], row["status"], row["error"]) == ("commit", status, "REQUEST_TIMED_OUT")
    assert len(trouble.made) == instances


def test_a_fenced_commit_is_unknown_and_a_new_instance_takes_over(tmp_path: Path) -> None:
    trouble = BrokerTrouble(END_TXN, (KafkaError.PRODUCER_FENCED,))
    row, _ = third(tmp_path, trouble)
    assert (row["intent"], row["status"], row["error"]) == ("commit", "info", "_FENCED")
    assert len(trouble.made) == 2


def test_a_commit_that_times_out_is_called_again_until_it_succeeds(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from workloads import txn_producer

    monkeypatch.setattr(txn_producer, "END_CALL_S", 0.3)  # each call gives up long before the slow round trip
    trouble = BrokerTrouble(rtt_ms=1200)
    row, _ = third(tmp_path, trouble)
    assert (row["intent"], row["status"]) == ("commit", "ok") and pd.isna(row["error"])
    [timed_out] = trouble.raised  # the slow call raised a retriable timeout; the next call committed
    assert timed_out.retriable() and not timed_out.txn_requires_abort() and len(trouble.made) == 1


def test_a_fenced_producer_told_to_exit_ends_instead_of_fencing_back(tmp_path: Path) -> None:
    """`fenced: exit` (zombie-fencing): no new instance; every outcome journaled; exit status FENCED."""
    trouble = BrokerTrouble(END_TXN, (KafkaError.PRODUCER_FENCED,))
    code, t, _ = run(tmp_path, 3.0, make_producer=trouble, abort_share=0.0, fenced="exit")
    assert code == exits.FENCED and len(trouble.made) == 1
    txns = t["transactions"].sort_values("begin_ns").reset_index(drop=True)
    assert list(txns["status"]) == ["ok", "ok", "info"] and txns["error"][2] == "_FENCED"
    assert t["writes"]["status"].notna().all()
    end = json.loads((tmp_path / "journal" / "producer-az1-0.jsonl").read_text().splitlines()[-1])
    assert end["kind"] == "end" and end["fenced"] == "_FENCED" and end["fatal"] is None
