"""Matrix sweeps: one scenario × a grid of settings, each cell's expectation a rule over its settings.

    matrix:
      scenario: isolate-az-leader
      grid: {acks: [0, 1, all], enable.idempotence: [false, true], min.insync.replicas: [1, 2]}
      rules:
        - when: {acks: all, min.insync.replicas: ">= 2"}     # every condition must hold
          expect: {absent: [lost, divergence]}
        - when: {acks: [0, 1]}                               # a list: any of these values
          expect: {observed: [two-leaders]}

A grid key is one of the broker and topic settings of `CLUSTER_SETTINGS`, a version (`kafka_version`, `metadata`,
`client`: `VERSION_SETTINGS`; `upgrade_to`: the version the scenario's rolling upgrades go to), else a librdkafka producer
setting (every producer group of the scenario gets it; librdkafka itself checks each value). A cell's expectation is every matching rule's
expectation together (a rule without `when` matches every cell); a cell no rule matches is an error,
so that no cell runs without a stated expectation. Conditions are a value (equal), a list (one of) or
a comparison such as ">= 2" (numbers). A rule's log evidence (`logs`: each `pattern` and `says`) and `reason` may
name a grid setting in braces, filled with the cell's value (regex-escaped in a pattern): `{upgrade_to}` is "3\\.9\\.1"
in a pattern of the cell upgrade_to=3.9.1, and a version's `{kafka_version.protocol}` its inter.broker.protocol.version
("3\\.6" for 3.6.2), so that one rule pins each cell's own mechanism (campaigns/upgrades.yaml).
Must never: run anything or read a file; the spec's own validation decides which cells Kafka refuses.
"""

from __future__ import annotations

import copy
import itertools
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from campaign.keys import check_keys
from checkers.anomalies import ANOMALIES
from harness.spec_keys import EXPECT
from testbed.dist.versions import protocol_version
from testbed.errors import SpecError
from workloads.settings_check import SettingRefused, check_settings

# Broker and topic settings by their Kafka names, and the spec's cluster key that sets each.
CLUSTER_SETTINGS = {"min.insync.replicas": "min_insync_replicas",
                    "unclean.leader.election.enable": "unclean_leader_election",
                    "replica.lag.time.max.ms": "replica_lag_time_max_ms"}
# Versions a matrix sweeps, by their grid names, and the spec key (section, key) that sets each: the broker, its
# metadata mode (zookeeper or kraft) and the client under test (`client`: clients.confluent_kafka). The spec's own validation refuses a version it cannot run.
VERSION_SETTINGS = {"kafka_version": ("cluster", "kafka_version"), "metadata": ("cluster", "metadata"),
                    "client": ("clients", "confluent_kafka")}
# The version a rolling upgrade goes to (`upgrade_to`): every `rolling-upgrade` of the scenario's schedule gets it as
# its `to_version`; with `kafka_version`, a grid of upgrade pairs (the spec refuses a pair that is not an upgrade).
UPGRADE_TO = "upgrade_to"
VERSION_GRID = {"kafka_version", UPGRADE_TO}  # the grid keys a `{key.protocol}` of a rule's expectation may name
FILLED = (("pattern", True), ("says", False))  # the keys of a rule's log evidence a cell fills in: regex-escaped?
# Short names for cell names (run folder names): readable and free of dots.
SHORT = {"acks": "acks", "enable.idempotence": "idem", "max.in.flight.requests.per.connection": "inflight",
         "min.insync.replicas": "minisr", "unclean.leader.election.enable": "unclean", "retries": "retries",
         "kafka_version": "kafka", "metadata": "md", "client": "ck", UPGRADE_TO: "to"}
_COMPARISON = re.compile(r"\s*(>=|<=|==|!=|>|<)\s*(-?\d+(?:\.\d+)?)\s*")
_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {">=": operator.ge, "<=": operator.le, "==": operator.eq,
                                                     "!=": operator.ne, ">": operator.gt, "<": operator.lt}


@dataclass(frozen=True)
class Rule:
    when: dict[str, Any]
    expect: dict[str, list[Any]]
    where: str

    def matches(self, cell: dict[str, Any]) -> bool:
        return all(_holds(condition, cell[key]) for key, condition in self.when.items())


@dataclass(frozen=True)
class Matrix:
    source: Path
    configuration: str | None
    overrides: dict[str, Any]
    grid: dict[str, tuple[Any, ...]]
    rules: tuple[Rule, ...]

    def cells(self) -> list[dict[str, Any]]:
        """Every combination of the grid, in the grid's order (the last key varying fastest)."""
        return [dict(zip(self.grid, values, strict=True)) for values in itertools.product(*self.grid.values())]

    def expectation(self, cell: dict[str, Any], where: str) -> dict[str, Any]:
        """The spec `expect` of a cell: every matching rule's, together; SpecError when no rule matches."""
        matching = [rule for rule in self.rules if rule.matches(cell)]
        if not matching:
            raise SpecError(f"{where}: no rule matches the cell {cell_label(cell)} (add one, or a rule without when)")
        merged: dict[str, Any] = {}
        for rule in matching:
            for key, value in rule.expect.items():
                if key == "valid":
                    if merged.get("valid", value) != value:
                        raise SpecError(f"{rule.where}.expect.valid: contradicts another rule for {cell_label(cell)}")
                    merged["valid"] = value
                elif isinstance(value, dict):  # faults: per fault name
                    merged[key] = {**merged.get(key, {}), **value}
                elif not isinstance(value, list):  # reason: the last matching rule's
                    merged[key] = value
                else:  # a list: anomalies or facts (names), log evidence (mappings), each once
                    merged[key] = list({repr(v): v for v in [*merged.get(key, []), *value]}.values())
        return filled(merged, cell)


def filled(expect: dict[str, Any], cell: dict[str, Any]) -> dict[str, Any]:
    """`expect` with each `{setting}` and `{setting.protocol}` of its log evidence and reason replaced by the
    cell's value (escaped where it is a regular expression); other braces are left as they are."""
    names = "|".join(re.escape(k) for k in sorted(cell, key=len, reverse=True))
    field_re = re.compile(r"\{(" + names + r")(\.protocol)?\}")

    def fill(text: str, escape: bool) -> str:
        def value(match: re.Match[str]) -> str:
            setting = _text(cell[match.group(1)])
            got = protocol_version(setting) if match.group(2) else setting
            return re.escape(got) if escape else got
        return field_re.sub(value, text) if names else text

    out = copy.deepcopy(expect)
    for evidence in out.get("logs") or []:
        if isinstance(evidence, dict):
            for key, escape in FILLED:
                if isinstance(evidence.get(key), str):
                    evidence[key] = fill(evidence[key], escape)
    if isinstance(out.get("reason"), str):
        out["reason"] = fill(out["reason"], True)
    return out


def _norm(value: Any) -> Any:
    return value.lower() if isinstance(value, str) else value


def _holds(condition: Any, value: Any) -> bool:
    if isinstance(condition, list):
        return any(_holds(c, value) for c in condition)
    if isinstance(condition, str):
        match = _COMPARISON.fullmatch(condition)
        if match:
            if isinstance(value, bool) or not isinstance(value, int | float):
                return False
            return _OPERATORS[match.group(1)](value, float(match.group(2)))
    if isinstance(condition, bool) or isinstance(value, bool):
        return isinstance(condition, bool) and isinstance(value, bool) and condition is value
    return _norm(condition) == _norm(value) or str(_norm(condition)) == str(_norm(value))


def cell_label(cell: dict[str, Any]) -> str:
    """`acks=all enable.idempotence=true`: the cell as a person reads it."""
    return " ".join(f"{k}={_text(v)}" for k, v in cell.items())


def cell_name(cell: dict[str, Any], base: str | None = None) -> str:
    """`acks-all.idem-true.minisr-2`: the cell's configuration name (and run folder name); a matrix that starts
    from a configuration of its scenario puts that first (`acks1.kafka-3_9_1.md-kraft`), so that two matrices of
    one scenario from different configurations never name two cells alike."""
    parts = [*([base] if base else []), *(f"{SHORT.get(k, k.replace('.', '-'))}-{_text(v)}" for k, v in cell.items())]
    return ".".join(re.sub(r"[^A-Za-z0-9_-]", "_", part) for part in parts)


def _text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def cell_overrides(raw: dict[str, Any], cell: dict[str, Any]) -> dict[str, Any]:
    """Spec overrides that give `raw`'s scenario the cell's settings (producer groups are lists: rebuilt whole)."""
    producers = copy.deepcopy((raw.get("workloads") or {}).get("producers") or [])
    for group in producers:
        if isinstance(group, dict):
            group["settings"] = {**(group.get("settings") or {}),
                                 **{k: v for k, v in cell.items()
                                    if not _not_producer(k)}}
    cluster = {CLUSTER_SETTINGS[k]: v for k, v in cell.items() if k in CLUSTER_SETTINGS}
    overrides: dict[str, Any] = {"workloads": {"producers": producers}}
    if cluster:
        overrides["cluster"] = cluster
    for key, (section, name) in VERSION_SETTINGS.items():
        if key in cell:
            overrides.setdefault(section, {})[name] = str(cell[key])
    if UPGRADE_TO in cell:  # the schedule is a list: rebuilt whole, each rolling upgrade going to the cell's version
        overrides["nemesis"] = [{**event, "to_version": str(cell[UPGRADE_TO])}
                                if isinstance(event, dict) and event.get("fault") == "rolling-upgrade" else event
                                for event in copy.deepcopy(raw.get("nemesis") or [])]
    return overrides


def _not_producer(key: str) -> bool:
    """Whether a grid key sets something other than the producers' settings."""
    return key in CLUSTER_SETTINGS or key in VERSION_SETTINGS or key == UPGRADE_TO


def _parse_rule(where: str, raw: Any, grid: dict[str, tuple[Any, ...]]) -> Rule:
    raw = check_keys(where, raw, {"when", "expect"})
    when = raw.get("when") or {}
    if not isinstance(when, dict):
        raise SpecError(f"{where}.when: must be a mapping of grid settings to conditions")
    for key, condition in when.items():
        if key not in grid:
            raise SpecError(f"{where}.when.{key}: not a setting of the grid ({', '.join(grid)})")
        if isinstance(condition, dict):
            raise SpecError(f"{where}.when.{key}: must be a value, a list of values or a comparison like '>= 2'")
    if "expect" not in raw:
        raise SpecError(f"{where}.expect: required (what the cells it matches must show)")
    EXPECT.check(f"{where}.expect", raw["expect"])  # the spec's own rules for an expectation
    texts = [str(e.get(k, "")) for e in (raw["expect"] or {}).get("logs") or [] for k, _ in FILLED]
    for name in re.findall(r"\{([^{}]+)\.protocol\}", " ".join(texts + [str((raw["expect"] or {}).get("reason", ""))])):
        if name not in VERSION_GRID:
            raise SpecError(f"{where}.expect: {{{name}.protocol}}: only a Kafka version of the grid has a protocol "
                            f"({', '.join(sorted(VERSION_GRID))})")
    expect = {k: (list(ANOMALIES) if v == "all" and k != "valid" else v) for k, v in (raw["expect"] or {}).items()}
    return Rule(dict(when), expect, where)


def parse_matrix(where: str, raw: dict[str, Any], source: Path) -> Matrix:
    grid_raw = raw.get("grid")
    if not isinstance(grid_raw, dict) or not grid_raw:
        raise SpecError(f"{where}.grid: must map settings to lists of values")
    grid: dict[str, tuple[Any, ...]] = {}
    for key, values in grid_raw.items():
        if not isinstance(values, list) or not values:
            raise SpecError(f"{where}.grid.{key}: must be a non-empty list of values")
        if not _not_producer(key):
            for value in values:
                try:
                    check_settings("producer", {key: value})
                except SettingRefused as exc:
                    raise SpecError(f"{where}.grid.{key}: not a producer setting a matrix can vary "
                                    f"({exc.problem}; broker settings: {', '.join(CLUSTER_SETTINGS)})") from exc
        grid[key] = tuple(values)
    rules = raw.get("rules")
    if not isinstance(rules, list) or not rules:
        raise SpecError(f"{where}.rules: must be a non-empty list of {{when, expect}} rules")
    configuration = raw.get("configuration")
    if configuration is not None and not isinstance(configuration, str):
        raise SpecError(f"{where}.configuration: must be a configuration name, got {configuration!r}")
    overrides = raw.get("overrides") or {}
    if not isinstance(overrides, dict):
        raise SpecError(f"{where}.overrides: must be a mapping of spec keys")
    return Matrix(source, configuration, overrides, grid,
                  tuple(_parse_rule(f"{where}.rules[{i}]", r, grid) for i, r in enumerate(rules)))
