"""docs/architecture.md's "Adding things" lists, held to the tree: every file they name exists, and adding a fault of an
existing category or an anomaly names exactly the files the fixture tests show to be enough (a record and its logic)."""

from __future__ import annotations

import re

from tests.conftest import REPO

ARCHITECTURE = REPO / "docs" / "architecture.md"
# What each task edits by hand, beside the tests: the record, then its logic.
FAULT_FILES = {"nemesis/registry.py", "nemesis/faults.py"}
ANOMALY_FILES = {"checkers/anomalies.py", "checkers/pandas_engine.py", "checkers/spark_queries.py",
                 "checkers/txn_pandas.py", "checkers/txn_spark.py", "checkers/groups_pandas.py",
                 "checkers/groups_spark.py"}
# The fixture tests that add a record and find it everywhere, and one of their tests each.
FIXTURES = {"tests/nemesis/test_registry.py": "def test_a_new_kind_is_in_the_schema_and_the_docs_table",
            "tests/checkers/test_anomaly_record.py": "def test_a_new_record_and_its_pandas_logic_reach_the_verdict"}


def sections() -> dict[str, str]:
    text = ARCHITECTURE.read_text()
    adding = text.split("## Adding things: which files you touch", 1)[1].split("\n## ", 1)[0]
    return {m.group(1): m.group(2) for m in re.finditer(r"^### (.+?)\n(.*?)(?=^### |\Z)", adding, re.M | re.S)}


def named_files(text: str) -> set[str]:
    return {m for m in re.findall(r"`([\w/.<>-]+\.(?:py|md|yaml))`", text) if "<" not in m}


def edited_files(text: str) -> set[str]:
    """The files of the section's bullet list (what you edit), not of the paragraphs after it."""
    bullets = "\n".join(line for line in text.splitlines() if line.startswith(("- ", "  ")))
    return named_files(bullets)


def test_the_four_tasks_are_there_and_every_file_they_name_exists() -> None:
    found = sections()
    assert list(found) == ["Add a fault of an existing category", "Add an anomaly", "Add a runtime kind",
                           "Add a scenario"]
    for title, text in found.items():
        for path in named_files(text):
            assert (REPO / path).exists(), f"{title}: {path} does not exist"


def test_a_fault_and_an_anomaly_are_a_record_plus_their_logic() -> None:
    found = sections()
    assert edited_files(found["Add a fault of an existing category"]) - {"nemesis/workload_faults.py",
                                                                        "nemesis/stray.py"} == FAULT_FILES
    assert edited_files(found["Add an anomaly"]) - {"tests/checkers/cases.py", "tests/checkers/txn_cases.py",
                                                    "tests/checkers/test_groups.py"} == ANOMALY_FILES
    for path, test in FIXTURES.items():
        assert path in ARCHITECTURE.read_text() and test in (REPO / path).read_text(), path


def test_a_stale_list_is_caught() -> None:
    stale = "- `nemesis/shapes.py`: a file the task no longer needs\n- `nemesis/registry.py`: its record\n"
    assert edited_files(stale) == {"nemesis/shapes.py", "nemesis/registry.py"} != FAULT_FILES
    assert named_files("`nemesis/nonexistent.py`") == {"nemesis/nonexistent.py"}
    assert not (REPO / "nemesis/nonexistent.py").exists()
