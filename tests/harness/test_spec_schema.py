"""docs/spec.schema.json and docs/spec.md's key tables are current, and the schema says what the harness says."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from harness.spec import parse_spec
from harness.spec_keys import SECTIONS
from harness.spec_schema import SCHEMA_FILE, json_schema, main
from nemesis.fault_schema import FAULT_KEYS
from nemesis.registry import fault_kinds
from testbed.errors import SpecError
from tests.conftest import REPO

SCENARIOS = sorted((REPO / "scenarios").glob("*.yaml"))
VALIDATOR = jsonschema.Draft202012Validator(json_schema())


def test_the_committed_schema_and_key_tables_are_current() -> None:
    assert main(["--check"]) == 0, "docs/spec.schema.json or docs/spec.md is stale: run make spec-docs"
    jsonschema.Draft202012Validator.check_schema(json_schema())
    assert SCHEMA_FILE.exists()


def test_every_fault_key_has_a_schema() -> None:
    missing = sorted({k for kind in fault_kinds() for k in kind.spec_keys} - set(FAULT_KEYS))
    assert not missing, f"add these fault keys to nemesis.fault_schema.FAULT_KEYS: {missing}"


def test_every_key_is_described() -> None:
    undescribed = [f"{s.title}.{name}" for s in SECTIONS for name, key in s.keys.items() if not key.doc]
    assert not undescribed


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_the_schema_accepts_every_catalogue_scenario(path: Path) -> None:
    errors = [e.message for e in VALIDATOR.iter_errors(yaml.safe_load(path.read_text()))]
    assert not errors, errors


def _inflight_reorder(**changes: Any) -> dict[str, Any]:
    raw = yaml.safe_load((REPO / "scenarios" / "inflight-reorder.yaml").read_text())
    for section, values in changes.items():
        if isinstance(values, dict):
            raw[section].update(values)
        else:
            raw[section] = values
    return raw


@pytest.mark.parametrize(
    "raw",
    [
        _inflight_reorder(cluster={"partitions": "lots"}),
        _inflight_reorder(cluster={"partitions": -5}),
        _inflight_reorder(description=["a", "list"]),
        _inflight_reorder(cluster={"replicas": 3}),
        _inflight_reorder(nemesis=[{"at": 1, "fault": "isolate-az", "target": "nowhere"}]),
        _inflight_reorder(nemesis=[{"at": 1, "fault": "kill", "target": "leader", "role": "both"}]),
        _inflight_reorder(configurations={"x": {"overrides": {"seed": "twelve"}}}),
        _inflight_reorder(workloads={"producers": [{"settings": {"linger.ms": [1]}}]}),
    ],
)
def test_the_schema_refuses_what_the_harness_refuses(raw: dict[str, Any]) -> None:
    assert list(VALIDATOR.iter_errors(raw))
    with pytest.raises(SpecError):
        parse_spec(raw)


def test_the_example_in_docs_spec_md_is_a_valid_spec() -> None:
    text = (REPO / "docs" / "spec.md").read_text()
    example = yaml.safe_load(text.split("```yaml\n", 1)[1].split("```", 1)[0])
    assert not list(VALIDATOR.iter_errors(example))
    assert [s.configuration for s in [parse_spec(example, c) for c in example["configurations"]]] == [
        "acks1", "acksall-idempotent"]
