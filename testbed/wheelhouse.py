"""The client code's Python dependencies as wheels: pinned requirements, downloaded once for a target Python and glibc.

Used by compose/build_images.py (the faultline/client image) and by the ssh
runtime (a venv on each client host, installed with --no-index). The wheels
are downloaded on this machine (PyPI, the one index it reaches) and kept in
the cache; a host or a build never needs a package index.
Must never: download anything but the pinned requirements' wheels.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from testbed.errors import RuntimeFailure
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


def wheelhouse(facts: dict[str, Any], requirements: list[str]) -> Path:
    """Wheels for the base's Python and platform, downloaded once on the host (PyPI), kept in the cache."""
    py = facts["python"].replace(".", "")
    target = CACHE_DIR / "wheelhouse" / f"cp{py}-glibc{facts['libc'][1]}-{facts['machine']}"
    marker = target / "complete.txt"
    if marker.exists() and marker.read_text().split() == requirements:
        return target
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    argv = [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--only-binary=:all:",
            "--python-version", facts["python"], "--implementation", "cp", "--abi", f"cp{py}",
            *(a for p in wheel_platforms(facts) for a in ("--platform", p)), "-d", str(target), *requirements]
    print(f"wheelhouse: pip download {' '.join(requirements)} for cp{py} {facts['machine']} glibc {facts['libc'][1]}")
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        shutil.rmtree(target, ignore_errors=True)
        reason = [line for line in proc.stderr.splitlines() if line.startswith("ERROR")] or proc.stderr.splitlines()[-1:]
        raise RuntimeFailure(f"pip download for the client image failed: {' | '.join(reason)}")
    marker.write_text("\n".join(requirements) + "\n")
    return target
