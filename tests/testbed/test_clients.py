"""testbed.dist.clients without PyPI: versions refused, a cached venv found, a missing Python said in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testbed.dist import clients
from testbed.errors import DistributionError


@pytest.mark.parametrize(("version", "problem"), [("1.8.2", "from 1.9.0 on"), ("2.1", "not a confluent-kafka"),
                                                  ("latest", "not a confluent-kafka")])
def test_versions_it_cannot_run_are_refused(version: str, problem: str) -> None:
    with pytest.raises(DistributionError, match=problem):
        clients.parse_client(version)


def test_a_cached_venv_is_used_and_one_without_its_marker_is_not(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(clients, "CACHE_DIR", tmp_path)
    venv = tmp_path / "venv-ck-2.1.1"
    (venv / "bin").mkdir(parents=True)
    assert clients.cached_client("2.1.1") is None  # a build that did not finish
    (venv / clients.MARKER).write_text(json.dumps({"confluent_kafka": "2.1.1", "librdkafka": "2.1.1"}))
    found = clients.ensure_client("2.1.1")
    assert found.python[-1] == str(venv / "bin" / "python") and found.python[1].startswith("PYTHONPATH=")
    assert found.versions["librdkafka"] == "2.1.1"


def test_without_pyenvs_python_the_build_fails_in_one_line_and_leaves_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(clients, "CACHE_DIR", tmp_path / "cache")
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "no-pyenv"))
    with pytest.raises(DistributionError, match=r"pyenv's Python 3\.10") as caught:
        clients.ensure_client("2.1.1")
    assert "\n" not in str(caught.value)
    assert list((tmp_path / "cache").iterdir()) == []

