"""checkers.synth_scale: tiles laid end to end make one history whose anomalies are its tiles' (v1: exactly the
sum of each tile judged alone), with offsets, op_ids, seqs and times continuing across tiles."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from checkers import check
from checkers.synth import SynthSpec, generate, write_history
from checkers.synth_scale import write_tiled

SPEC = SynthSpec(operations=20_000, seed=7)


def test_a_tiled_v1_history_holds_exactly_its_tiles_anomalies(tmp_path: Path) -> None:
    whole = check(write_tiled(SPEC, 3, tmp_path / "tiled"), engine="pandas")["counts"]
    alone: Counter[str] = Counter()
    for k in range(3):
        tile = write_history(generate(replace(SPEC, seed=SPEC.seed + k)), tmp_path / f"tile-{k}")
        alone.update(check(tile, engine="pandas")["counts"])
    assert {a: n for a, n in whole.items() if n} == {a: n for a, n in alone.items() if n}
    assert whole["lost"] == 9 and whole["reordered"] == 9  # three planted in each tile, none at the seams


def test_tiles_continue_offsets_values_seqs_and_times(tmp_path: Path) -> None:
    history = write_tiled(SPEC, 2, tmp_path / "tiled")
    writes, reads = pq.read_table(history / "writes.parquet"), pq.read_table(history / "reads.parquet")
    assert pc.count_distinct(writes.column("value")).as_py() == writes.num_rows  # no value written twice
    final = reads.filter(pc.equal(reads.column("phase"), "final"))
    live = reads.filter(pc.equal(reads.column("phase"), "live"))
    # every final read after every live read: one final log, read once at the end
    assert pc.min(final.column("poll_ns")).as_py() > pc.max(live.column("poll_ns")).as_py()
    for process in set(reads.column("process").to_pylist()):
        seq = reads.filter(pc.equal(reads.column("process"), process)).column("seq").to_pylist()
        assert sorted(seq) == list(range(len(seq))), process
    drain = final.filter(pc.equal(final.column("process"), final.column("process")[0]))
    positions = set(zip(drain.column("partition").to_pylist(), drain.column("offset").to_pylist(), strict=True))
    assert len(positions) > 0.99 * drain.num_rows  # the second tile's offsets follow the first's (a few duplicates)


@pytest.mark.parametrize("form", ["v2", "v3"])
def test_the_transactional_and_group_forms_are_judged(tmp_path: Path, form: str) -> None:
    spec = replace(SPEC, consumers=6) if form == "v3" else SPEC
    counts = check(write_tiled(spec, 2, tmp_path / form, form=form), engine="pandas")["counts"]
    planted = ("torn-transaction", "aborted-read") if form == "v2" else ("rewound", "group-skip")
    assert all(counts[a] >= 2 for a in planted), counts
