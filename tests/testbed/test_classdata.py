"""Class-data archives: `make setup`'s build is skipped when current and harmless when it fails; a node whose
archive is stale or missing still starts (on a real cluster), with C2 held for code that stays hot."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import testbed.dist.kafka
from testbed.dist import classdata
from testbed.dist.classdata import ROLES, archive, build_key
from testbed.dist.kafka import DEFAULT_VERSION, libs_dir
from testbed.kafka.node_files import JIT_FLAGS
from tests.conftest import REPO, faultline
from tests.harness.leftovers import remaining


def a_cache(tmp_path: Path) -> Path:
    """A Kafka cache of its own (FAULTLINE_CACHE) holding the real jars and no archives."""
    cache = tmp_path / "cache"
    (cache / f"kafka-{DEFAULT_VERSION}").mkdir(parents=True)
    (cache / f"kafka-{DEFAULT_VERSION}" / "libs").symlink_to(libs_dir(DEFAULT_VERSION))
    return cache


def setup_step(cache: Path, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FAULTLINE_CACHE": str(cache), **({"PATH": path} if path is not None else {})}
    return subprocess.run([sys.executable, "-m", "testbed.kafka.classdata_build", DEFAULT_VERSION], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=60)


def test_current_archives_are_not_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = a_cache(tmp_path)
    monkeypatch.setattr(testbed.dist.kafka, "CACHE_DIR", cache)  # as FAULTLINE_CACHE does for the subprocess
    for role in ROLES:
        archive(DEFAULT_VERSION, role).parent.mkdir(parents=True, exist_ok=True)
        archive(DEFAULT_VERSION, role).write_bytes(b"built before")
    (archive(DEFAULT_VERSION, "broker").parent / "key.json").write_text(json.dumps(build_key(DEFAULT_VERSION)))
    assert classdata.archives_current(DEFAULT_VERSION)  # else the step below would build them (20-30 s of JVMs)
    proc = setup_step(cache)
    assert proc.returncode == 0 and "(current)" in proc.stdout, proc.stdout + proc.stderr
    assert all(archive(DEFAULT_VERSION, role).read_bytes() == b"built before" for role in ROLES)
    # Another JDK or classpath makes them stale: no longer current.
    (archive(DEFAULT_VERSION, "broker").parent / "key.json").write_text(json.dumps({"java": "another JDK"}))
    assert not classdata.archives_current(DEFAULT_VERSION)


def test_a_failed_build_is_harmless(tmp_path: Path) -> None:
    cache = a_cache(tmp_path)
    proc = setup_step(cache, path=str(tmp_path / "no-java-here"))  # no java on PATH: nothing can be built
    assert proc.returncode == 0, proc.stderr
    assert "not built (nodes start without them)" in proc.stderr
    assert not (cache / f"kafka-{DEFAULT_VERSION}" / "cds").exists() or \
        not any((cache / f"kafka-{DEFAULT_VERSION}" / "cds").iterdir())


@pytest.mark.cluster
def test_a_stale_or_missing_archive_still_starts_the_cluster(tmp_path: Path) -> None:
    cache = a_cache(tmp_path)
    cds = cache / f"kafka-{DEFAULT_VERSION}" / "cds"
    cds.mkdir()
    (cds / "broker.jsa").write_bytes(os.urandom(65536))  # stale: not an archive of this JDK and classpath
    # zookeeper.jsa missing
    run_dir = tmp_path / "run"
    up = faultline("cluster", "up", "--run-dir", str(run_dir), env={"FAULTLINE_CACHE": str(cache)})
    prefix = json.loads((run_dir / "state.json").read_text())["prefix"]
    try:
        assert up.returncode == 0, up.stderr[-2000:]
        processes = json.loads((run_dir / "state.json").read_text())["processes"]
        for name, info in processes.items():
            argv = Path(f"/proc/{info['pid']}/cmdline").read_text().split("\0")
            uses = any(a.startswith("-XX:SharedArchiveFile=") for a in argv)
            assert uses == name.endswith("/broker"), (name, argv)  # the stale one is passed, the missing one not
            assert "broker.jsa" not in Path(f"/proc/{info['pid']}/maps").read_text()
            # Every node JVM compiles with C2 only what stays hot (JIT_FLAGS), as the JVM itself reports.
            flags = subprocess.run(["jcmd", str(info["pid"]), "VM.flags"], capture_output=True, text=True,
                                   timeout=60).stdout
            assert all(flag in flags.split() for flag in JIT_FLAGS), (name, flags)
    finally:
        down = faultline("cluster", "down")
    assert down.returncode == 0, down.stderr
    assert remaining(prefix) == []
