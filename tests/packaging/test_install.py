"""faultline installs as a package: pyproject's dependencies are real, and in step with the pins.

`pip install .` into a fresh venv (no site packages, no checkout on the path), then the
installed `faultline --version` and the installed checker on a small history: what a user gets
from `pip install` must run without anything the repository's .venv happens to hold.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import REPO

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def pins(name: str) -> dict[str, str]:
    out = {}
    for line in (REPO / name).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-r"):
            package, _, version = line.partition("==")
            assert version, f"{name}: {line!r} is not pinned with =="
            out[package.lower()] = version
    return out


def bounds(requirements: list[str]) -> dict[str, str]:
    out = {}
    for requirement in requirements:
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)>=([0-9][^,;\s]*)", requirement)
        assert match, f"pyproject.toml: {requirement!r} should be name>=version (the version CI runs)"
        out[match[1].lower()] = match[2]
    return out


def test_the_pins_and_pyprojects_dependencies_name_the_same_versions() -> None:
    extras = PYPROJECT["optional-dependencies"]
    runtime = bounds(PYPROJECT["dependencies"] + extras["spark"] + extras["docker"] + extras["ssh"] + extras["notebook"])
    assert pins("requirements.txt") == runtime
    assert pins("requirements-dev.txt") == bounds(extras["dev"])
    assert "<" not in PYPROJECT["requires-python"], "no upper bound on Python unless a dependency forces one"


def tracked_sources(into: Path) -> Path:
    """The checkout's files (tracked or new, not ignored) in a folder of their own: pip builds in place."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, capture_output=True,
                            check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        if (REPO / name).is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, into / name)
    return into


@pytest.mark.network
def test_pip_install_gives_a_working_faultline(tmp_path: Path) -> None:
    source = tracked_sources(tmp_path / "src")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    python = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    install = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-compile",
                              "--disable-pip-version-check", str(source)],
                             capture_output=True, text=True, timeout=600, env=env)
    assert install.returncode == 0, install.stderr[-3000:]

    version = subprocess.run([venv / "bin" / "faultline", "--version"], capture_output=True, text=True,
                             timeout=60, cwd=tmp_path, env=env)
    assert version.returncode == 0, version.stderr
    lines = version.stdout.splitlines()
    assert lines[0] == "faultline 0.1.0"  # an installed copy is no checkout: no commit to name
    assert lines[1].startswith("Kafka 2.7.2")
    assert re.fullmatch(r"librdkafka \d+\.\d+\.\d+", lines[2]) and lines[3] == "confluent-kafka 2.16.1"

    # Without the spark extra, a run that asks for the spark engine is refused before anything starts
    # (auto, the default, judges with pandas there).
    run = subprocess.run([venv / "bin" / "faultline", "run", str(source / "scenarios" / "smoke.yaml"),
                          "--engine", "spark"],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env)
    assert run.returncode == 3 and "pip install 'faultline[spark]', or use --engine pandas" in run.stderr, run.stderr

    history = tmp_path / "history"
    history.mkdir()
    ok = {"process": "p", "op_id": 0, "topic": "t", "value": "v0", "partition": 0, "offset": 0, "status": "ok",
          "invoke_ns": 1, "complete_ns": 2}
    (history / "writes.jsonl").write_text(json.dumps(ok) + "\n")
    read = {"process": "drain", "seq": 0, "phase": "final", "topic": "t", "partition": 0, "offset": 0,
            "value": "v0", "poll_ns": 3}
    (history / "reads.jsonl").write_text(json.dumps(read) + "\n")
    check = subprocess.run([python, "-m", "checkers", str(history), "--out", str(tmp_path / "out")],
                           capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert check.returncode == 0, check.stderr
    verdict = json.loads((tmp_path / "out" / "verdict.json").read_text())
    assert verdict["valid"] is True and verdict["engine"] == "pandas", verdict  # auto, with no pyspark here
