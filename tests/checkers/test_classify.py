"""Classification: which anomalies are errors, per producer configuration and consumer kind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from checkers import check
from checkers.anomalies import rules
from checkers.classify import DEFAULT_CONFIG, Rule, known_configs, parse_config
from tests.checkers.histories import proc, r, reads, w, write

# One lost value (b acknowledged at 1, F holds only 0), written by p.
LOST = ([w("a", 1, offset=0), w("b", 2, offset=1)], reads(r("a", 0)))
# One duplicated value (a at offsets 0 and 1), written by p.
DUPLICATE = ([w("a", 1, offset=0)], reads(r("a", 0), r("a", 1)))
# One reordered pair (a then b, placed at 1 then 0), written by p.
REORDERED = ([w("a", 1, offset=1), w("b", 2, offset=0)], reads(r("b", 0), r("a", 1)))


def _errors(
    tmp_path: Path, history: tuple[list[Any], list[Any]], processes: list[Any] | None
) -> dict[str, int]:
    tables = {"writes": history[0], "reads": history[1]}
    if processes is not None:
        tables["processes"] = processes
    return check(write(tmp_path, tables), engine="pandas")["errors"]


@pytest.mark.parametrize("acks", ["all", "-1", -1, "1", 1, " ALL "])
def test_lost_is_an_error_with_acks_all_or_1(tmp_path: Path, acks: Any) -> None:
    assert _errors(tmp_path, LOST, [proc("p", acks=acks)]) == {"lost": 1}


@pytest.mark.parametrize("acks", ["0", 0])
def test_lost_is_information_with_acks_0(tmp_path: Path, acks: Any) -> None:
    assert _errors(tmp_path, LOST, [proc("p", acks=acks)]) == {}


@pytest.mark.parametrize("idempotence", [True, "true", "TRUE"])
def test_duplicate_is_an_error_with_idempotence(tmp_path: Path, idempotence: Any) -> None:
    assert _errors(tmp_path, DUPLICATE, [proc("p", acks="all", enable_idempotence=idempotence)]) == {
        "duplicate": 1
    }


@pytest.mark.parametrize("config", [{"enable_idempotence": False}, {"enable_idempotence": "false"}, {}])
def test_duplicate_is_information_without_idempotence(tmp_path: Path, config: dict[str, Any]) -> None:
    assert _errors(tmp_path, DUPLICATE, [proc("p", acks="all", **config)]) == {}


@pytest.mark.parametrize(
    "config",
    [
        {"enable_idempotence": True},
        {"max_in_flight_requests_per_connection": 1},
        {"max_in_flight_requests_per_connection": "1"},
    ],
)
def test_reordered_is_an_error_with_idempotence_or_one_in_flight(
    tmp_path: Path, config: dict[str, Any]
) -> None:
    assert _errors(tmp_path, REORDERED, [proc("p", acks="all", **config)]) == {"reordered": 1}


@pytest.mark.parametrize("config", [{"max_in_flight_requests_per_connection": 5}, {}])
def test_reordered_is_information_otherwise(tmp_path: Path, config: dict[str, Any]) -> None:
    assert _errors(tmp_path, REORDERED, [proc("p", acks=1, **config)]) == {}


def _rewind(group: str | None) -> tuple[list[Any], list[Any]]:
    writes = [w(f"v{i}", i + 1, offset=i) for i in range(3)]
    live = [r(f"v{o}", o, "live", group=group) for o in (0, 1, 2, 1, 2)]  # (2, 1): one pair
    return writes, reads(*live, *[r(f"v{i}", i) for i in range(3)])


def test_nonmonotonic_poll_is_information_for_a_group_consumer(tmp_path: Path) -> None:
    processes = [proc("p", acks="all"), proc("c", role="consumer")]
    assert _errors(tmp_path, _rewind("g1"), processes) == {}


def test_nonmonotonic_poll_is_an_error_for_a_fixed_assignment(tmp_path: Path) -> None:
    processes = [proc("p", acks="all"), proc("c", role="consumer")]
    assert _errors(tmp_path, _rewind(None), processes) == {"nonmonotonic-poll": 1}


def test_a_process_without_a_row_is_judged_strictly(tmp_path: Path) -> None:
    # The group consumer c has no processes row: its rewind is an error all the same.
    assert _errors(tmp_path, _rewind("g1"), [proc("p", acks="all")]) == {"nonmonotonic-poll": 1}
    # The acks=0 producer q would excuse the loss, but the lost value's writer is p, with no row.
    assert _errors(tmp_path / "2", LOST, [proc("q", acks=0)]) == {"lost": 1}


@pytest.mark.parametrize("history", [LOST, DUPLICATE, REORDERED])
def test_no_processes_table_makes_every_anomaly_an_error(tmp_path: Path, history: Any) -> None:
    assert len(_errors(tmp_path, history, None)) == 1


def test_recovered_is_always_information(tmp_path: Path) -> None:
    history = ([w("a", 1, status="info")], reads(r("a", 0)))
    assert _errors(tmp_path, history, None) == {}


def test_parse_config_defaults_are_kafka_2_7() -> None:
    assert parse_config(None) == DEFAULT_CONFIG
    assert parse_config('{"acks": -1, "enable.idempotence": "true"}').acks == "all"
    assert parse_config('{"max.in.flight.requests.per.connection": "1"}').max_in_flight == 1


def test_disagreeing_rows_make_a_process_strict() -> None:
    configs = known_configs([("p", '{"acks": 0}'), ("p", '{"acks": "all"}'), ("q", '{"acks": 0}')])
    assert set(configs) == {"q"}
    assert rules(configs, [])["lost"] == Rule("by-process", frozenset({"q"}))
