"""Synthetic histories larger than memory: checkers.synth's histories laid end to end, written as they are made.

`write_tiled` makes a history of ``tiles`` x ``SynthSpec.operations`` operations without ever holding more
than one tile: tile k is `checkers.synth.generate` with seed ``seed + k`` (optionally turned into contract v2 by
checkers.synth_txn or v3 by checkers.synth_groups), shifted so that it follows tile k-1: its producers' op_ids
(and so their values) and each partition's offsets continue where the last tile's stopped, its times start
``TILE_GAP_NS`` after the last tile's writes, each consumer's and drain's `seq` continues, and every drain's final
reads are moved after every tile's live reads (one final log, read once at the end). Each table is streamed to
one Parquet file by a `ParquetWriter`, a row group per million rows, so 100M operations need the memory of
one tile (about 10M operations: a few GiB), not of the whole.

Every tile plants its own anomalies (checkers.synth's defaults: three of each), so the history holds about
``tiles`` times as many; as in checkers.synth, the counts are for the engines to find, not promised here.
The v3 form keeps only the last tile's final committed offsets (the highest of all, the offsets grow tile by
tile): an earlier tile's would be commits behind later ones.
Must never: write outside ``directory``, or hold two tiles at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from checkers.synth import BASE_NS, WRITE_GAP_NS, SynthSpec, generate

TILE_GAP_NS = 10 * 10**9  # quiet between two tiles, beyond the tile's own writes and reads
DRAIN_GAP_NS = 10**8  # between two drains' final reads, as checkers.synth spaces them
ROW_GROUP = 1_000_000
OP_ROUND = 1000
FORMS = ("v1", "v2", "v3")


def _tile_span(spec: SynthSpec) -> int:
    """Nanoseconds one tile occupies: its writes (checkers.synth: one per WRITE_GAP_NS) and a quiet gap."""
    return max(spec.operations // (2 + spec.drains), 4) * WRITE_GAP_NS + TILE_GAP_NS


def _set(table: pa.Table, name: str, values: pa.Array | pa.ChunkedArray) -> pa.Table:
    i = table.schema.get_field_index(name)
    return table.set_column(i, table.schema.field(i), values.cast(table.schema.field(i).type))


def _shift(column: pa.ChunkedArray, by: int | pa.Array) -> pa.Array:
    return pc.add(column, pa.scalar(by, column.type) if isinstance(by, int) else by)


def _per_key(keys: pa.ChunkedArray, shift: dict[object, int]) -> pa.Array:
    """Each row's shift, by its key (partition, process)."""
    unique = pc.unique(keys)
    index = pc.index_in(keys, value_set=unique)
    table = pa.array([shift.get(k, 0) for k in unique.to_pylist()], type=pa.int64())
    return pc.take(table, index)


class _Stitcher:
    """Where the next tile starts: op_id, offset per partition, seq per reader, time."""

    def __init__(self, spec: SynthSpec, tiles: int) -> None:
        self.spec = spec
        self.k = 0
        self.op_base = 0
        self.offsets: dict[object, int] = {}
        self.seqs: dict[object, int] = {}
        self.span = _tile_span(spec)
        self.final_start = BASE_NS + tiles * self.span  # every tile's final reads after the last tile's live reads

    def writes(self, w: pa.Table) -> pa.Table:
        op_id = _shift(w.column("op_id"), self.op_base)
        # checkers.synth names a write's value "<process>-<op_id>"
        w = _set(w, "value", pc.binary_join_element_wise(w.column("process"), pc.cast(op_id, pa.string()), "-"))
        w = _set(w, "op_id", op_id)
        w = _set(w, "offset", _shift(w.column("offset"), _per_key(w.column("partition"), self.offsets)))
        w = _set(w, "invoke_ns", _shift(w.column("invoke_ns"), self.k * self.span))
        return _set(w, "complete_ns", _shift(w.column("complete_ns"), self.k * self.span))

    def reads(self, r: pa.Table, values: dict[str, str]) -> pa.Table:
        """Reads of the tile; ``values`` maps the tile's own write values to their shifted names."""
        old = r.column("value")
        renamed = pc.take(pa.array(list(values.values()), pa.string()),
                          pc.index_in(old, value_set=pa.array(list(values.keys()), pa.string())))
        r = _set(r, "value", pc.if_else(pc.is_null(renamed), pc.binary_join_element_wise(
            old, pa.scalar(f"t{self.k}"), "-"), renamed))  # phantoms and ghosts: unique per tile
        r = _set(r, "offset", _shift(r.column("offset"), _per_key(r.column("partition"), self.offsets)))
        r = _set(r, "seq", _shift(r.column("seq"), _per_key(r.column("process"), self.seqs)))
        final = pc.equal(r.column("phase"), "final")
        live_poll = _shift(r.column("poll_ns"), self.k * self.span)
        drain_index = pc.index_in(r.column("process"), value_set=pc.unique(pc.filter(r.column("process"), final)))
        final_poll = pc.add(pc.add(pc.multiply(pc.cast(drain_index, pa.int64()), DRAIN_GAP_NS), self.final_start),
                            r.column("seq"))
        return _set(r, "poll_ns", pc.if_else(final, final_poll, live_poll))

    def advance(self, w: pa.Table, r: pa.Table) -> None:
        """After tile k is written: the next op_id, each partition's next offset, each reader's next seq."""
        # a round number, so checkers.synth_txn's transactions (op_id // txn_size) never straddle two tiles
        self.op_base = (int(pc.max(w.column("op_id")).as_py()) // OP_ROUND + 1) * OP_ROUND
        for table in (w, r):
            high = table.group_by("partition").aggregate([("offset", "max")]).to_pylist()
            for row in high:
                if row["offset_max"] is not None:
                    self.offsets[row["partition"]] = max(self.offsets.get(row["partition"], 0),
                                                         row["offset_max"] + 1)
        for row in r.group_by("process").aggregate([("seq", "max")]).to_pylist():
            self.seqs[row["process"]] = row["seq_max"] + 1
        self.k += 1


def _tile(spec: SynthSpec, stitch: _Stitcher) -> dict[str, pa.Table]:
    """Tile k in v1 form, shifted after the tiles before it."""
    tables = generate(replace(spec, seed=spec.seed + stitch.k))
    before = tables["writes"].column("value")
    writes = stitch.writes(tables["writes"])
    values = dict(zip(before.to_pylist(), writes.column("value").to_pylist(), strict=True))
    reads = stitch.reads(tables["reads"], values)
    shift = stitch.k * stitch.span
    nemesis = _set(tables["nemesis"], "time_ns", _shift(tables["nemesis"].column("time_ns"), shift))
    observations = _set(tables["observations"], "time_ns", _shift(tables["observations"].column("time_ns"), shift))
    return {**tables, "writes": writes, "reads": reads, "nemesis": nemesis, "observations": observations}


def write_tiled(spec: SynthSpec, tiles: int, directory: str | Path, form: str = "v1",
                log: Callable[[str], None] = lambda _: None) -> Path:
    """A history of ``tiles`` tiles of ``spec.operations`` operations each, in ``form`` (v1, v2, v3)."""
    from checkers.synth_groups import grouped
    from checkers.synth_txn import transactional

    if form not in FORMS:
        raise ValueError(f"form {form!r}: one of {', '.join(FORMS)}")
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    stitch = _Stitcher(spec, tiles)
    writers: dict[str, pq.ParquetWriter] = {}
    try:
        for k in range(tiles):
            started = time.perf_counter()
            tables = _tile(spec, stitch)
            stitch.advance(tables["writes"], tables["reads"])
            if form == "v2":
                tables = transactional(tables, seed=spec.seed + k)
            elif form == "v3":
                # the seed's parity sets the members' commit modes (checkers.synth_groups): alike in every tile
                tables = grouped(tables, seed=spec.seed + 2 * k)
                if k < tiles - 1:
                    commits = tables["commits"]
                    tables["commits"] = commits.filter(pc.not_equal(commits.column("kind"), "final"))
            for name, table in tables.items():
                if name == "processes" and k > 0:
                    continue  # the same processes in every tile
                if name in writers:
                    table = table.cast(writers[name].schema)
                else:
                    writers[name] = pq.ParquetWriter(out / f"{name}.parquet", table.schema)
                writers[name].write_table(table, row_group_size=ROW_GROUP)
            log(f"tile {k + 1}/{tiles} ({form}) in {time.perf_counter() - started:.1f} s")
    finally:
        for writer in writers.values():
            writer.close()
    return out
