"""Kafka distributions: the jars of one Kafka version, fetched from Maven Central into a cache.

`make setup` fetches the default version; any other version is fetched on
first use with the repo's pom, with the Scala build and the extra jars the
version table (testbed.dist.versions) names for it. Nothing is downloaded from anywhere else, and a
failed fetch leaves no half-filled cache directory behind.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from testbed.dist.java import ensure_java, java_path
from testbed.dist.versions import release
from testbed.errors import DistributionError
from testbed.paths import CACHE_DIR, POM

# The one owner of the default Kafka version: the Makefile reads this line (sed), compose/build_images.py passes
# it to compose/kafka/Dockerfile as a build argument, the nightly workflow asks for it by `KAFKA_VERSION=default`,
# and tests/testbed/test_default_version.py fails on a copy anywhere else.
DEFAULT_VERSION = "2.7.2"


def libs_dir(version: str) -> Path:
    return CACHE_DIR / f"kafka-{version}" / "libs"


def kafka_jar(version: str) -> str:
    """The Kafka core jar's file name for `version` (kafka_2.12-... below 2.4, kafka_2.13-... from 2.4)."""
    return release(version).jar(version)


def is_cached(version: str) -> bool:
    return (libs_dir(version) / kafka_jar(version)).exists()


def ensure_kafka(version: str = DEFAULT_VERSION, fetch: bool = True) -> Path:
    """Return the directory holding every jar Kafka `version` needs; fetch it with mvn if absent, and
    install the Java the version runs on (testbed.dist.java) if that is not there yet."""
    row = release(version)  # one line for a version faultline cannot run (4.x, before 0.10.2, a bad form)
    target = libs_dir(version)
    if is_cached(version):
        ensure_java(row.java, fetch)
        return target
    if not fetch:
        raise DistributionError(f"Kafka {version} is not cached in {target}; run 'make setup'")
    target.parent.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".kafka-{version}.", dir=target.parent.parent))
    jaxb = ["-Dfaultline.jaxb"] if row.jaxb else []
    try:
        proc = subprocess.run(
            ["mvn", "-q", "-B", "-Dstyle.color=never", "-f", str(POM), f"-Dkafka.version={version}",
             f"-Dscala.binary={row.scala}", *jaxb, "dependency:copy-dependencies",
             f"-DoutputDirectory={staging / 'libs'}", "-DincludeScope=runtime"],
            capture_output=True, text=True, timeout=900)
        if proc.returncode != 0 or not (staging / "libs" / row.jar(version)).exists():
            reason = _maven_reason(proc.stdout + proc.stderr)
            raise DistributionError(f"Kafka {version} is neither cached in {target} nor fetchable "
                                    f"from Maven Central: {reason}")
        target.parent.mkdir(parents=True, exist_ok=True)
        (staging / "libs").rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    ensure_java(row.java, fetch)
    return target


def java_for(version: str) -> str:
    """The java executable Kafka `version`'s nodes and tools run on (ensure_kafka installed it)."""
    return java_path(release(version).java)


def _maven_reason(output: str) -> str:
    plain = re.sub(r"\x1b\[[0-9;]*m", "", output)
    for line in plain.splitlines():
        if "could not be resolved" in line or "Could not find artifact" in line:
            found = re.search(r"(The following artifacts could not be resolved|Could not find artifact)[^:]*: ?([^,]+)",
                              line)
            return f"artifact not found: {found.group(2).strip()}" if found else line.strip()[:200]
    for line in plain.splitlines():
        if "[ERROR]" in line:
            return line.replace("[ERROR]", "").strip()[:200]
    return "mvn dependency:copy-dependencies failed"


def classpath(version: str) -> str:
    return ":".join(sorted(str(p) for p in libs_dir(version).glob("*.jar")))


if __name__ == "__main__":  # `python -m testbed.dist.kafka VERSION`: used by `make setup`
    import sys

    from testbed.errors import HarnessError

    try:
        print(f"Kafka {sys.argv[1] if len(sys.argv) > 1 else DEFAULT_VERSION} in "
              f"{ensure_kafka(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_VERSION)}")
    except HarnessError as exc:
        print(f"faultline: {exc}", file=sys.stderr)
        sys.exit(exc.exit_status)
