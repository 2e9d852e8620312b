"""The default Kafka version has one owner, testbed/dist/kafka.py's DEFAULT_VERSION: the Makefile reads it, the
images get it as a build argument, and no other file that configures a build, an image or a run writes it again."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from testbed.dist.kafka import DEFAULT_VERSION
from tests.conftest import REPO

OWNER = REPO / "testbed" / "dist" / "kafka.py"
# Files generated from a spec whose version is the default (`harness compose`, `spec_keys`): derived, not copies.
GENERATED = {REPO / "compose" / ".env", REPO / "compose" / "docker-compose.yml", REPO / "docs" / "spec.schema.json"}
# Files that name this version among others on purpose, not as the default.
NAMED_ON_PURPOSE = {REPO / "spark_analysis" / "synthetic.py"}  # synthetic runs of three versions
SOURCE_PACKAGES = ("harness", "campaign", "report", "spark_analysis", "nemesis", "workloads", "testbed", "checkers",
                   "compose", "bench")


def configuring_files(root: Path) -> list[Path]:
    """Every file that sets a default for a build, an image or a run: the code, the Makefile, Dockerfiles, the pom,
    the workflows (not the tests, the scenarios or the prose, which name versions on purpose)."""
    files = [root / "Makefile", root / "build" / "pom.xml", *sorted((root / ".github").rglob("*.yml"))]
    files += sorted(p for p in (root / "compose").rglob("*") if p.is_file() and p.name.startswith("Dockerfile"))
    files += sorted(p for package in SOURCE_PACKAGES for p in (root / package).rglob("*.py"))
    return [p for p in files if p.is_file()]


def copies_of(version: str, root: Path) -> list[str]:
    """The files that write `version` outside a comment line (a comment may say which version a story ran on)."""
    literal = re.compile(rf"(?<![\d.]){re.escape(version)}(?![\d.])")
    return [str(p.relative_to(root)) for p in configuring_files(root) if p not in {OWNER, *GENERATED, *NAMED_ON_PURPOSE}
            and any(literal.search(line) for line in p.read_text(errors="replace").splitlines()
                    if not line.lstrip().startswith(("#", "<!--")))]


def make_dry_run(*args: str) -> str:
    done = subprocess.run(["make", "-n", *args, "RUNTIME=netns"], cwd=REPO, capture_output=True, text=True,
                          timeout=60, check=False, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_no_file_but_the_owner_writes_the_default_version() -> None:
    assert copies_of(DEFAULT_VERSION, REPO) == []


def test_a_copy_of_the_version_is_caught(tmp_path: Path) -> None:
    (tmp_path / "compose" / "kafka").mkdir(parents=True)
    (tmp_path / "compose" / "kafka" / "Dockerfile").write_text(f"ARG KAFKA_VERSION={DEFAULT_VERSION}\n")
    (tmp_path / "testbed").mkdir()
    (tmp_path / "testbed" / "fine.py").write_text(f'OTHER = "1{DEFAULT_VERSION}"  # another version, not a copy\n'
                                                  f"# a comment may say a story ran on {DEFAULT_VERSION}\n")
    assert copies_of(DEFAULT_VERSION, tmp_path) == ["compose/kafka/Dockerfile"]


def test_the_owner_line_is_the_one_the_makefile_reads() -> None:
    assert re.search(rf'^DEFAULT_VERSION = "{re.escape(DEFAULT_VERSION)}"$', OWNER.read_text(), re.MULTILINE)


@pytest.mark.parametrize(("given", "wanted"), [
    ((), f"--kafka-version {DEFAULT_VERSION}"),
    (("KAFKA_VERSION=3.9.1",), "--kafka-version 3.9.1"),
    (("KAFKA_VERSION=default",), f"--kafka-version {DEFAULT_VERSION}"),
])
def test_the_makefile_builds_the_image_of_the_default_or_the_given_version(given: tuple[str, ...],
                                                                           wanted: str) -> None:
    assert wanted in make_dry_run("docker-images", *given)


def test_only_a_given_version_pins_every_run_of_a_campaign() -> None:
    assert "--kafka-version" not in make_dry_run("nightly")
    assert f"--kafka-version {DEFAULT_VERSION}" in make_dry_run("nightly", "KAFKA_VERSION=default")


def test_the_compose_example_and_the_dockerfile_take_the_version_from_the_build() -> None:
    env = dict(line.split("=", 1) for line in (REPO / "compose" / ".env").read_text().splitlines()
               if "=" in line and not line.startswith("#"))
    assert env["KAFKA_VERSION"] == DEFAULT_VERSION  # generated for smoke.yaml (tests/docker/test_compose.py)
    dockerfile = (REPO / "compose" / "kafka" / "Dockerfile").read_text()
    assert re.search(r"^ARG KAFKA_VERSION$", dockerfile, re.MULTILINE)
    assert re.search(r"^ARG KAFKA_JAR$", dockerfile, re.MULTILINE)
