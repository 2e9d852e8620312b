"""A run folder handed over: readable by all, owned by the user behind sudo; node data pruned after the dump."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from testbed.handover import hand_over, prune_node_data
from testbed.runfolder import RunFolder


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def private_run(root: Path) -> RunFolder:
    """A run folder as a root harness with umask 077 leaves it: everything 0600 / 0700."""
    folder = RunFolder(root).make()
    node = folder.node("az1-node")
    for path, size in [(folder.verdict, 10), (node.data("broker") / "faultline-0" / "00000000000000000000.index", 0),
                       (node.data("zookeeper") / "version-2" / "log.1", 0), (node.logs("broker") / "server.log", 5),
                       (node.replica_dump_dir / "faultline-0.txt.gz", 5), (node.config("broker"), 5)]:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(b"x" * size)
            fh.truncate(10 << 20 if size == 0 else size)  # preallocated, sparse: Kafka's index, ZooKeeper's log
    (root / "tool.sh").write_text("#!/bin/sh\n")
    os.chmod(root / "tool.sh", 0o700)
    for here, dirs, files in os.walk(root):
        for d in dirs:
            os.chmod(Path(here) / d, 0o700)
        for f in files:
            if f != "tool.sh":
                os.chmod(Path(here) / f, 0o600)
    os.chmod(root, 0o700)
    (root.parent / "latest").symlink_to(root.name)
    return folder


def test_every_file_becomes_0644_and_every_folder_0755(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SUDO_UID", raising=False)
    folder = private_run(tmp_path / "scenario" / "run")
    hand_over(folder.root, [tmp_path / "scenario", tmp_path / "scenario" / "latest"])
    for path in [tmp_path / "scenario", folder.root, *folder.root.rglob("*")]:
        want = 0o755 if path.is_dir() or path.name == "tool.sh" else 0o644
        assert mode(path) == want, (path, oct(mode(path)))


@pytest.mark.skipif(os.geteuid() != 0, reason="giving files away needs root (CI runs as root)")
def test_under_sudo_everything_belongs_to_the_invoking_user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUDO_UID", "65533")
    monkeypatch.setenv("SUDO_GID", "65532")
    folder = private_run(tmp_path / "scenario" / "run")
    outside = tmp_path / "bystander"
    outside.write_text("not the run's")
    hand_over(folder.root, [tmp_path / "scenario", tmp_path / "scenario" / "latest"])
    for path in [tmp_path / "scenario", tmp_path / "scenario" / "latest", folder.root, *folder.root.rglob("*")]:
        assert (path.lstat().st_uid, path.lstat().st_gid) == (65533, 65532), path
    assert outside.stat().st_uid == os.geteuid(), "nothing outside the run is given away"


def test_pruning_keeps_dumps_configs_and_logs_and_frees_the_preallocated_files(tmp_path: Path) -> None:
    folder = private_run(tmp_path / "scenario" / "run")
    node = folder.node("az1-node")
    prune_node_data(folder)
    assert not node.data("broker").exists() and not node.data("zookeeper").exists()
    for kept in (node.logs("broker") / "server.log", node.replica_dump_dir / "faultline-0.txt.gz",
                 node.config("broker"), folder.verdict):
        assert kept.is_file(), kept
    apparent = sum(p.lstat().st_size for p in folder.root.rglob("*") if p.is_file())
    assert apparent < 1 << 20, "no preallocated file is left to make the folder look bigger than it is"
