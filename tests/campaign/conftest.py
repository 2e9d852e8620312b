"""Fixtures of the campaign tests: the fake machine of tests/harness/test_run_fake.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.test_run_fake import FakeMachine


@pytest.fixture
def machine(tmp_path: Path) -> FakeMachine:
    """A fake machine; each runtime it makes has a topic of its own, so each run reads only its own records."""
    return FakeMachine(tmp_path / "run" / "active.json")
