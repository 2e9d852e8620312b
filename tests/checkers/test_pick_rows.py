"""checkers.parquet.pick_rows: the examples' evidence rows of a Parquet history, as the pandas engine reads them."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from checkers import pandas_engine
from checkers.parquet import pick_rows
from checkers.schema import READS, WRITES
from checkers.sources import locate_history
from tests.checkers.histories import r, reads, w, write


def test_rows_by_value_and_by_position_in_canonical_types_across_files(tmp_path: Path) -> None:
    history = write(tmp_path, {
        "writes": [w("a", 1, offset=0), w("b", 2, offset=1), w("c", 3, status="fail", offset=None),
                   w("d", 4, offset=0, partition=1)],
        "reads": reads(r("a", 0), r("b", 1), r("x", 1), r("d", 0, partition=1), r("e", 2, phase="live")),
    }, fmt="parquet")
    # a second reads file whose types are not the canonical ones: int32 offsets, a dictionary-encoded value
    extra = pq.read_table(history / "reads.parquet").slice(0, 2)
    extra = extra.set_column(extra.schema.get_field_index("offset"), "offset", extra.column("offset").cast(pa.int32()))
    extra = extra.set_column(extra.schema.get_field_index("value"), "value", extra.column("value").dictionary_encode())
    (history / "reads.parquet").rename(tmp_path / "part-0.parquet")
    (history / "reads.parquet").mkdir()  # a dataset directory of two files
    (tmp_path / "part-0.parquet").rename(history / "reads.parquet" / "part-0.parquet")
    pq.write_table(extra, history / "reads.parquet" / "part-1.parquet")
    sources = locate_history(history)

    picked_writes = pick_rows(sources["writes"], WRITES, ["c"], [("t", 1, 0)])
    picked_reads = pick_rows(sources["reads"], READS, ["c", "e"], [("t", 0, 1)])

    assert [row["value"] for row in picked_writes] == ["c", "d"]  # by value; at partition 1 offset 0
    assert sorted(row["value"] for row in picked_reads) == ["b", "b", "e", "x"]  # b twice: both files
    assert all(type(row["offset"]) is int for row in picked_reads)
    assert all(type(row["value"]) is str for row in picked_reads)
    assert list(picked_reads[0]) == [c.name for c in READS.columns]

    engine = pandas_engine.PandasEngine()
    engine.analyse(sources, {})
    expected = engine.evidence(["c", "e"], [("t", 0, 1)])
    assert sorted(map(str, picked_reads)) == sorted(map(str, expected.reads))
    assert pick_rows(sources["writes"], WRITES, [], []) == []
