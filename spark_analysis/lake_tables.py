"""The results lake's tables (its layout): their names, Arrow schemas, partition columns and schema version.

The one owner of the lake's layout (docs/results-lake.md describes it for people):
`<lake>/<table>/day=<YYYY-MM-DD>/part-<batch>-<n>.parquet`. Every table of this module is
partitioned by the UTC day of the run's start, so a reader that filters on days reads only
those folders; `scenario` is a column (each file's rows sorted by it, so its row-group
statistics skip other scenarios). Not by scenario too: a night of the nightly campaign (65
runs, 33 scenarios) would write ~33 files of a few runs per table, a year ~12,000 per table,
and listing and opening them dominated both the ingest and the notebook (BENCHMARKS.md,
"The lake at a year of nights"). Other tables may live beside them (a
campaign's `campaigns/`); the ingest never touches a table it does not own.
Columns copied from the history contract (a value, a partition, a fault's targets, an observer's
view) are derived from its one declaration (`checkers.schema.read_field`: the checker's canonical
types, every integer int64); the lake's own columns (run ids, seconds, counts) are declared here.
Must never: read or write files (the ingest does).
"""

from __future__ import annotations

import pyarrow as pa

from checkers.anomalies import REGISTRY, Registry
from checkers.schema import STATUSES, read_field

# The layout's own changes: 2: the transaction stats in `runs`; 3: `transactions`; 4: `metadata` and the client
# under test's versions in `runs` (the version x scenario view); 6: `commits` (contract v3), the commit stats and
# `consumer_commit` in `runs`. An anomaly's count column comes with its record's `lake_version` (2: the contract
# v2 anomalies, 5: v3's), so a new anomaly moves the version by its record alone. 7: partitioned by day alone,
# not by scenario and day (issue 41).
LAYOUT_VERSION = 7
PARTITION_COLUMNS = ("day",)
META_FILE = "_lake.json"


def count_column(anomaly: str) -> str:
    """The `runs` column holding an anomaly's count: "vanished-read" -> "vanished_read"."""
    return anomaly.replace("-", "_")


KEY = [pa.field("run_id", pa.string()), pa.field("scenario", pa.string()), pa.field("day", pa.string())]

# Client and cluster settings flattened into `runs` columns: (column, type, where in run.json's settings).
SETTING_COLUMNS: tuple[tuple[str, pa.DataType, tuple[str, ...]], ...] = (
    ("acks", pa.string(), ("producer", "acks")),
    ("enable_idempotence", pa.bool_(), ("producer", "enable.idempotence")),
    ("retries", pa.int64(), ("producer", "retries")),
    ("max_in_flight", pa.int64(), ("producer", "max.in.flight.requests.per.connection")),
    ("delivery_timeout_ms", pa.int64(), ("producer", "delivery.timeout.ms")),
    ("request_timeout_ms", pa.int64(), ("producer", "request.timeout.ms")),
    ("linger_ms", pa.int64(), ("producer", "linger.ms")),
    ("producer_rate", pa.float64(), ("producer_group", "rate")),
    ("consumer_mode", pa.string(), ("consumer_group", "mode")),
    ("consumer_commit", pa.string(), ("consumer_group", "commit")),
    ("partitions", pa.int64(), ("topic", "partitions")),
    ("replication_factor", pa.int64(), ("topic", "replication_factor")),
    ("min_insync_replicas", pa.int64(), ("topic", "min_insync_replicas")),
    ("unclean_leader_election", pa.bool_(), ("broker", "unclean_leader_election")),
    ("replica_lag_time_max_ms", pa.int64(), ("broker", "replica_lag_time_max_ms")),
    ("zookeeper_session_timeout_ms", pa.int64(), ("broker", "zookeeper_session_timeout_ms")),
    ("nodes", pa.int64(), ("broker", "nodes")),
)
STAT_COLUMNS = ("writes", "ok", "fail", "info", "reads", "final_reads", "transactions", "committed", "aborted",
                "unknown", "commits", "commits_ok")


def schema_version(registry: Registry = REGISTRY) -> int:
    """The lake's schema version: its layout's, or a newer anomaly record's."""
    return max(LAYOUT_VERSION, registry.lake_version)


SCHEMA_VERSION = schema_version()


def runs_schema(registry: Registry = REGISTRY) -> pa.Schema:
    """`runs`: one row per run, a count column per anomaly of ``registry`` in its order."""
    return pa.schema([
        *KEY,
        pa.field("campaign_id", pa.string()),
        pa.field("configuration", pa.string()),
        pa.field("started_at", pa.timestamp("ms", tz="UTC")),
        pa.field("ended_at", pa.timestamp("ms", tz="UTC")),
        pa.field("duration_s", pa.float64()),
        pa.field("runtime", pa.string()),
        pa.field("kafka_version", pa.string()),
        pa.field("librdkafka_version", pa.string()),
        pa.field("confluent_kafka_version", pa.string()),
        pa.field("metadata", pa.string()),
        pa.field("client_confluent_kafka_version", pa.string()),
        pa.field("client_librdkafka_version", pa.string()),
        pa.field("faultline_version", pa.string()),
        pa.field("commit", pa.string()),
        pa.field("seed", pa.int64()),
        pa.field("producer_groups", pa.int64()),
        *(pa.field(name, kind) for name, kind, _ in SETTING_COLUMNS),
        pa.field("faults", pa.string()),
        *(pa.field(count_column(a), pa.int64()) for a in registry.names),
        pa.field("errors", pa.string()),
        *(pa.field(f"stat_{s}", pa.int64()) for s in STAT_COLUMNS),
        pa.field("valid", pa.string()),
        pa.field("reason", pa.string()),
        pa.field("engine", pa.string()),
        pa.field("exit_status", pa.int64()),
        pa.field("status", pa.string()),
        pa.field("expected", pa.string()),
        pa.field("observed", pa.string()),
        pa.field("outcome", pa.string()),
        pa.field("t0_ns", pa.int64()),
        pa.field("ingest_batch", pa.string()),
    ])


RUNS = runs_schema()

ANOMALY_ROWS = pa.schema([
    *KEY,
    pa.field("anomaly", pa.string()),
    pa.field("classified", pa.string()),
    pa.field("instance_index", pa.int64()),
    *(read_field("writes", c) for c in ("value", "topic", "partition", "offset", "process")),
    pa.field("prev_value", pa.string()),
    pa.field("prev_offset", pa.int64()),
    pa.field("time_ns", pa.int64()),
    pa.field("t_s", pa.float64()),
    pa.field("faults", pa.string()),
])

THROUGHPUT = pa.schema([
    *KEY,
    read_field("writes", "az"),
    pa.field("second", pa.int64()),
    *(pa.field(status, pa.int64()) for status in STATUSES),
    pa.field("faults", pa.string()),
])

AVAILABILITY = pa.schema([
    *KEY,
    pa.field("fault_index", pa.int64()),
    read_field("nemesis", "fault"),
    read_field("nemesis", "targets"),
    read_field("writes", "az"),
    pa.field("targeted", pa.bool_()),
    pa.field("start_s", pa.float64()),
    pa.field("stop_s", pa.float64()),
    pa.field("acks_during", pa.int64()),
    pa.field("first_ack_after_start_s", pa.float64()),
    pa.field("longest_gap_s", pa.float64()),
    pa.field("first_ack_after_heal_s", pa.float64()),
])

FAULTS = pa.schema([
    *KEY,
    pa.field("fault_index", pa.int64()),
    read_field("nemesis", "fault"),
    read_field("nemesis", "targets"),
    pa.field("start_ns", pa.int64()),
    pa.field("stop_ns", pa.int64()),
    pa.field("start_s", pa.float64()),
    pa.field("stop_s", pa.float64()),
    pa.field("duration_s", pa.float64()),
])

LEADERSHIP = pa.schema([
    *KEY,
    *(read_field("observations", c) for c in ("topic", "partition", "observer", "leader", "leader_epoch", "isr")),
    pa.field("start_s", pa.float64()),
    pa.field("end_s", pa.float64()),
])

# One row per transaction a producer began (contract v2), its contract columns copied; the lake adds seconds
# since t0, how long it took, how many sends it held, and the faults active at any time between begin and outcome.
TRANSACTIONS = pa.schema([
    *KEY,
    *(read_field("transactions", c) for c in ("process", "txn", "intent", "status", "error", "begin_ns", "end_ns",
                                              "complete_ns", "group", "consumed", "az")),
    pa.field("begin_s", pa.float64()),
    pa.field("complete_s", pa.float64()),
    pa.field("duration_ms", pa.float64()),
    pa.field("sends", pa.int64()),
    pa.field("faults", pa.string()),
])

# One row per partition of a group member's commit, or per partition of a group's committed offset as the final
# drain read it (contract v3), its contract columns copied; the lake adds seconds since t0, how long the commit
# took, and the faults active at any time between its invocation and its outcome.
COMMITS = pa.schema([
    *KEY,
    *(read_field("commits", c) for c in ("process", "group", "kind", "topic", "partition", "offset", "status",
                                         "error", "invoke_ns", "complete_ns", "az")),
    pa.field("invoke_s", pa.float64()),
    pa.field("complete_s", pa.float64()),
    pa.field("latency_ms", pa.float64()),
    pa.field("faults", pa.string()),
])

# Written in this order; `runs` last, so a run is in the lake only once every table holds its rows.
TABLES: dict[str, pa.Schema] = {
    "anomalies": ANOMALY_ROWS,
    "throughput": THROUGHPUT,
    "availability": AVAILABILITY,
    "faults": FAULTS,
    "leadership": LEADERSHIP,
    "transactions": TRANSACTIONS,
    "commits": COMMITS,
    "runs": RUNS,
}
