"""The transformer (consume-transform-produce): its config refused naming the key, its journals as contract rows.

Two instance journals of one process (the first killed: no end line, a torn last line, a transaction never
ended) become one process's writes (op ids from 0 and from 10**9, each naming its input as `source`), its
transactions (with the group and the input offsets each committed), and its reads per assignment, each reader
with a `processes` row of the transformer's config.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.workloads.test_history import header, journal, rows
from workloads.config import ConfigError, TransformerConfig, config_to_json, parse_config
from workloads.history import HistoryError, build_history

EOS = {"acks": "all", "enable.idempotence": True, "transactional.id": "fl-transformer-az1-0",
       "isolation.level": "read_committed", "mode": "exactly-once"}


def raw_config(tmp_path: Path, **changes: Any) -> dict[str, Any]:
    raw = {"process": "transformer-az1-0", "role": "transformer", "az": "az1", "journal": str(tmp_path / "j.jsonl"),
           "topic": "out", "bootstrap": "198.18.0.2:9092", "input_topic": "in", "group": "g",
           "mode": "exactly-once", "partitions": 3, "transactional_id": "fl-transformer-az1-0"}
    raw.update(changes)
    return {k: v for k, v in raw.items() if v is not None}


@pytest.mark.parametrize("changes, says", [
    ({"input_topic": None}, "input_topic: required"),
    ({"input_topic": "out"}, "input_topic: 'out' is also its output topic (topic)"),
    ({"transactional_id": None}, "transactional_id: required in mode exactly-once"),
    ({"mode": "at-least-once"}, "transactional_id: not allowed in mode at-least-once"),
    ({"mode": "maybe"}, "mode: must be one of exactly-once, at-least-once"),
    ({"batch": 0}, "batch: must be an integer >= 1"),
    ({"kafka": {"transactional.id": "x"}}, "kafka.transactional.id: set by the workload itself"),
])
def test_bad_transformer_config_names_the_key(tmp_path: Path, changes: dict[str, Any], says: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(raw_config(tmp_path, **changes))
    assert str(err.value).startswith(says), err.value


def test_a_transformer_config_reads_back(tmp_path: Path) -> None:
    config = parse_config(raw_config(tmp_path, kill_every_s=10, kill_first_s=2.5, batch=5))
    assert isinstance(config, TransformerConfig) and (config.kill_every_s, config.batch) == (10.0, 5)
    assert parse_config(json.loads(json.dumps(config_to_json(config)))) == config


def instance_journals(d: Path) -> None:
    first = header("transformer-az1-0", "transformer", "az1", EOS, input_topic="in", instance=0) | {"topic": "out"}
    journal(d / "transformer-az1-0.jsonl", first,
            {"kind": "poll", "t": 10, "seq": 0, "phase": "live", "group": "g", "reader": "transformer-az1-0/0.1",
             "records": [[0, 0, None, "p-0", 0], [0, 1, None, "p-1", 0]]},
            {"kind": "txn_begin", "t": 11, "txn": "transformer-az1-0-0-t0"},
            {"kind": "send", "t": 12, "txn": "transformer-az1-0-0-t0", "ops": [[0, 0, "p-0"], [1, 0, "p-1"]]},
            {"kind": "txn_end", "t": 13, "txn": "transformer-az1-0-0-t0", "intent": "commit", "group": "g",
             "consumed": [{"topic": "in", "partition": 0, "offset": 2}]},
            {"kind": "ack", "t": 14, "op": "0,1", "offset": [0, 1]},
            {"kind": "txn_done", "t": 15, "txn": "transformer-az1-0-0-t0", "status": "ok", "error": None},
            {"kind": "poll", "t": 20, "seq": 2, "phase": "live", "group": "g", "reader": "transformer-az1-0/0.1",
             "records": [[0, 2, None, "p-2", 0]]},
            {"kind": "txn_begin", "t": 21, "txn": "transformer-az1-0-0-t1"},
            {"kind": "send", "t": 22, "txn": "transformer-az1-0-0-t1", "ops": [[2, 0, "p-2"]]},
            torn='{"kind": "ack", "t": 2')  # SIGKILLed here: t1 never ended
    second = header("transformer-az1-0", "transformer", "az1", EOS, input_topic="in", instance=1,
                    after_kill_ns=30) | {"topic": "out", "start_ns": 35}
    journal(d / "transformer-az1-0.1.jsonl", second,
            {"kind": "poll", "t": 40, "seq": 10**9, "phase": "live", "group": "g", "reader": "transformer-az1-0/1.1",
             "records": [[0, 2, None, "p-2", 0]]},
            {"kind": "txn_begin", "t": 41, "txn": "transformer-az1-0-1-t0"},
            {"kind": "send", "t": 42, "txn": "transformer-az1-0-1-t0", "ops": [[10**9, 0, "p-2"]]},
            {"kind": "txn_end", "t": 43, "txn": "transformer-az1-0-1-t0", "intent": "commit", "group": "g",
             "consumed": [{"topic": "in", "partition": 0, "offset": 3}]},
            {"kind": "outcome", "op": 10**9, "t": 44, "status": "fail", "error": "_PURGE_QUEUE", "partition": None,
             "detail": None},
            {"kind": "txn_done", "t": 45, "txn": "transformer-az1-0-1-t0", "status": "fail",
             "error": "INVALID_PRODUCER_EPOCH"},
            {"kind": "end", "t": 50, "transactions": 1, "ops": 1})


def test_instance_journals_become_one_process_rows(tmp_path: Path) -> None:
    d = tmp_path / "journal"
    d.mkdir()
    instance_journals(d)
    summary = build_history(d, tmp_path / "history")
    assert summary["torn"] == 1 and summary["unfinished"] == ["transformer-az1-0"]  # the killed instance
    writes = sorted(rows(tmp_path / "history", "writes"), key=lambda w: w["op_id"])  # journals in name order
    assert [(w["op_id"], w["value"], w["topic"], w["source"], w["txn"], w["status"]) for w in writes] == [
        (0, "transformer-az1-0-0", "out", "p-0", "transformer-az1-0-0-t0", "ok"),
        (1, "transformer-az1-0-1", "out", "p-1", "transformer-az1-0-0-t0", "ok"),
        (2, "transformer-az1-0-2", "out", "p-2", "transformer-az1-0-0-t1", "info"),
        (10**9, f"transformer-az1-0-{10**9}", "out", "p-2", "transformer-az1-0-1-t0", "fail")]
    txns = {t["txn"]: t for t in rows(tmp_path / "history", "transactions")}
    assert (txns["transformer-az1-0-0-t0"]["group"], json.loads(txns["transformer-az1-0-0-t0"]["consumed"])) == (
        "g", [{"topic": "in", "partition": 0, "offset": 2}])
    killed = txns["transformer-az1-0-0-t1"]
    assert (killed["status"], killed["intent"], killed["end_ns"], killed["consumed"]) == ("info", None, None, None)
    assert txns["transformer-az1-0-1-t0"]["status"] == "fail"
    reads = sorted(rows(tmp_path / "history", "reads"), key=lambda r: r["seq"])
    assert [(r["process"], r["seq"], r["topic"], r["offset"], r["group"]) for r in reads] == [
        ("transformer-az1-0/0.1", 0, "in", 0, "g"), ("transformer-az1-0/0.1", 1, "in", 1, "g"),
        ("transformer-az1-0/0.1", 2, "in", 2, "g"), ("transformer-az1-0/1.1", 10**9, "in", 2, "g")]
    kills = [(n["time_ns"], n["type"], n["fault"], json.loads(n["targets"])) for n in rows(tmp_path / "history", "nemesis")]
    assert kills == [(30, "start", "kill-client", {"processes": ["transformer-az1-0"]}),
                     (35, "stop", "kill-client", {"processes": ["transformer-az1-0"]})]
    processes = {(p["process"], p["role"], p["config"]) for p in rows(tmp_path / "history", "processes")}
    config = json.dumps(EOS, sort_keys=True)
    assert processes == {(name, "transformer", config) for name in
                         ("transformer-az1-0", "transformer-az1-0/0.1", "transformer-az1-0/1.1")}


def test_a_second_outcome_is_a_transformer_bug(tmp_path: Path) -> None:
    d = tmp_path / "journal"
    d.mkdir()
    first = header("transformer-az1-0", "transformer", "az1", EOS, input_topic="in") | {"topic": "out"}
    journal(d / "transformer-az1-0.jsonl", first, {"kind": "send", "t": 1, "txn": None, "ops": [[0, 0, "p-0"]]},
            {"kind": "ack", "t": 2, "op": "0", "offset": [5]},
            {"kind": "outcome", "op": 0, "t": 3, "status": "info", "error": "x"})
    with pytest.raises(HistoryError, match=r"transformer-az1-0.jsonl:4: a second outcome for op 0"):
        build_history(d, tmp_path / "history")


class FakeInstance:
    """Stands in for the librdkafka instance in a forked child: journals its start, runs until stopped."""

    def __init__(self, config: TransformerConfig, journal: Any, stop: Any, instance: int,
                 killed_ns: int | None) -> None:
        self.journal, self.stop, self.instance = journal, stop, instance

    def run(self) -> int:
        self.journal.append({"kind": "process", "instance": self.instance})
        self.journal.flush()
        while not self.stop.wait(0.01):
            pass
        self.journal.append({"kind": "end"})
        self.journal.flush()
        return 0


def test_the_supervisor_kills_on_schedule_and_stops_the_last_instance(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    import workloads.transformer
    from workloads.stopping import StopFlag
    from workloads.supervisor import run_supervised

    monkeypatch.setattr(workloads.transformer, "Instance", FakeInstance)
    config = parse_config(raw_config(tmp_path, kill_every_s=0.4, kill_first_s=0.5, restart_delay_s=0.05))
    assert isinstance(config, TransformerConfig)
    stop = StopFlag()
    threading.Timer(1.5, stop.set).start()
    assert run_supervised(config, stop) == 0
    names = sorted((p.name for p in tmp_path.glob("j*.jsonl")), key=len)  # j.jsonl first, then j.<n>.jsonl
    assert names == ["j.jsonl", *sorted(f"j.{n}.jsonl" for n in range(1, len(names)))]
    assert len(names) >= 3, names  # killed at 0.5 s and 0.9 s (and 1.3 s), started again each time
    last = f"j.{len(names) - 1}.jsonl"
    ended = {name for name in names if "end" in (tmp_path / name).read_text()}
    assert ended == {last}  # every other instance was SIGKILLed; the last one stopped by the stop passed on
