"""unsyncfs's disk faults on a real mount: EIO, ENOSPC and a slow fsync reach the caller's system calls on the
rule's path only, stop at the stop, and every failed or delayed call is counted per file in the status file."""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed.errors import RuntimeFailure
from testbed.runtime import unsynced

pytestmark = pytest.mark.fuse


@pytest.fixture
def mount(tmp_path: Path) -> Iterator[unsynced.UnsyncedMount]:
    if not Path("/dev/fuse").exists() or os.geteuid() != 0:
        pytest.fail("the unsyncfs tests need root and /dev/fuse")
    data = tmp_path / "data"
    (data / "t-0").mkdir(parents=True)
    m = unsynced.mount(data, "fl0000aa-test-data", dict(os.environ), tmp_path / "logs" / "unsyncfs-data.log")
    yield m
    unsynced.unmount([m])


def write(path: Path, data: bytes, sync: bool = False) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def test_disk_error_on_writes_of_its_path_only_until_stopped(mount: unsynced.UnsyncedMount) -> None:
    seg, other = mount.target / "t-0" / "00.log", mount.target / "cp"
    write(seg, b"before", sync=True)
    unsynced.set_faults(mount, [{"id": "e", "kind": "disk-error", "path": "t-0", "ops": ["write", "fsync"], "p": 1}])
    with pytest.raises(OSError) as exc:
        write(seg, b"x")
    assert exc.value.errno == errno.EIO
    write(other, b"fine", sync=True)  # outside the rule's path
    status = unsynced.set_faults(mount, [])
    assert unsynced.fault_counts(status, "e") == {"counts": {"eio-write": 1}, "files": {"t-0/00.log": {"eio-write": 1}}}
    write(seg, b"after", sync=True)
    assert seg.read_bytes() == b"beforeafter"


def test_disk_error_on_fsync(mount: unsynced.UnsyncedMount) -> None:
    seg = mount.target / "t-0" / "00.log"
    unsynced.set_faults(mount, [{"id": "e", "kind": "disk-error", "path": "", "ops": ["fsync"], "p": 1}])
    with pytest.raises(OSError) as exc:
        write(seg, b"x", sync=True)
    assert exc.value.errno == errno.EIO
    time.sleep(0.5)  # the status is written within 200 ms of a change
    counts = unsynced.fault_counts(unsynced.read_status(mount), "e")["counts"]
    assert counts.get("eio-fsync", 0) >= 1 and "eio-write" not in counts


def test_disk_full_after_free_bytes_and_space_back_at_stop(mount: unsynced.UnsyncedMount) -> None:
    seg = mount.target / "t-0" / "00.log"
    unsynced.set_faults(mount, [{"id": "f", "kind": "disk-full", "path": "t-0", "free_bytes": 10000}])
    fd = os.open(seg, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    written = 0
    try:
        with pytest.raises(OSError) as exc:
            while True:  # the kernel splits a write at page ends: the last one that fits comes back short
                written += os.write(fd, b"a" * 1000)
    finally:
        os.close(fd)
    assert exc.value.errno == errno.ENOSPC and 9000 < written <= 10000
    status = unsynced.set_faults(mount, [])
    assert unsynced.fault_counts(status, "f")["counts"] == {"enospc-write": 1}
    write(seg, b"c" * 4000, sync=True)
    assert seg.stat().st_size == written + 4000


def test_slow_fsync_waits_and_is_counted(mount: unsynced.UnsyncedMount) -> None:
    seg = mount.target / "t-0" / "00.log"
    unsynced.set_faults(mount, [{"id": "s", "kind": "slow-disk", "path": "t-0", "delay_ms": 300}])
    t0 = time.monotonic()
    write(seg, b"x")
    wrote = time.monotonic() - t0
    fd = os.open(seg, os.O_RDONLY)
    try:
        t0 = time.monotonic()
        os.fsync(fd)
        synced = time.monotonic() - t0
    finally:
        os.close(fd)
    assert wrote < 0.2 and 0.3 <= synced < 2.0
    status = unsynced.set_faults(mount, [])
    counts = unsynced.fault_counts(status, "s")["counts"]
    assert counts["delayed-fsync"] == 1 and counts["delay-ms"] == 300


def test_a_bad_rule_is_refused_and_changes_nothing(mount: unsynced.UnsyncedMount) -> None:
    unsynced.set_faults(mount, [{"id": "e", "kind": "disk-error", "path": "", "ops": ["write"], "p": 1}])
    with pytest.raises(RuntimeFailure, match=r"p 1.5 is outside \[0, 1\]"):
        unsynced.set_faults(mount, [{"id": "x", "kind": "disk-error", "path": "", "ops": ["write"], "p": 1.5}])
    with pytest.raises(OSError):
        write(mount.target / "f", b"x")  # the first rule still holds
