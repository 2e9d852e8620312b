"""docs/scenarios.md tells the story of every scenario in scenarios/."""

from __future__ import annotations

import re

from tests.conftest import REPO


def test_every_scenario_has_its_section_and_a_catalogue_row() -> None:
    doc = (REPO / "docs" / "scenarios.md").read_text()
    headings = set(re.findall(r"^### (\S+)$", doc, re.MULTILINE))
    rows = set(re.findall(r"^\| `([a-z0-9-]+)` \|", doc, re.MULTILINE))
    scenarios = {p.stem for p in (REPO / "scenarios").glob("*.yaml")}
    assert not scenarios - headings, f"add a '### <id>' section to docs/scenarios.md for {scenarios - headings}"
    assert not scenarios - rows, f"add a catalogue row to docs/scenarios.md for {scenarios - rows}"
