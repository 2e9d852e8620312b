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

from workloads.history_rows import Build, HistoryError, Lines, Outcomes, Transactions, field, poll_rows


def transformer_rows(path: Path, header: dict[str, Any], lines: Lines, build: Build) -> None:
    process, az = header["process"], header.get("az")
    output, source_topic = header["topic"], field(path, 1, header, "input_topic")
    invoked: dict[int, tuple[int, int, str, str | None]] = {}  # op -> (invoke_ns, partition, source, txn)
    outcomes = Outcomes(path, invoked, "sent")
    txns = Transactions(path, header)
    readers: set[str] = set()

    for lineno, rec in lines:
        kind = rec.get("kind")
        if kind == "poll":
            reader = str(rec.get("reader") or process)
            readers.add(reader)
            poll_rows(path, lineno, rec, reader, source_topic, az, build)
        elif kind == "send":
            t, txn = field(path, lineno, rec, "t"), rec.get("txn")
            if txn is not None:
                txns.check_open(lineno, txn)
            for op, partition, source in field(path, lineno, rec, "ops"):
                if op in invoked:
                    raise HistoryError(f"{path}:{lineno}: op {op} sent twice")
                invoked[op] = (t, partition, source, txn)
        elif kind in Transactions.KINDS:
            txns.line(lineno, kind, rec)
        elif kind in Outcomes.KINDS:
            outcomes.line(lineno, kind, rec)
    ops = sorted(invoked)
    settled = [outcomes.of(op) for op in ops]
    build.statuses.update(o[0] for o in settled)
    build.tables["writes"].rows(len(ops), process=process, op_id=ops, topic=output, key=None,
                                value=[f"{process}-{op}" for op in ops], partition=[invoked[op][1] for op in ops],
                                offset=[o[2] for o in settled], status=[o[0] for o in settled],
                                error=[o[1] for o in settled], invoke_ns=[invoked[op][0] for op in ops],
                                complete_ns=[o[3] for o in settled], az=az, txn=[invoked[op][3] for op in ops],
                                source=[invoked[op][2] for op in ops])
    txns.write(build.tables["transactions"])
    build.client_killed(header, "the transformer's supervisor")
    config = json.dumps(header.get("config") or {}, sort_keys=True)
    for reader in sorted(readers - {process}):
        build.tables["processes"].row(process=reader, role="transformer", az=az, config=config)
