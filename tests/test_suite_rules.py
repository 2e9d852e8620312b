"""The suite's own rules, shown to fail: an unmarked test that asks for the Spark session fails before any JVM
starts, a misspelt marker is an error (--strict-markers), and a FUSE test fails, not skips, without FUSE."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO


def _pytest(tmp_path: Path, test_file: str, body: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run pytest over one test file placed in the repo's tests tree (so its conftests apply), then remove it."""
    target = REPO / test_file
    target.write_text(body)
    try:
        return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(target), *args],
                              cwd=REPO, capture_output=True, text=True, timeout=120,
                              env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    finally:
        target.unlink()


def test_an_unmarked_test_that_asks_for_spark_fails_without_starting_it(tmp_path: Path) -> None:
    proc = _pytest(tmp_path, f"tests/checkers/test_zz_unmarked_{os.getpid()}.py",
                   "def test_uses_spark(spark):\n    pass\n")
    assert proc.returncode == 1, proc.stdout
    assert "uses the Spark session but is not marked @pytest.mark.spark" in proc.stdout
    assert "SparkSession" not in proc.stdout and "1 error" in proc.stdout


def test_a_misspelt_marker_is_an_error(tmp_path: Path) -> None:
    proc = _pytest(tmp_path, f"tests/test_zz_marker_{os.getpid()}.py",
                   "import pytest\n\n@pytest.mark.clustre\ndef test_x():\n    pass\n")
    assert proc.returncode != 0 and "'clustre' not found in `markers`" in proc.stdout + proc.stderr


def test_a_fuse_test_without_fuse_fails_and_names_what_is_missing(tmp_path: Path) -> None:
    # At import, before any fixture: this subprocess's machine has no FUSE whatever this one has.
    body = ("import pytest\nfrom testbed.runtime import unsynced\n\nunsynced.available = lambda: False\n\n"
            "@pytest.mark.fuse\ndef test_x():\n    pass\n")
    proc = _pytest(tmp_path, f"tests/test_zz_fuse_{os.getpid()}.py", body)
    assert proc.returncode == 1, proc.stdout
    assert "fuse tests need root, /dev/fuse and" in proc.stdout and "skipped" not in proc.stdout
