"""Fixtures of the checker tests: one Spark session for the whole run, small shuffles."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

# Test histories are tiny: two shuffle partitions are plenty and much faster to schedule.
os.environ.setdefault("FAULTLINE_SPARK_SHUFFLE_PARTITIONS", "2")
os.environ.setdefault("FAULTLINE_SPARK_DRIVER_MEMORY", "2g")


@pytest.fixture(scope="session")
def _spark_session() -> Iterator[Any]:
    from checkers.spark_session import spark_session, stop_session

    session = spark_session()
    yield session
    stop_session()


@pytest.fixture
def spark(request: pytest.FixtureRequest) -> Any:
    """The checker's shared Spark session, started once for every Spark test; only a test marked `spark` gets it
    (`make test-fast` deselects that marker and must start no JVM)."""
    if not request.node.get_closest_marker("spark"):
        pytest.fail(f"{request.node.nodeid} uses the Spark session but is not marked @pytest.mark.spark")
    return request.getfixturevalue("_spark_session")  # after the check: an unmarked test starts no JVM
