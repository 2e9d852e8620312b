"""A transformer's journal (workloads/transformer.py) as contract rows: its reads, its writes with `source`, its
transactions with `group` and `consumed`.

Each instance of a transformer process writes its own journal; every one becomes rows of the same process
(op ids and seqs of instance n start at n * 10**9). Its reads are recorded per assignment, under the reader
name its ``poll`` lines carry (``<process>/<instance>.<assignment>``), each with a `processes` row of the
transformer's config: a group member given a partition back after a rebalance resumes where another member
left it, which is no skip of its own (docs/history.md). An instance started after its predecessor was killed adds
a `kill-client` fault to the `nemesis` table, from the kill until it started.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from workloads.history import HistoryError, Lines, _Build, _field, _poll_rows, _Transactions


def transformer_rows(path: Path, header: dict[str, Any], lines: Lines, build: _Build) -> None:
    process, az = header["process"], header.get("az")
    output, source_topic = header["topic"], _field(path, 1, header, "input_topic")
    invoked: dict[int, tuple[int, int, str, str | None]] = {}  # op -> (invoke_ns, partition, source, txn)
    outcomes: dict[int, tuple[str, str | None, int | None, int | None]] = {}
    txns = _Transactions(path, header)
    readers: set[str] = set()

    def settle(lineno: int, op: int, outcome: tuple[str, str | None, int | None, int | None]) -> None:
        if op not in invoked:
            raise HistoryError(f"{path}:{lineno}: outcome for op {op}, which was never sent")
        if op in outcomes:
            raise HistoryError(f"{path}:{lineno}: a second outcome for op {op}")
        outcomes[op] = outcome

    for lineno, rec in lines:
        kind = rec.get("kind")
        if kind == "poll":
            reader = str(rec.get("reader") or process)
            readers.add(reader)
            _poll_rows(path, lineno, rec, reader, source_topic, az, build)
        elif kind == "send":
            t, txn = _field(path, lineno, rec, "t"), rec.get("txn")
            if txn is not None:
                txns.check_open(lineno, txn)
            for op, partition, source in _field(path, lineno, rec, "ops"):
                if op in invoked:
                    raise HistoryError(f"{path}:{lineno}: op {op} sent twice")
                invoked[op] = (t, partition, source, txn)
        elif kind in _Transactions.KINDS:
            txns.line(lineno, kind, rec)
        elif kind == "ack":
            t = _field(path, lineno, rec, "t")
            ops = [int(digits) for digits in rec["op"].split(",")] if rec["op"] else []
            for op, offset in zip(ops, rec["offset"], strict=True):
                settle(lineno, op, ("ok", None, offset if offset is not None and offset >= 0 else None, t))
        elif kind == "outcome":
            settle(lineno, _field(path, lineno, rec, "op"), (rec["status"], rec.get("error"), None, rec.get("t")))
    ops = sorted(invoked)
    settled = [outcomes.get(op, ("info", None, None, None)) for op in ops]
    build.statuses.update(o[0] for o in settled)
    build.tables["writes"].rows(len(ops), process=process, op_id=ops, topic=output, key=None,
                                value=[f"{process}-{op}" for op in ops], partition=[invoked[op][1] for op in ops],
                                offset=[o[2] for o in settled], status=[o[0] for o in settled],
                                error=[o[1] for o in settled], invoke_ns=[invoked[op][0] for op in ops],
                                complete_ns=[o[3] for o in settled], az=az, txn=[invoked[op][3] for op in ops],
                                source=[invoked[op][2] for op in ops])
    txns.write(build.tables["transactions"])
    if header.get("after_kill_ns") is not None:  # the supervisor killed the instance before this one
        targets = json.dumps({"processes": [process]})
        detail = json.dumps({"instance": header.get("instance"), "by": "the transformer's supervisor"})
        for kind, t in (("start", header["after_kill_ns"]), ("stop", header["start_ns"])):
            build.nemesis_table().row(time_ns=t, type=kind, fault="kill-client", targets=targets, detail=detail)
    config = json.dumps(header.get("config") or {}, sort_keys=True)
    for reader in sorted(readers - {process}):
        build.tables["processes"].row(process=reader, role="transformer", az=az, config=config)
