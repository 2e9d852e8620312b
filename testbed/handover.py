"""A finished run folder made into results anyone can open and copy.

- `prune_node_data`: each node's Kafka and ZooKeeper data folders removed once
  the replicas are dumped. Kafka preallocates every index file (10 MB each) and
  ZooKeeper its transaction log (64 MB), sparse on disk, so a run folder of
  12 MB looks 560 MB to `du --apparent-size`, a `tar`, an `rsync` or a CI
  artifact upload. The replica dumps, before-heal copies, configs and logs stay.
- `hand_over`: every file 0644 (0755 if executable), every folder 0755, and,
  under `sudo`, everything owned by the invoking user (SUDO_UID/SUDO_GID), so a
  notebook or a CI step running as that user can read the run the harness wrote
  as root.

Must never: touch anything outside the folders it is given, follow a symlink
out of them, or prune a data folder whose replicas were not dumped.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
from collections.abc import Iterable
from pathlib import Path

from testbed.runfolder import ROLE_DATA, RunFolder

log = logging.getLogger("faultline.handover")
FILE_MODE, DIR_MODE = 0o644, 0o755


def prune_node_data(folder: RunFolder) -> int:
    """Remove every node's data folders (the caller has dumped the replicas); the bytes they took on disk."""
    freed = 0
    for node in folder.node_folders():
        for role in ROLE_DATA:
            data = node.data(role)
            if data.is_dir() and not data.is_symlink():
                freed += sum(p.lstat().st_blocks * 512 for p in data.rglob("*"))
                shutil.rmtree(data)
    if freed:
        log.info("pruned the nodes' data folders of %s (%.1f MB on disk); --keep-data keeps them",
                 folder.root, freed / 2**20)
    return freed


def invoking_user() -> tuple[int, int] | None:
    """(uid, gid) of the user who ran `sudo`, when we are root under it; else None (nothing to give away)."""
    if os.geteuid() != 0:
        return None
    try:
        return int(os.environ["SUDO_UID"]), int(os.environ.get("SUDO_GID", os.environ["SUDO_UID"]))
    except (KeyError, ValueError):
        return None


def _open_up(path: Path, owner: tuple[int, int] | None) -> None:
    st = path.lstat()
    if os.geteuid() not in (0, st.st_uid):
        return  # not ours to change (a user's `report` on a run someone else made)
    if owner is not None and (st.st_uid, st.st_gid) != owner:
        os.lchown(path, *owner)
    if stat.S_ISLNK(st.st_mode):
        return
    mode = DIR_MODE if stat.S_ISDIR(st.st_mode) or st.st_mode & stat.S_IXUSR else FILE_MODE
    if stat.S_IMODE(st.st_mode) != mode:
        os.chmod(path, mode)


def hand_over(root: Path, parents: Iterable[Path] = ()) -> None:
    """Open up `root` and everything under it (and each of `parents` alone: folders made on the way to it).

    A file that vanishes meanwhile is skipped; one that cannot be changed is logged, never fatal.
    """
    owner = invoking_user()
    targets = [*parents, root]
    for target in targets:
        try:
            _open_up(target, owner)
        except OSError as exc:
            log.warning("could not hand %s over: %s", target, exc)
    if not root.is_dir() or root.is_symlink():
        return
    for here, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            try:
                _open_up(Path(here) / name, owner)
            except FileNotFoundError:
                continue
            except OSError as exc:
                log.warning("could not hand %s over: %s", Path(here) / name, exc)
