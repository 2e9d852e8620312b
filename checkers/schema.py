"""The history contract (spec/history.md), declared once: every table, every column.

This module is the one owner of the history tables' columns. Everything else is derived from
it: the Arrow schemas the workloads write (`arrow_schema`), the types both checker engines read
(`read_type`, `Column.kind`), the lake's copies of contract columns (`read_field`), and the column
tables of docs/history.md (`python -m checkers.history_docs`, `make history-docs`). Adding a
column or a table is one edit here, plus the logic that uses it.

A column's logical ``type`` says what a writer writes:

- ``string``; ``int32`` and ``int64`` (integers of that width);
- ``id``: a string (written as one; a reader also takes an integer and reads its text);
- ``json``: a string holding a JSON object (in JSONL also the object itself);
- ``any``: a string holding any JSON value (in JSONL also the value itself; read as its JSON
  text unless it is a string).

Readers are lenient where writers are exact: the checker accepts any integer width (and reads it
as int64), which `Column.kind` expresses (``string``, ``int``, ``id``, ``json``, ``any``). A
column is ``required`` when a Parquet table must have it; a ``nullable`` column may hold nulls,
and in JSONL an absent key reads as null. Non-nullable columns are required on every line or row.
Must never: import pyarrow at module level (the harness imports this cheaply) or read a file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import pyarrow as pa

Type = Literal["string", "int32", "int64", "id", "json", "any"]
Kind = Literal["string", "int", "id", "json", "any"]

STATUSES = ("ok", "fail", "info")
INTENTS = ("commit", "abort")
PHASES = ("live", "final")
NEMESIS_TYPES = ("start", "stop", "info")
COMMIT_MODES = ("before", "after", "auto", "none")  # processes.commit (contract v3)
COMMIT_KINDS = ("sync", "async", "auto", "final")  # commits.kind (contract v3)

KINDS: dict[Type, Kind] = {"string": "string", "int32": "int", "int64": "int", "id": "id", "json": "json",
                           "any": "any"}
# How docs/history.md names each type.
TYPE_TEXT: dict[Type, str] = {"string": "string", "int32": "int32", "int64": "int64",
                              "id": "string (an integer reads as its text)", "json": "JSON object string",
                              "any": "JSON string"}


@dataclass(frozen=True)
class Column:
    """One column of a history table."""

    name: str
    type: Type
    nullable: bool = True
    required: bool = False
    doc: str = ""

    @property
    def kind(self) -> Kind:
        """What a reader accepts: any integer width is ``int``."""
        return KINDS[self.type]

    def type_text(self) -> str:
        """The type as docs/history.md shows it: ``int64``, ``string or null``."""
        return TYPE_TEXT[self.type] + (" or null" if self.nullable else "")


@dataclass(frozen=True)
class TableSpec:
    """One history table: its columns, allowed values and unique columns."""

    name: str
    required: bool
    columns: tuple[Column, ...]
    domains: dict[str, tuple[str, ...]] = field(default_factory=dict)
    unique: tuple[str, ...] = ()
    doc: str = ""  # what one row is

    def column(self, name: str) -> Column:
        """The column called ``name``; KeyError if the table has none."""
        for col in self.columns:
            if col.name == name:
                return col
        raise KeyError(name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)


def _must(name: str, type_: Type, doc: str = "") -> Column:
    return Column(name, type_, nullable=False, required=True, doc=doc)


def _may(name: str, type_: Type, doc: str = "", required: bool = False) -> Column:
    return Column(name, type_, nullable=True, required=required, doc=doc)


WRITES = TableSpec(
    "writes",
    required=True,
    doc="one send attempt of one unique value",
    columns=(
        _must("process", "string", "the client process that sent it, e.g. `producer-az1-0`"),
        _must("op_id", "int64", "per process, strictly increasing in the order `produce()` was called"),
        _must("topic", "string"),
        _may("key", "string", "the record key, if any"),
        _must("value", "string", "unique within the run: no two attempts share a value (faultline's are "
              "`<process>-<op_id>`)"),
        _may("partition", "int32", "the partition it was sent to, where known", required=True),
        _may("offset", "int64", "the offset the broker acknowledged; null unless `status` is `ok` and the broker "
             "returned one (acks=0 returns none)", required=True),
        _must("status", "string", "`ok`: acknowledged. `fail`: definitely not written (the broker or client says "
              "it never was). `info`: unknown (timeouts, lost connections, possibly persisted)"),
        _may("error", "string", "the error name for `fail` and `info`, e.g. `NOT_ENOUGH_REPLICAS`, "
             "`_MSG_TIMED_OUT`"),
        _must("invoke_ns", "int64", "when the send was called"),
        _may("complete_ns", "int64", "when its outcome arrived; null if the process ended first (then `status` "
             "is `info`)"),
        _may("az", "string", "the availability zone the process ran in"),
        _may("txn", "string", "the transaction this send belongs to, unique within the run (e.g. "
             "`producer-az1-0-t17`); null for a send outside any transaction (contract v2)"),
        _may("source", "string", "for a record written by a consume-transform-produce process: the `value` of "
             "the input record it was derived from; null otherwise (contract v2)"),
    ),
    domains={"status": STATUSES},
    unique=("value",),
)

READS = TableSpec(
    "reads",
    required=True,
    doc="one record handed to a consumer by a poll",
    columns=(
        _must("process", "string", "the consumer process (`consumer-az2-0`, or `drain-az1` for the final drain)"),
        _must("seq", "int64", "per process, strictly increasing in the order records were returned by polls"),
        _must("phase", "string", "`live`: read while the test ran. `final`: read by the final drain after the "
              "cluster healed, from the earliest offset to the end of each partition"),
        _must("topic", "string"),
        _must("partition", "int32"),
        _must("offset", "int64"),
        _may("key", "string"),
        _must("value", "string"),
        _may("leader_epoch", "int32", "as the record batch carries it"),
        _must("poll_ns", "int64", "when the poll that returned it came back"),
        _may("az", "string"),
        _may("group", "string", "the consumer group, if it consumed as a group member"),
    ),
    domains={"phase": PHASES},
)

PROCESSES = TableSpec(
    "processes",
    required=False,
    doc="one client process and the settings that decide its verdict",
    columns=(
        _must("process", "string", "the process name used in `writes` and `reads`"),
        _may("role", "string", "`producer`, `consumer`, `drain` or `transformer` (consume-transform-produce)"),
        _may("az", "string"),
        _may("config", "json", "the client settings that matter to the verdict: `acks`, `enable.idempotence`, "
             "`max.in.flight.requests.per.connection`, `retries`, `isolation.level`, `enable.auto.commit`, "
             "`transactional.id`, ...; for a group member also `group.id`, `group.protocol`, "
             "`partition.assignment.strategy`, `auto.offset.reset` and `session.timeout.ms` (contract v3)"),
        _may("commit", "string", "how a group member commits (contract v3): `before` (commits the offsets a poll "
             "returned, synchronously, before it records them; nothing recorded from a poll whose commit did not "
             "succeed: at-most-once), `after` (records, then commits synchronously: at-least-once), `auto` "
             "(librdkafka's `enable.auto.commit`), `none` (never commits); null for anything not a group member"),
    ),
    domains={"commit": COMMIT_MODES},
)

NEMESIS = TableSpec(
    "nemesis",
    required=False,
    doc="one fault event (start, stop, info)",
    columns=(
        _must("time_ns", "int64", "when the event took effect"),
        _must("type", "string", "`start`, `stop` or `info`"),
        _may("fault", "string", "the fault kind, e.g. `isolate-az`, or `heal-all`"),
        _may("targets", "any", "what it resolved to: nodes, AZs, links, processes"),
        _may("detail", "any", "the fault as the spec wrote it, the rules installed, errors"),
    ),
    domains={"type": NEMESIS_TYPES},
)

OBSERVATIONS = TableSpec(
    "observations",
    required=False,
    doc="one broker's own view of one partition at one moment",
    columns=(
        _must("time_ns", "int64", "when the observer asked"),
        _must("observer", "id", "the broker (or ZooKeeper server) whose own view this is"),
        _may("topic", "string"),
        _may("partition", "int32"),
        _may("leader", "int32", "the broker it believes leads the partition"),
        _may("isr", "any", "the in-sync replicas it believes in (a JSON list)"),
        _may("leader_epoch", "int32"),
        _may("controller", "int32", "the broker it believes is controller (KRaft: its node's controller's "
             "broker id while that controller believes it leads the quorum, else null)"),
        _may("high_watermark", "int64", "the partition's high watermark that broker reported (contract v2)"),
        _may("last_stable_offset", "int64", "the partition's last stable offset that broker reported (contract "
             "v2): one that stops advancing shows a transaction left open"),
    ),
)

TRANSACTIONS = TableSpec(
    "transactions",
    required=False,
    doc="one transaction a producer began (contract v2; required as soon as any `writes.txn` is set)",
    columns=(
        _must("process", "string", "the transactional producer"),
        _must("txn", "string", "as in `writes.txn`: every non-null `writes.txn` has exactly one row here"),
        _may("intent", "string", "`commit` or `abort`: what the process chose to end it with (a deliberate abort "
             "is part of a workload); null when it ended neither way (`end_ns` null), which reads as `commit`"),
        _must("status", "string", "`ok`: committed (`commit_transaction` returned success). `fail`: definitely "
              "not committed (`abort_transaction` returned success, or the commit failed with an error after "
              "which the transaction is known to be aborted). `info`: unknown (the commit timed out or raised a "
              "fatal error, or the process ended first)"),
        _may("error", "string", "the error name where an error decided `fail` or `info`; null for a deliberate "
             "abort"),
        _must("begin_ns", "int64", "when `begin_transaction` was called"),
        _may("end_ns", "int64", "when `commit_transaction` or `abort_transaction` was first called; null if "
             "neither was"),
        _may("complete_ns", "int64", "when its outcome arrived"),
        _may("group", "string", "the consumer group whose offsets it committed (`send_offsets_to_transaction`), "
             "if any"),
        _may("consumed", "any", "those offsets: a JSON list of `{\"topic\", \"partition\", \"offset\"}`, offset "
             "being the next one to consume (Kafka's convention)"),
        _may("az", "string"),
    ),
    domains={"intent": INTENTS, "status": STATUSES},
    unique=("txn",),
)

COMMITS = TableSpec(
    "commits",
    required=False,
    doc="one partition of one commit a group member made, or one partition's committed offset as the final drain "
        "read it (contract v3)",
    columns=(
        _must("process", "string", "the group member that committed, or the drain that read the final offsets"),
        _must("group", "string", "the consumer group"),
        _must("kind", "string", "`sync` or `async`: a commit the process asked for. `auto`: one librdkafka made by "
              "itself, as its commit callback reported it. `final`: the group's committed offset as the final "
              "drain read it, after the heal, once every member had stopped"),
        _must("topic", "string"),
        _must("partition", "int32"),
        _may("offset", "int64", "the committed offset, the next one to consume (Kafka's convention); for `final`, "
             "null when the group has no committed offset there", required=True),
        _must("status", "string", "`ok`: the coordinator acknowledged it. `fail`: definitely not stored (a "
              "generation, member or epoch error that says the commit was refused). `info`: unknown (a timeout, a "
              "lost coordinator, the process ended first). A `final` row is always `ok`"),
        _may("error", "string", "the error name for `fail` and `info`"),
        _must("invoke_ns", "int64", "when the commit (or the final read) was asked for"),
        _may("complete_ns", "int64", "when its outcome arrived; null if the process ended first"),
        _may("az", "string"),
    ),
    domains={"kind": COMMIT_KINDS, "status": STATUSES},
)

# In docs/history.md's order.
TABLES: dict[str, TableSpec] = {spec.name: spec for spec in (WRITES, READS, PROCESSES, NEMESIS, OBSERVATIONS,
                                                              TRANSACTIONS, COMMITS)}


def arrow_type(col: Column) -> pa.DataType:
    """The Arrow type a writer writes the column as (int32 or int64 exactly; JSON as its text)."""
    import pyarrow as pa

    return {"int32": pa.int32(), "int64": pa.int64()}.get(col.type, pa.string())


def arrow_schema(table: str) -> pa.Schema:
    """The Arrow schema of a table as the workloads write it: exact widths, non-nullable where the contract says."""
    import pyarrow as pa

    return pa.schema([pa.field(c.name, arrow_type(c), nullable=c.nullable) for c in TABLES[table].columns])


def read_type(col: Column) -> pa.DataType:
    """The canonical type a reader holds the column in: every integer as int64, everything else as a string."""
    import pyarrow as pa

    return pa.int64() if col.kind == "int" else pa.string()


def read_field(table: str, column: str) -> pa.Field:
    """A contract column as another table restates it (the lake): its canonical type, nullable."""
    import pyarrow as pa

    return pa.field(column, read_type(TABLES[table].column(column)))
