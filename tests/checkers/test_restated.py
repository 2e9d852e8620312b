"""checkers.restated reads contract v2 as the checker does: on a synthetic transactional history its
`uncommitted-read` and `torn-transaction` totals are the pandas engine's counts, and the overlaps it notes are
within them."""

from __future__ import annotations

import json
from pathlib import Path

from checkers.api import check
from checkers.restated import restated
from checkers.synth import SynthSpec, generate, write_history
from checkers.synth_txn import transactional


def test_restated_counts_agree_with_the_checker_on_a_synthetic_history(tmp_path: Path) -> None:
    tables = transactional(generate(SynthSpec(operations=3000, seed=5)), seed=5,
                           plant={"aborted-read": 4, "uncommitted-read": 4, "torn-transaction": 3, "unreadable": 3})
    counts = check(write_history(tables, tmp_path), engine="pandas")["counts"]
    frames = {name: t.to_pandas() for name, t in tables.items()}
    processes = frames["processes"]
    read_committed = {p for p, c in zip(processes["process"], processes["config"], strict=True)
                      if (json.loads(c) if isinstance(c, str) else c or {}).get("isolation.level") == "read_committed"}
    assert read_committed
    found = restated(frames["writes"], frames["reads"], frames["transactions"], read_committed)
    assert found.uncommitted_read == counts["uncommitted-read"] > 0
    assert found.torn == counts["torn-transaction"] > 0
    assert 0 < found.same_as_aborted <= min(counts["aborted-read"], counts["uncommitted-read"])
    assert found.torn_by_unreadable <= found.torn and found.their_unreadable <= counts["unreadable"]
