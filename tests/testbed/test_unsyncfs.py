"""The lose-unsynced-writes filesystem: after a power cut, exactly what was fsynced remains.

Each test is a small program of writes, fsyncs, more writes, then a power cut
(the serving process SIGKILLed, its mount detached) and a fresh mount over the
same directory, which shows what survived. The operations are those Kafka and
ZooKeeper make: appends, preallocated and memory-mapped index files (msync),
truncation, renames of segments and checkpoint files, directory fsync.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed.runtime import unsynced

pytestmark = pytest.mark.fuse


class Disk:
    """A directory with unsyncfs mounted over it, and power cuts of it."""

    def __init__(self, root: Path, mode: str) -> None:
        self.dir = root / "data"
        self.log = root / "unsyncfs.log"
        self.mode = mode
        self.dir.mkdir()
        self.mount = self._mount()

    def _mount(self) -> unsynced.UnsyncedMount:
        return unsynced.mount(self.dir, "fl0000aa-test-data", dict(os.environ), self.log, self.mode)

    def power_cut(self) -> None:
        unsynced.cut([self.mount])
        assert str(self.dir) not in unsynced.mounted()
        self.mount = self._mount()

    def clean_shutdown(self) -> None:
        assert unsynced.unmount([self.mount]) == []
        self.mount = self._mount()

    def path(self, name: str) -> Path:
        return self.dir / name

    def fsync(self, name: str = ".") -> None:
        fd = os.open(self.path(name), os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@pytest.fixture(params=["journal"])
def disk(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Disk]:
    if not Path("/dev/fuse").exists() or os.geteuid() != 0:
        pytest.fail("the unsyncfs tests need root and /dev/fuse")
    d = Disk(tmp_path, request.param)
    yield d
    unsynced.unmount([d.mount])


@pytest.fixture
def strict_disk(tmp_path: Path) -> Iterator[Disk]:
    d = Disk(tmp_path, "strict")
    yield d
    unsynced.unmount([d.mount])


def append(path: Path, data: bytes, sync: bool = False) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def test_appends_keep_exactly_the_fsynced_prefix(disk: Disk) -> None:
    log = disk.path("00000000000000000000.log")
    append(log, b"a" * 10000)
    disk.fsync()  # the segment's name is durable
    append(log, b"b" * 5000, sync=True)
    append(log, b"c" * 7000)
    assert log.read_bytes() == b"a" * 10000 + b"b" * 5000 + b"c" * 7000  # reads see the unsynced state
    disk.power_cut()
    assert log.read_bytes() == b"a" * 10000 + b"b" * 5000


def test_unsynced_overwrite_inside_synced_data_is_undone(disk: Disk) -> None:
    f = disk.path("f")
    append(f, bytes(range(256)) * 1000, sync=True)
    disk.fsync()
    fd = os.open(f, os.O_RDWR)
    os.pwrite(fd, b"X" * 100, 70000)
    os.close(fd)
    assert f.read_bytes()[70000:70100] == b"X" * 100
    disk.power_cut()
    assert f.read_bytes() == bytes(range(256)) * 1000


def test_preallocated_memory_mapped_index_keeps_what_msync_wrote(disk: Disk) -> None:
    """Kafka's offset index: a file preallocated with ftruncate, written through MAP_SHARED, flushed with msync."""
    index = disk.path("00000000000000000000.index")
    size = 1 << 20
    with open(index, "wb") as f:
        f.truncate(size)
        f.flush()
        os.fsync(f.fileno())
    disk.fsync()
    fd = os.open(index, os.O_RDWR)
    mm = mmap.mmap(fd, size, mmap.MAP_SHARED)
    os.close(fd)  # the mapping keeps the file open, as a broker's index does
    mm[0:8192] = b"\x01" * 8192
    mm.flush(0, 8192)  # msync(MS_SYNC)
    mm[8192:12288] = b"\x02" * 4096  # dirty in the page cache, never msynced
    mm[100:108] = b"\x03" * 8  # an unsynced change to an msynced page
    assert index.read_bytes()[8192:8200] == b"\x02" * 8
    disk.power_cut()
    mm.close()  # the mapping belongs to the dead mount
    data = index.read_bytes()
    assert len(data) == size
    assert data[:8192] == b"\x01" * 8192
    assert data[8192:] == bytes(size - 8192)


def test_truncation_is_durable_only_once_the_file_is_fsynced(disk: Disk) -> None:
    f = disk.path("seg.log")
    append(f, b"x" * 1000, sync=True)
    disk.fsync()
    os.truncate(f, 100)
    assert f.stat().st_size == 100
    disk.power_cut()
    assert f.read_bytes() == b"x" * 1000
    os.truncate(f, 100)
    fd = os.open(f, os.O_WRONLY)
    os.pwrite(fd, b"y", 499)  # extending after a truncation reads zeros between
    os.fsync(fd)
    os.close(fd)
    os.truncate(f, 50)  # unsynced
    disk.power_cut()
    assert f.read_bytes() == b"x" * 100 + bytes(399) + b"y"


def test_rename_without_a_directory_fsync_is_undone(disk: Disk) -> None:
    tmp, final = disk.path("replication-offset-checkpoint.tmp"), disk.path("replication-offset-checkpoint")
    append(final, b"old\n", sync=True)
    disk.fsync()
    append(tmp, b"new\n", sync=True)  # journal mode: this fsync makes the tmp name durable too
    os.rename(tmp, final)
    assert final.read_bytes() == b"new\n" and not tmp.exists()
    disk.power_cut()
    assert final.read_bytes() == b"old\n"
    assert tmp.read_bytes() == b"new\n"


def test_rename_with_a_directory_fsync_is_durable(disk: Disk) -> None:
    tmp, final = disk.path("leader-epoch-checkpoint.tmp"), disk.path("leader-epoch-checkpoint")
    append(final, b"old\n", sync=True)
    append(tmp, b"new\n", sync=True)
    os.rename(tmp, final)
    disk.fsync()
    disk.power_cut()
    assert final.read_bytes() == b"new\n"
    assert not tmp.exists()


def test_a_renamed_directory_keeps_its_files(disk: Disk) -> None:
    """Kafka renames a partition's directory to delete it (`topic-0.<id>-delete`)."""
    os.mkdir(disk.path("t-0"))
    append(disk.path("t-0/0.log"), b"records", sync=True)
    disk.fsync()
    os.rename(disk.path("t-0"), disk.path("t-0.abc-delete"))
    append(disk.path("t-0.abc-delete/0.log"), b" more")
    disk.power_cut()
    assert disk.path("t-0/0.log").read_bytes() == b"records"
    assert not disk.path("t-0.abc-delete").exists()
    os.rename(disk.path("t-0"), disk.path("t-0.abc-delete"))
    append(disk.path("t-0.abc-delete/0.log"), b" more", sync=True)  # journal mode: commits the rename too
    disk.power_cut()
    assert disk.path("t-0.abc-delete/0.log").read_bytes() == b"records more"
    assert not disk.path("t-0").exists()


def test_create_without_any_fsync_is_gone(disk: Disk) -> None:
    append(disk.path("new.log"), b"data")
    os.mkdir(disk.path("newdir"))
    disk.power_cut()
    assert sorted(os.listdir(disk.dir)) == []


def test_create_with_a_directory_fsync_keeps_the_name_not_the_data(disk: Disk) -> None:
    append(disk.path("new.log"), b"data")
    disk.fsync()
    disk.power_cut()
    assert disk.path("new.log").read_bytes() == b""


def test_unlink_without_a_directory_fsync_comes_back(disk: Disk) -> None:
    append(disk.path("old.log"), b"data", sync=True)
    disk.fsync()
    os.unlink(disk.path("old.log"))
    assert not disk.path("old.log").exists()
    disk.power_cut()
    assert disk.path("old.log").read_bytes() == b"data"
    os.unlink(disk.path("old.log"))
    disk.fsync()
    disk.power_cut()
    assert not disk.path("old.log").exists()


def test_an_open_unlinked_file_keeps_its_data_until_closed(disk: Disk) -> None:
    append(disk.path("f"), b"data", sync=True)
    disk.fsync()
    fd = os.open(disk.path("f"), os.O_RDWR)
    os.unlink(disk.path("f"))
    disk.fsync()  # the unlink is durable; the open file is not gone yet
    assert os.pread(fd, 4, 0) == b"data"
    os.pwrite(fd, b"more", 4)
    os.fsync(fd)
    assert os.pread(fd, 8, 0) == b"datamore"
    os.close(fd)
    disk.power_cut()
    assert os.listdir(disk.dir) == []


def test_a_clean_shutdown_keeps_everything(disk: Disk) -> None:
    append(disk.path("f"), b"unsynced")
    os.mkdir(disk.path("d"))
    os.rename(disk.path("f"), disk.path("d/g"))
    disk.clean_shutdown()
    assert disk.path("d/g").read_bytes() == b"unsynced"


def test_a_kill_of_the_writer_is_not_a_power_cut(disk: Disk) -> None:
    """Only the filesystem's power matters: a writer that dies leaves its unsynced data readable."""
    append(disk.path("f"), b"written")
    assert disk.path("f").read_bytes() == b"written"
    assert disk.mount.alive()


def test_strict_mode_a_file_fsync_does_not_make_its_name_durable(strict_disk: Disk) -> None:
    disk = strict_disk
    append(disk.path("a"), b"synced data", sync=True)
    disk.power_cut()
    assert not disk.path("a").exists()
    os.mkdir(disk.path("d"))
    append(disk.path("d/b"), b"synced data", sync=True)
    disk.fsync("d")  # commits in order, up to the last change in d: the mkdir of d comes with it
    disk.power_cut()
    assert disk.path("d/b").read_bytes() == b"synced data"


def test_the_mount_carries_the_run_prefix_for_clean(disk: Disk) -> None:
    assert unsynced.mounted()[str(disk.dir)] == "fl0000aa-test-data"
    assert unsynced.clean_mounts("fl0000ab") == []
    unsynced.signal_cut([disk.mount])  # clean kills the run's processes first (by RUN_ENV)
    assert unsynced.clean_mounts("fl0000aa") == [f"mount {disk.dir}"]
    assert str(disk.dir) not in unsynced.mounted()
