"""Contract v2 (spec/history.md, "Transactions and exactly-once"): what both engines share.

The `transactions` table (loaded and validated once, here), the read_committed processes, the
highest input offset each committed transaction recorded per partition, the transaction stats,
and the cheap test of whether a history needs any v2 work at all: a history with no
`transactions` row and no `writes.txn` or `writes.source` value is judged by the v1 rules alone,
and no engine spends anything on v2 for it.

A history **has transactions** when it holds a `transactions` row or a non-null `writes.txn`; as
every non-null `writes.txn` must have its row (else the history is malformed), it has
transactions exactly when its `transactions` table has a row.
Must never: hold `writes` or `reads` (each engine reads those itself).
"""

from __future__ import annotations

import json
import mmap
from dataclasses import dataclass, field
from functools import lru_cache

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from checkers.classify import ClientConfig
from checkers.errors import HistoryError
from checkers.sources import TableSource
from checkers.tables import load_table

TXN_STATS = ("transactions", "committed", "aborted", "unknown")
RC_FINAL = "read_committed_final_reads"
Partition = tuple[str, int]


@dataclass(frozen=True)
class Terms:
    """What the engines need to judge a history by contract v2."""

    transactions: pa.Table | None  # validated, canonical types; None when the history has none
    read_committed: frozenset[str]  # processes whose isolation.level is read_committed
    consumed_high: dict[Partition, int] = field(default_factory=dict)  # per partition, committed transactions
    txn_maybe: bool = False  # some writes.txn may be set: every one must have its row
    source_maybe: bool = False  # some writes.source may be set

    @property
    def has_transactions(self) -> bool:
        return self.transactions is not None and self.transactions.num_rows > 0


def columns_maybe_set(source: TableSource, columns: tuple[str, ...]) -> dict[str, bool]:
    """Per column: whether some row of the table may hold a non-null value (False only when that is certain).

    Parquet: from the footers (a column absent from every file, or counted all-null by the statistics).
    JSONL: False when the key's name never occurs in the file's text (a byte search, no parsing), unless
    the text holds a \\u escape (a key could be spelled with one).
    """
    if source.format == "jsonl":
        path = source.files[0]
        if path.stat().st_size == 0:
            return dict.fromkeys(columns, False)
        with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            escaped = data.find(b"\\u") >= 0
            return {c: escaped or data.find(f'"{c}"'.encode()) >= 0 for c in columns}
    found = dict.fromkeys(columns, False)
    for path in source.files:
        meta = pq.ParquetFile(path).metadata
        names = [meta.schema.column(i).path for i in range(meta.num_columns)]
        for column in columns:
            if column not in names or found[column]:
                continue
            index = names.index(column)
            for group in range(meta.num_row_groups):
                row_group = meta.row_group(group)
                stats = row_group.column(index).statistics
                if stats is None or not stats.has_null_count or stats.null_count < row_group.num_rows:
                    found[column] = True
    return found


def _file_key(source: TableSource) -> tuple[object, ...]:
    return (source, *((f.stat().st_mtime_ns, f.stat().st_size) for f in source.files))


@lru_cache(maxsize=4)
def _load(key: tuple[object, ...]) -> tuple[pa.Table, dict[Partition, int]]:
    source = key[0]
    assert isinstance(source, TableSource)
    table = load_table(source)
    return table, consumed_high(table, source.describe())  # its offsets must parse


def _loaded(sources: dict[str, TableSource]) -> tuple[pa.Table | None, dict[Partition, int]]:
    if "transactions" not in sources:
        return None, {}
    return _load(_file_key(sources["transactions"]))


def load_transactions(sources: dict[str, TableSource]) -> pa.Table | None:
    """The validated `transactions` table (HistoryError naming the file, row and column), or None if absent.

    Loaded (and its `consumed` offsets parsed) once per file version, shared by the context (examples)
    and the engines.
    """
    return _loaded(sources)[0]


def consumed_high(table: pa.Table, where: str) -> dict[Partition, int]:
    """Per (topic, partition): the highest `consumed` offset a committed (status ok) transaction recorded.

    `consumed` is a JSON list of {"topic", "partition", "offset"}; anything else is malformed (HistoryError).
    """
    high: dict[Partition, int] = {}
    table = table.filter(pc.is_valid(table.column("consumed")))
    for txn, status, text in zip(*(table.column(c).to_pylist() for c in ("txn", "status", "consumed")),
                                 strict=True):
        if text is None:
            continue
        try:
            entries = json.loads(text)
            if not isinstance(entries, list):
                raise ValueError("not a JSON list")
            offsets = []
            for entry in entries:
                topic, partition, offset = entry["topic"], entry["partition"], entry["offset"]
                if not (isinstance(topic, str) and all(type(n) is int for n in (partition, offset))):
                    raise ValueError(f"bad entry {json.dumps(entry)[:60]}")
                offsets.append(((topic, partition), offset))
        except (ValueError, TypeError, KeyError) as exc:
            raise HistoryError(f"{where}: column 'consumed'", f"transaction {txn!r}: expected a JSON list of "
                               f'{{"topic", "partition", "offset"}} ({exc})') from None
        if status == "ok":
            for key, offset in offsets:
                high[key] = max(high.get(key, offset), offset)
    return high


def prepare(sources: dict[str, TableSource], configs: dict[str, ClientConfig]) -> Terms | None:
    """The v2 terms of a history, or None when it needs no v2 work (no transaction, no `source` value)."""
    transactions, high = _loaded(sources)
    writes = sources["writes"]
    maybe = columns_maybe_set(writes, ("txn", "source"))
    txn_maybe, source_maybe = maybe["txn"], maybe["source"]
    has_rows = transactions is not None and transactions.num_rows > 0
    if not (has_rows or txn_maybe or source_maybe):
        return None
    return Terms(
        transactions=transactions if has_rows else None,
        read_committed=frozenset(p for p, c in configs.items() if c.read_committed),
        consumed_high=high,
        txn_maybe=txn_maybe,
        source_maybe=source_maybe,
    )


def missing_row(sources: dict[str, TableSource], txn: str) -> HistoryError:
    """The malformed-history error of a `writes.txn` with no `transactions` row."""
    where = f"{sources['writes'].describe()}: column 'txn'"
    if "transactions" not in sources:
        return HistoryError(where, f"transaction {txn!r} is set but the history has no transactions table "
                            "(transactions.jsonl or transactions.parquet)")
    return HistoryError(where, f"transaction {txn!r} has no row in {sources['transactions'].describe()}")


def stats(terms: Terms | None, read_committed_final_reads: int | None = None) -> dict[str, int]:
    """The transaction stats (rows of `transactions` by status); for a history with transactions also its final
    reads by read_committed processes (none: the verdict is unknown)."""
    out = dict.fromkeys(TXN_STATS, 0)
    if terms is not None and terms.transactions is not None:
        counts = {r["values"]: r["counts"] for r in pc.value_counts(terms.transactions.column("status")).to_pylist()}
        out.update(transactions=terms.transactions.num_rows, committed=counts.get("ok", 0),
                   aborted=counts.get("fail", 0), unknown=counts.get("info", 0))
    if terms is not None and terms.has_transactions and read_committed_final_reads is not None:
        out[RC_FINAL] = read_committed_final_reads
    return out
