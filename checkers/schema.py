"""The history tables of spec/history.md as data: columns, types, domains.

Kinds: ``string``; ``int`` (any integer, read as int64); ``id`` (a string
or an integer, read as a string); ``json`` (a string holding a JSON object,
or in JSONL the object itself; read as its JSON text); ``any`` (any JSON
value, read as its JSON text unless it is a string). A column is ``required`` when a Parquet table
must have it; a ``nullable`` column may hold nulls, and in JSONL an absent key
reads as null. Non-nullable columns are required on every line or row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Kind = Literal["string", "int", "id", "json", "any"]

STATUSES = ("ok", "fail", "info")
PHASES = ("live", "final")
NEMESIS_TYPES = ("start", "stop", "info")


@dataclass(frozen=True)
class Column:
    """One column of a history table."""

    name: str
    kind: Kind
    nullable: bool = True
    required: bool = False


@dataclass(frozen=True)
class TableSpec:
    """One history table: its columns, allowed values and unique columns."""

    name: str
    required: bool
    columns: tuple[Column, ...]
    domains: dict[str, tuple[str, ...]] = field(default_factory=dict)
    unique: tuple[str, ...] = ()

    def column(self, name: str) -> Column:
        """The column called ``name``; KeyError if the table has none."""
        for col in self.columns:
            if col.name == name:
                return col
        raise KeyError(name)


def _must(name: str, kind: Kind) -> Column:
    return Column(name, kind, nullable=False, required=True)


def _may(name: str, kind: Kind, required: bool = False) -> Column:
    return Column(name, kind, nullable=True, required=required)


WRITES = TableSpec(
    "writes",
    required=True,
    columns=(
        _must("process", "string"),
        _must("op_id", "int"),
        _must("topic", "string"),
        _may("key", "string"),
        _must("value", "string"),
        _may("partition", "int", required=True),
        _may("offset", "int", required=True),
        _must("status", "string"),
        _may("error", "string"),
        _must("invoke_ns", "int"),
        _may("complete_ns", "int"),
        _may("az", "string"),
    ),
    domains={"status": STATUSES},
    unique=("value",),
)

READS = TableSpec(
    "reads",
    required=True,
    columns=(
        _must("process", "string"),
        _must("seq", "int"),
        _must("phase", "string"),
        _must("topic", "string"),
        _must("partition", "int"),
        _must("offset", "int"),
        _may("key", "string"),
        _must("value", "string"),
        _may("leader_epoch", "int"),
        _must("poll_ns", "int"),
        _may("az", "string"),
        _may("group", "string"),
    ),
    domains={"phase": PHASES},
)

PROCESSES = TableSpec(
    "processes",
    required=False,
    columns=(
        _must("process", "string"),
        _may("role", "string"),
        _may("az", "string"),
        _may("config", "json"),
    ),
)

NEMESIS = TableSpec(
    "nemesis",
    required=False,
    columns=(
        _must("time_ns", "int"),
        _must("type", "string"),
        _may("fault", "string"),
        _may("targets", "any"),
        _may("detail", "any"),
    ),
    domains={"type": NEMESIS_TYPES},
)

OBSERVATIONS = TableSpec(
    "observations",
    required=False,
    columns=(
        _must("time_ns", "int"),
        _must("observer", "id"),
        _may("topic", "string"),
        _may("partition", "int"),
        _may("leader", "int"),
        _may("isr", "any"),
        _may("leader_epoch", "int"),
        _may("controller", "int"),
    ),
)

TABLES: dict[str, TableSpec] = {spec.name: spec for spec in (WRITES, READS, PROCESSES, NEMESIS, OBSERVATIONS)}
