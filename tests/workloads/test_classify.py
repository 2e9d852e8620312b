"""Send outcomes: `fail` only where the error proves nothing was written (spec/history.md)."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError

from workloads.classify import MAYBE_WRITTEN, NOT_WRITTEN_BY_ATTEMPT, classify_delivery, classify_refused

RETRIES_DEFAULT = 2147483647


def test_success_is_ok() -> None:
    assert classify_delivery(None, RETRIES_DEFAULT) == ("ok", None)


@pytest.mark.parametrize("error", sorted(NOT_WRITTEN_BY_ATTEMPT))
def test_not_written_errors_fail_only_without_retries(error: str) -> None:
    assert classify_delivery(error, 0) == ("fail", error)
    # With retries an earlier attempt may have timed out in flight and been appended.
    assert classify_delivery(error, 1) == ("info", error)
    assert classify_delivery(error, RETRIES_DEFAULT) == ("info", error)


@pytest.mark.parametrize("error", sorted(MAYBE_WRITTEN))
def test_maybe_written_errors_are_always_info(error: str) -> None:
    assert classify_delivery(error, 0) == ("info", error)
    assert classify_delivery(error, RETRIES_DEFAULT) == ("info", error)


@pytest.mark.parametrize(
    "error",
    [
        "_MSG_TIMED_OUT",
        "NOT_LEADER_FOR_PARTITION",
        "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
        "REQUEST_TIMED_OUT",
        "_TRANSPORT",
        "_PURGE_INFLIGHT",
    ],
)
def test_the_issues_unknowns_stay_unknown_even_without_retries(error: str) -> None:
    assert classify_delivery(error, 0)[0] == "info"


def test_an_error_nobody_listed_is_unknown() -> None:
    assert classify_delivery("SOME_FUTURE_ERROR", 0) == ("info", "SOME_FUTURE_ERROR")


def test_a_refused_produce_call_never_reached_librdkafka() -> None:
    assert classify_refused("_QUEUE_FULL") == ("fail", "_QUEUE_FULL")
    assert classify_refused("_UNKNOWN_PARTITION") == ("fail", "_UNKNOWN_PARTITION")


def test_the_tables_name_real_librdkafka_errors_and_do_not_overlap() -> None:
    names = {
        KafkaError(getattr(KafkaError, attr)).name()
        for attr in dir(KafkaError)
        if attr.lstrip("_").isupper() and isinstance(getattr(KafkaError, attr), int)
    }
    assert set(NOT_WRITTEN_BY_ATTEMPT) <= names
    assert set(MAYBE_WRITTEN) <= names
    assert not set(NOT_WRITTEN_BY_ATTEMPT) & set(MAYBE_WRITTEN)
    assert all(reason for reason in {**NOT_WRITTEN_BY_ATTEMPT, **MAYBE_WRITTEN}.values())
