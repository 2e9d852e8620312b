"""Fixtures of the campaign tests: the fake machine of tests/harness/test_run_fake.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.harness.test_run_fake import Machine, install_fake_machine


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Machine:
    machine = Machine(tmp_path / "run" / "active.json")
    install_fake_machine(machine, monkeypatch)
    return machine


@pytest.fixture
def fresh_topic(machine: Machine, monkeypatch: pytest.MonkeyPatch) -> Callable[[], None]:
    """Give the fake machine a new, empty topic: each run then reads only its own records, as on a new cluster."""
    return lambda: install_fake_machine(machine, monkeypatch)
