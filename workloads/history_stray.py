"""A `stray-transactional-produce` fault's write (nemesis/stray.py) as contract rows.

The fault is the nemesis acting as a transactional producer of its own for one record, so its
`start` row in the nemesis journal carries the write (`detail.stray`); the history holds it as
any transactional write: a `writes` row (value `<process>-0`, its offset where the broker
acknowledged it, `ok`; `fail` with the broker's error name where it refused it; `info` where no
answer came), inside transaction `<process>-t0`, whose `transactions` row says what is known of
it: `info` with a null intent and end_ns when the write was taken (the transaction was never
ended: no marker will close it), `fail` with the error when the broker refused the write (nothing
written, nothing begun at the coordinator). A `processes` row names the writer a transactional
producer with acks=all. So the stall it causes is attributable: the committed values behind the
partition's stuck last stable offset are `unreadable`, and the stray value itself, of unknown
outcome, is read only read_uncommitted.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from testbed.journal_names import STRAY_PRODUCE
from workloads.history_rows import Build, HistoryError

STRAY_KEYS = ("process", "value", "txn", "transactional_id", "topic", "partition", "offset", "status", "error",
              "invoke_ns", "complete_ns")


def stray_rows(path: Path, lineno: int, rec: dict[str, Any], build: Build) -> None:
    """The rows of one stray write from its fault's `start` row (`detail` a JSON object or its text)."""
    detail = rec.get("detail")
    detail = json.loads(detail) if isinstance(detail, str) else detail or {}
    stray = detail.get("stray")
    if stray is None:
        return  # a start with no write on record: nothing was sent
    missing = [k for k in STRAY_KEYS if k not in stray]
    if missing:
        raise HistoryError(f"{path}:{lineno}: {STRAY_PRODUCE} start without {', '.join(missing)} in detail.stray")
    status = stray["status"]
    build.statuses[status] += 1
    build.tables["writes"].row(process=stray["process"], op_id=0, topic=stray["topic"], key=None,
                               value=stray["value"], partition=stray["partition"], offset=stray["offset"],
                               status=status, error=stray["error"], invoke_ns=stray["invoke_ns"],
                               complete_ns=stray["complete_ns"], az=None, txn=stray["txn"])
    refused = status == "fail"
    build.tables["transactions"].row(process=stray["process"], az=None, txn=stray["txn"], intent=None,
                                     status="fail" if refused else "info", error=stray["error"],
                                     begin_ns=stray["invoke_ns"], end_ns=None,
                                     complete_ns=stray["complete_ns"] if refused else None,
                                     group=None, consumed=None)
    config = {"transactional.id": stray["transactional_id"], "acks": "all", "enable.idempotence": True,
              "client": f"faultline raw protocol (nemesis {STRAY_PRODUCE})"}
    build.tables["processes"].row(process=stray["process"], role="producer", az=None,
                                  config=json.dumps(config, sort_keys=True))
