"""One finished run folder as rows of the lake's tables (spark_analysis.lake_tables).

Reads the run through its manifest (`run.json`), its `verdict.json` and its
`history/` tables (every anomaly instance: spark_analysis.instances). A folder that cannot give a whole, finished run raises
SkipRun with the one-line reason the ingest prints; nothing is half-read.
Must never: write anything, or read a run's logs or node folders (history only).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from checkers.anomalies import ANOMALIES
from checkers.availability import availability, writes_columns
from checkers.classify import known_configs
from checkers.context import FaultTimeline
from checkers.errors import HistoryError
from checkers.leadership import partition_views
from checkers.schema import STATUSES
from checkers.sources import locate_history
from checkers.tables import load_table
from spark_analysis import lake_tables as s
from spark_analysis.instances import instance_rows
from spark_analysis.lake_commits import commit_rows
from testbed.dist.versions import default_metadata
from testbed.errors import DistributionError
from testbed.runfolder import RunFolder

NS = 1_000_000_000


class SkipRun(Exception):
    """A run folder the ingest leaves out, with why (one line)."""


def _json_object(path: Path, what: str) -> dict[str, Any]:
    if not path.is_file():
        raise SkipRun(f"no {what} ({path.name})")
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SkipRun(f"{path.name} unreadable: {str(exc).splitlines()[0]}") from None
    if not isinstance(loaded, dict):
        raise SkipRun(f"{path.name} is not a JSON object")
    return loaded


def read_run(folder: RunFolder) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(manifest, verdict) of a finished run; SkipRun for anything else."""
    manifest = _json_object(folder.manifest, "run manifest")
    status = manifest.get("status")
    if status == "running":
        raise SkipRun("half-written: run.json still says running (harness killed, or the run is not over)")
    if status not in ("finished", "error"):
        raise SkipRun(f"run.json: unknown status {status!r}")
    if status == "error":
        return manifest, None
    verdict = _json_object(folder.verdict, "verdict")
    if not isinstance(verdict.get("counts"), dict):
        raise SkipRun("verdict.json has no counts")
    return manifest, verdict


def _timestamp(text: Any) -> dt.datetime | None:
    if not isinstance(text, str):
        return None
    try:
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise SkipRun(f"run.json: bad time {text!r}") from None


def _setting(settings: dict[str, Any], where: tuple[str, ...]) -> Any:
    producers = settings.get("producers") or [{}]
    consumers = settings.get("consumers") or [{}]
    scope = {"producer": producers[0].get("settings") or {}, "producer_group": producers[0],
             "consumer_group": consumers[0], "topic": settings.get("topic") or {},
             "broker": settings.get("broker") or {}}[where[0]]
    return scope.get(where[1])


def _cast(value: Any, kind: pa.DataType) -> Any:
    if value is None:
        return None
    if pa.types.is_string(kind):
        return str(value)
    if pa.types.is_boolean(kind):
        return value if isinstance(value, bool) else str(value).lower() == "true"
    if pa.types.is_integer(kind):
        return int(value)
    return float(value)


def metadata_of(settings: dict[str, Any], kafka_version: str | None) -> str | None:
    """`zookeeper` or `kraft`: run.json's `settings.broker.metadata`, else (a run from before KRaft came) what
    its Kafka version gets by default (ZooKeeper below 4.0); null when neither is known."""
    metadata = (settings.get("broker") or {}).get("metadata")
    if metadata or not kafka_version:
        return metadata
    try:
        return default_metadata(kafka_version)
    except DistributionError:
        return None


def runs_row(run_id: str, manifest: dict[str, Any], verdict: dict[str, Any] | None, t0_ns: int | None,
             batch: str) -> dict[str, Any]:
    """The `runs` row of one run."""
    started = _timestamp(manifest.get("started_at"))
    if started is None:
        raise SkipRun("run.json has no started_at")
    versions = manifest.get("versions") or {}
    settings = manifest.get("settings") or {}
    v = verdict or {}
    counts, stats = v.get("counts") or {}, v.get("stats") or {}
    row: dict[str, Any] = {
        "run_id": run_id, "scenario": str(manifest.get("scenario")), "day": started.strftime("%Y-%m-%d"),
        "campaign_id": manifest.get("campaign_id"), "configuration": manifest.get("configuration"),
        "started_at": started, "ended_at": _timestamp(manifest.get("ended_at")),
        "duration_s": manifest.get("duration_s"), "runtime": manifest.get("runtime"),
        "kafka_version": versions.get("kafka"), "librdkafka_version": versions.get("librdkafka"),
        "confluent_kafka_version": versions.get("confluent_kafka"), "faultline_version": versions.get("faultline"),
        "metadata": metadata_of(settings, versions.get("kafka")),
        "client_confluent_kafka_version": (versions.get("client_under_test") or versions).get("confluent_kafka"),
        "client_librdkafka_version": (versions.get("client_under_test") or versions).get("librdkafka"),
        "commit": manifest.get("commit"), "seed": manifest.get("seed"),
        "producer_groups": len(settings.get("producers") or []),
        "faults": ",".join(manifest.get("faults") or []),
        "errors": ",".join(sorted(v.get("errors") or {})),
        "valid": None if v.get("valid") is None else str(v["valid"]).lower(),
        "reason": v.get("reason"), "engine": v.get("engine"),
        "exit_status": manifest.get("exit_status"), "status": manifest.get("status"),
        "expected": manifest.get("expected"), "observed": manifest.get("observed"),
        "outcome": manifest.get("outcome"), "t0_ns": t0_ns, "ingest_batch": batch,
    }
    for name, kind, where in s.SETTING_COLUMNS:
        row[name] = _cast(_setting(settings, where), kind)
    for anomaly in ANOMALIES:
        row[s.count_column(anomaly)] = counts.get(anomaly)
    for stat in s.STAT_COLUMNS:
        row[f"stat_{stat}"] = stats.get(stat)
    return row


def _seconds(ns: int | None, t0: int) -> float | None:
    return None if ns is None else round((ns - t0) / NS, 3)


def _fault_label(fault: str | None, targets: Any) -> str:
    shown = targets.get("az") or targets.get("link") or targets.get("minority") or targets.get("nodes") \
        if isinstance(targets, dict) else targets
    text = ",".join(map(str, shown)) if isinstance(shown, list) else ("" if shown is None else str(shown))
    return f"{fault} {text}".strip()


def throughput_table(key: dict[str, Any], writes: pa.Table, windows: list[Any], t0: int) -> pa.Table:
    """Per AZ and second since t0: writes acknowledged, failed and unknown, with the faults active then."""
    done = pc.coalesce(writes.column("complete_ns"), writes.column("invoke_ns"))
    second = pc.floor(pc.divide(pc.cast(pc.subtract(done, t0), pa.float64()), float(NS))).cast(pa.int64())
    frame = pa.table({"az": writes.column("az").fill_null("?"), "second": second,
                      "status": writes.column("status")}).to_pandas()
    counts = frame.groupby(["az", "second", "status"]).size().unstack("status", fill_value=0)
    for status in STATUSES:
        if status not in counts.columns:
            counts[status] = 0
    out = counts[list(STATUSES)].reset_index()
    active: dict[int, list[str]] = {}
    last = int(out["second"].max()) if len(out) else 0
    for w in windows:
        lo = (w.start_ns - t0) // NS
        hi = ((w.stop_ns - t0) // NS) if w.stop_ns is not None else last
        for sec in range(int(lo), int(hi) + 1):
            active.setdefault(sec, []).append(_fault_label(w.fault, w.targets))
    out["faults"] = [",".join(active.get(int(sec), [])) or None for sec in out["second"]]
    for name, value in key.items():
        out[name] = value
    return pa.Table.from_pandas(out, schema=s.THROUGHPUT, preserve_index=False)


def availability_rows(key: dict[str, Any], writes: pa.Table, windows: list[Any], t0: int) -> list[dict[str, Any]]:
    return [{**key, "fault_index": r["fault_index"], "fault": r["fault"],
             "targets": json.dumps(r["targets"], sort_keys=True), "az": r["az"], "targeted": r["targeted"],
             "start_s": _seconds(r["start_ns"], t0), "stop_s": _seconds(r["stop_ns"], t0),
             "acks_during": r["acks_during"], "first_ack_after_start_s": r["first_ack_after_start_s"],
             "longest_gap_s": r["longest_gap_s"], "first_ack_after_heal_s": r["first_ack_after_heal_s"]}
            for r in availability(writes, windows)]


def fault_rows(key: dict[str, Any], windows: list[Any], t0: int) -> list[dict[str, Any]]:
    ordered = sorted(windows, key=lambda w: (w.start_ns, w.fault or "", w.key))
    return [{**key, "fault_index": i, "fault": w.fault, "targets": json.dumps(w.targets, sort_keys=True),
             "start_ns": w.start_ns, "stop_ns": w.stop_ns, "start_s": _seconds(w.start_ns, t0),
             "stop_s": _seconds(w.stop_ns, t0),
             "duration_s": None if w.stop_ns is None else round((w.stop_ns - w.start_ns) / NS, 3)}
            for i, w in enumerate(ordered)]


def leadership_rows(key: dict[str, Any], observations: pa.Table, t0: int) -> list[dict[str, Any]]:
    """Each observer's view of each partition's leader, condensed into intervals."""
    frame = observations.to_pandas()
    if frame.empty:
        return []
    frame["isr"] = frame["isr"].astype(object)
    return [{**key, "topic": topic, "partition": partition, "observer": seg.observer, "leader": seg.broker,
             "leader_epoch": seg.epoch, "isr": seg.isr, "start_s": _seconds(seg.start_ns, t0),
             "end_s": _seconds(seg.end_ns, t0)}
            for (topic, partition), segments in partition_views(frame).items() for seg in segments]


def _sends_per_txn(source: Any) -> dict[str, int]:
    """`writes.txn` -> how many writes name it (the column alone, where the history is Parquet)."""
    if source.format == "parquet":
        if "txn" not in pq.read_schema(source.files[0]).names:
            return {}
        column = pq.read_table(list(source.files), columns=["txn"]).column("txn")
    else:
        table = load_table(source)
        if "txn" not in table.column_names:
            return {}
        column = table.column("txn")
    counted = pc.value_counts(column.drop_null()).to_pylist() if len(column) else []
    return {c["values"]: int(c["counts"]) for c in counted}


def transaction_rows(key: dict[str, Any], txns: pa.Table, sends: dict[str, int], windows: list[Any],
                     t0: int) -> list[dict[str, Any]]:
    """Each transaction's contract columns, its seconds since t0, its sends and the faults active during it."""
    columns = [f.name for f in s.TRANSACTIONS if f.name in txns.column_names]
    rows = []
    for t in txns.select(columns).to_pylist():
        until = t["complete_ns"] if t["complete_ns"] is not None else t["end_ns"] or t["begin_ns"]
        active = [_fault_label(w.fault, w.targets) for w in sorted(windows, key=lambda w: w.start_ns)
                  if w.start_ns <= until and (w.stop_ns is None or w.stop_ns >= t["begin_ns"])]
        rows.append({**key, **t, "begin_s": _seconds(t["begin_ns"], t0), "complete_s": _seconds(t["complete_ns"], t0),
                     "duration_ms": None if t["complete_ns"] is None else round((t["complete_ns"] - t["begin_ns"]) / 1e6, 3),
                     "sends": sends.get(t["txn"], 0), "faults": ",".join(active) or None})
    return rows


def _table(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=schema)


def _instances(key: dict[str, Any], sources: dict[str, Any], configs: dict[str, Any], windows: list[Any],
               t0: int) -> pa.Table:
    try:
        return instance_rows(key, sources, configs, windows, t0)
    except (HistoryError, OSError, pa.ArrowException) as exc:
        raise SkipRun(f"history unreadable: {str(exc).splitlines()[0]}") from None


def extract_run(folder: RunFolder, run_id: str, batch: str) -> dict[str, pa.Table]:
    """Every lake table's rows for one run folder; SkipRun if it is not a whole, finished run."""
    manifest, verdict = read_run(folder)
    empty = {name: schema.empty_table() for name, schema in s.TABLES.items()}
    if verdict is None:  # the harness failed: the run is in `runs` (outcome ERROR) with nothing else
        return {**empty, "runs": _table([runs_row(run_id, manifest, None, None, batch)], s.RUNS)}
    try:
        sources = locate_history(folder.history_dir)
        writes = writes_columns(sources["writes"])
        nemesis = load_table(sources["nemesis"]) if "nemesis" in sources else None
        observations = load_table(sources["observations"]) if "observations" in sources else None
        txns = load_table(sources["transactions"]) if "transactions" in sources else None
        commits = load_table(sources["commits"]) if "commits" in sources else None
        sends = _sends_per_txn(sources["writes"]) if txns is not None else {}
        configs = {} if "processes" not in sources else known_configs(
            zip(*(load_table(sources["processes"]).column(c).to_pylist() for c in ("process", "config")),
                strict=True))
    except (HistoryError, OSError, pa.ArrowException) as exc:
        raise SkipRun(f"history unreadable: {str(exc).splitlines()[0]}") from None
    first = pc.min(writes.column("invoke_ns")).as_py()
    t0 = int(first) if first is not None else 0
    row = runs_row(run_id, manifest, verdict, t0, batch)
    key = {"run_id": run_id, "scenario": row["scenario"], "day": row["day"]}
    windows = FaultTimeline(nemesis).windows if nemesis is not None else []
    return {
        "anomalies": _instances(key, sources, configs, windows, t0),
        "throughput": throughput_table(key, writes, windows, t0) if writes.num_rows else empty["throughput"],
        "availability": _table(availability_rows(key, writes, windows, t0), s.AVAILABILITY),
        "faults": _table(fault_rows(key, windows, t0), s.FAULTS),
        "leadership": _table(leadership_rows(key, observations, t0), s.LEADERSHIP)
        if observations is not None else empty["leadership"],
        "transactions": _table(transaction_rows(key, txns, sends, windows, t0),
                               s.TRANSACTIONS)
        if txns is not None else empty["transactions"],
        "commits": _table(commit_rows(key, commits, [(w.start_ns, w.stop_ns, _fault_label(w.fault, w.targets))
                                                     for w in windows], t0), s.COMMITS)
        if commits is not None else empty["commits"],
        "runs": _table([row], s.RUNS),
    }

