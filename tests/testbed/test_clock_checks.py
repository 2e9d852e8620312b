"""The clock tests' own arithmetic: which __transaction_state partition a transactional.id lives in."""

from __future__ import annotations

from tests.testbed.clock_checks import java_hash, transaction_partition


def test_a_transactional_ids_partition_is_kafkas_math_abs_of_its_hash() -> None:
    # Read back from a 2.7.2 run's kept __transaction_state (2026-11-28): this id's entries were all in partition 2.
    assert java_hash("fl0dfcb8-producer-az1-0") == -2107789184  # negative: the sign bit's mask would give 0
    assert transaction_partition("fl0dfcb8-producer-az1-0", 3) == 2
    assert java_hash("a") == 97 and transaction_partition("a", 3) == 1
