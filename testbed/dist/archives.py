"""Kafka's jars of one version as one tar, made once in the local cache: what a runtime whose hosts do not share
this machine's disk puts on them (the ssh runtime over SFTP, the docker runtime through the daemon's API).

The tar is reproducible (sorted, no owners or times), so its sha256 names what it holds.
Must never: fetch anything but through `ensure_kafka`, or leave a half-written archive under its final name.
"""

from __future__ import annotations

import hashlib
import tarfile
import threading
from pathlib import Path

from testbed.dist.kafka import ensure_kafka
from testbed.paths import CACHE_DIR

ARCHIVES = CACHE_DIR / "ssh"  # where the ssh runtime first kept them; the docker runtime reads the same ones
_MAKING = threading.Lock()  # hosts are provisioned in parallel: each archive is made once


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def tar_dir(source: Path, target: Path, arcname: str) -> str:
    """A reproducible tar of `source` (sorted, no owners or times) at `target`; its sha256."""
    def plain(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.mtime = 0
        return info
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_suffix(".part")
    with tarfile.open(part, "w", dereference=True) as tar:
        tar.add(source, arcname=arcname, recursive=False, filter=plain)
        for path in sorted(source.iterdir()):
            tar.add(path, arcname=f"{arcname}/{path.name}", filter=plain)
    part.rename(target)
    return sha256_of(target)


def kafka_archive(version: str) -> tuple[Path, str]:
    """The Kafka jars of `version` as one tar of `libs/...` in the local cache (made once), and its sha256."""
    with _MAKING:
        libs = ensure_kafka(version)
        archive = ARCHIVES / f"kafka-{version}.tar"
        checksum = archive.with_suffix(".sha256")
        if archive.exists() and checksum.exists():
            return archive, checksum.read_text().strip()
        digest = tar_dir(libs, archive, "libs")
        checksum.write_text(digest + "\n")
        return archive, digest
