"""The journal: batched appends readable after a kill, torn last lines skipped, corruption named."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from workloads.journal import Journal, JournalError, JournalReader, NullJournal


def lines_of(path: Path) -> list[dict[str, object]]:
    return [record for _, record in JournalReader(path)]


def test_nothing_reaches_the_file_before_flush_and_everything_after(tmp_path: Path) -> None:
    path = tmp_path / "j" / "p.jsonl"
    journal = Journal(path)
    journal.append({"kind": "a", "n": 1})
    journal.append_line('{"kind":"b"}')
    assert path.read_bytes() == b""
    journal.flush()
    assert path.read_bytes() == b'{"kind":"a","n":1}\n{"kind":"b"}\n'
    journal.flush()  # nothing pending: no empty line
    journal.append({"kind": "c"})
    journal.close()
    journal.close()
    assert lines_of(path) == [{"kind": "a", "n": 1}, {"kind": "b"}, {"kind": "c"}]


def test_an_existing_journal_is_never_reopened(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text('{"kind":"process"}\n')
    with pytest.raises(FileExistsError):
        Journal(path)
    assert path.read_text() == '{"kind":"process"}\n'


def test_the_fsync_thread_syncs_within_its_interval(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "p.jsonl", fsync_interval_s=0.05)
    journal.append({"kind": "a"})
    journal.flush()
    deadline = time.monotonic() + 5
    while journal._dirty and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not journal._dirty
    journal.close()


def test_a_torn_last_line_is_skipped_and_reported(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_bytes(b'{"kind":"a"}\n{"kind":"b"}\n{"kind":"c","op":[1,2')
    reader = JournalReader(path)
    assert [r for _, r in reader] == [{"kind": "a"}, {"kind": "b"}]
    assert reader.torn_tail


def test_a_complete_but_garbled_last_line_counts_as_torn(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_bytes(b'{"kind":"a"}\n\x00\x00\x00\n')
    reader = JournalReader(path)
    assert [r for _, r in reader] == [{"kind": "a"}]
    assert reader.torn_tail


def test_an_intact_journal_has_no_torn_tail(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_bytes(b'{"kind":"a"}\n')
    reader = JournalReader(path)
    assert [(n, r) for n, r in reader] == [(1, {"kind": "a"})]
    assert not reader.torn_tail


@pytest.mark.parametrize("middle", [b"not json\n", b"[1, 2]\n", b"\n"])
def test_a_bad_line_before_the_last_is_corruption_named_by_file_and_line(
    tmp_path: Path, middle: bytes
) -> None:
    path = tmp_path / "p.jsonl"
    path.write_bytes(b'{"kind":"a"}\n' + middle + b'{"kind":"c"}\n')
    with pytest.raises(JournalError, match=rf"{path.name}:2: "):
        list(JournalReader(path))


def test_the_null_journal_writes_nothing(tmp_path: Path) -> None:
    journal = NullJournal()
    journal.append({"kind": "a"})
    journal.flush()
    journal.close()
    assert not journal.enabled
    assert list(tmp_path.iterdir()) == []


def test_many_lines_in_one_flush_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    journal = Journal(path)
    records = [{"kind": "x", "i": i, "s": "é" * (i % 7)} for i in range(20000)]
    for record in records:
        journal.append(record)
    journal.flush()
    journal.close()
    assert lines_of(path) == records
    assert path.read_text().count("\n") == 20000
    assert json.loads(path.read_text().splitlines()[-1]) == records[-1]
