"""The client code's Python dependencies as wheels: pinned requirements, downloaded once for a target Python and glibc.

Used by compose/build_images.py (the faultline/client image) and by the ssh
runtime (a venv on each client host, installed with --no-index; and one per
client under test, `clients.confluent_kafka`, from `client_wheels`). The wheels
are downloaded on this machine (PyPI, the one index it reaches) and kept in
the cache; a host or a build never needs a package index.
Must never: download anything but the pinned requirements' wheels and a client under test's confluent-kafka.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from testbed.errors import DistributionError, RuntimeFailure
from testbed.paths import CACHE_DIR, REPO_ROOT

REQUIREMENTS = REPO_ROOT / "compose" / "client" / "requirements.txt"


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name.strip()).lower()


def client_requirements() -> list[str]:
    """compose/client/requirements.txt's names, pinned as the repository's requirements.txt pins them."""
    pins: dict[str, str] = {}
    for line in (REPO_ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            pins[_norm(line.split("==", 1)[0])] = line
    wanted = [line.strip() for line in REQUIREMENTS.read_text().splitlines()
              if line.strip() and not line.lstrip().startswith("#")]
    unpinned = [w for w in wanted if _norm(w) not in pins]
    if unpinned:
        raise RuntimeFailure(f"compose/client/requirements.txt names {', '.join(unpinned)}, which requirements.txt does not pin")
    return [pins[_norm(w)] for w in wanted]


def wheel_platforms(facts: dict[str, Any]) -> list[str]:
    """Every manylinux tag the base's glibc accepts, newest first (pip download takes them literally)."""
    machine = facts["machine"]
    major, minor = (int(x) for x in facts["libc"][1].split(".")[:2])
    if major != 2:
        raise RuntimeFailure(f"unexpected glibc {facts['libc'][1]}")
    tags = [f"manylinux_2_{m}_{machine}" for m in range(minor, 4, -1)]
    tags += [f"{legacy}_{machine}" for legacy, needs in (("manylinux2014", 17), ("manylinux2010", 12), ("manylinux1", 5))
             if minor >= needs]
    return tags


def _platform_name(facts: dict[str, Any]) -> str:
    return f"cp{facts['python'].replace('.', '')}-glibc{facts['libc'][1]}-{facts['machine']}"


def _pip_download(facts: dict[str, Any], requirements: list[str], target: Path) -> subprocess.CompletedProcess[str]:
    """`requirements`' wheels for the base's Python and platform into `target` (made empty first; kept complete,
    marked by complete.txt naming them, or removed)."""
    py = facts["python"].replace(".", "")
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    argv = [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--only-binary=:all:",
            "--python-version", facts["python"], "--implementation", "cp", "--abi", f"cp{py}",
            *(a for p in wheel_platforms(facts) for a in ("--platform", p)), "-d", str(target), *requirements]
    print(f"wheelhouse: pip download {' '.join(requirements)} for cp{py} {facts['machine']} glibc {facts['libc'][1]}")
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        shutil.rmtree(target, ignore_errors=True)
    else:
        (target / "complete.txt").write_text("\n".join(requirements) + "\n")
    return proc


def _complete(target: Path, requirements: list[str]) -> bool:
    marker = target / "complete.txt"
    return marker.exists() and marker.read_text().split() == requirements


def _errors(proc: subprocess.CompletedProcess[str]) -> str:
    return " | ".join([line for line in proc.stderr.splitlines() if line.startswith("ERROR")]
                      or proc.stderr.splitlines()[-1:])


def wheelhouse(facts: dict[str, Any], requirements: list[str]) -> Path:
    """Wheels for the base's Python and platform, downloaded once on the host (PyPI), kept in the cache."""
    target = CACHE_DIR / "wheelhouse" / _platform_name(facts)
    if _complete(target, requirements):
        return target
    proc = _pip_download(facts, requirements, target)
    if proc.returncode != 0:
        raise RuntimeFailure(f"pip download for the client image failed: {_errors(proc)}")
    return target


# pip's refusal names the versions that have a wheel for the target, oldest first.
_FROM_VERSIONS = re.compile(r"\(from versions: ([^)]*)\)")
_CLIENT_LOCK = threading.Lock()  # client hosts are checked and provisioned in parallel; each download is made once


def client_wheels(facts: dict[str, Any], version: str) -> Path:
    """confluent-kafka `version`'s wheel for the base's Python and platform (a client under test on a host that
    makes its own venv), downloaded once (PyPI), kept in the cache. DistributionError (one line) when the version
    has no wheel there, naming the first version that has one."""
    requirement = f"confluent-kafka=={version}"
    target = CACHE_DIR / "wheelhouse" / f"ck-{version}-{_platform_name(facts)}"
    with _CLIENT_LOCK:
        if _complete(target, [requirement]):
            return target
        proc = _pip_download(facts, [requirement], target)
    if proc.returncode == 0:
        return target
    found = _FROM_VERSIONS.search(proc.stderr)
    where = f"Python {facts['python']} on {facts['machine']} (glibc {facts['libc'][1]})"
    if found is None:
        raise DistributionError(f"confluent_kafka {version}: no wheel for {where} could be downloaded: {_errors(proc)}")
    have = [v.strip() for v in found.group(1).split(",") if re.fullmatch(r"\d+\.\d+\.\d+", v.strip())]
    first = f"the first version that has one is {have[0]}, the newest {have[-1]}" if have else "no version has one"
    raise DistributionError(f"confluent_kafka {version}: no wheel for {where} on PyPI ({first})")
