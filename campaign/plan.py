"""A campaign's runs: one `Case` per scenario configuration, seed or matrix cell, in the order they run.

A case names its spec file and how to turn it into one configuration; `Case.load` reads the file
each time it is called, so a re-run runs the spec as it is on disk then. The campaign seed (the
date's day number unless given) picks which seeds of each random-chaos range run tonight (a window
that slides by `count` each night, so the range is covered over the nights) and rotates the order,
which takes one case of every scenario before a second of any.
Must never: run anything; the runner does.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from campaign.config import Campaign, ChaosEntry, ScenarioEntry
from campaign.matrix import Matrix, cell_label, cell_name, cell_overrides
from harness.spec import Spec, configurations_of, load_spec_file, merge, parse_spec
from testbed.errors import SpecError

EPOCH = date(1970, 1, 1)
CATALOGUE, RANDOM_CHAOS, MATRIX = "catalogue", "random-chaos", "matrix"


def date_seed(today: date | None = None) -> int:
    """Days since 1970-01-01 (UTC): one more each night, so seed windows and rotations move on nightly."""
    return ((today or datetime.now(UTC).date()) - EPOCH).days


@dataclass(frozen=True)
class Case:
    """One planned run: a configuration of a scenario, as the campaign changes it."""

    entry: int  # index of its entry in the campaign file
    kind: str  # catalogue | random-chaos | matrix
    scenario: str
    configuration: str | None  # the spec configuration it runs (None: a spec without configurations)
    source: Path
    overrides: dict[str, Any]  # the campaign's and the entry's spec overrides
    base: str | None = None  # the scenario configuration a seed or cell starts from
    settings: dict[str, Any] = field(default_factory=dict)  # the seed, or the matrix cell
    expect: dict[str, Any] | None = None  # a matrix cell's expectation (from its rules)

    @property
    def label(self) -> str:
        return self.configuration or "default"

    @property
    def key(self) -> tuple[str, str]:
        """What a case is across campaigns: (scenario, configuration)."""
        return self.scenario, self.label

    def load(self) -> Spec:
        """The spec this case runs, read from its file now; SpecError naming the file otherwise."""
        try:
            return parse_spec(self.raw(), self.configuration)
        except SpecError as exc:
            raise SpecError(f"{self.source}: {exc}") from exc

    def raw(self) -> dict[str, Any]:
        raw = merge(load_spec_file(self.source), self.overrides)
        if self.kind == CATALOGUE:
            return raw
        raw = flatten(raw, self.base, self.source)
        if self.kind == RANDOM_CHAOS:
            configuration: dict[str, Any] = {"overrides": {"seed": self.settings["seed"]}}
        else:
            configuration = {"overrides": cell_overrides(raw, self.settings), "expect": self.expect}
        raw["configurations"] = {self.configuration: configuration}
        return raw


def flatten(raw: dict[str, Any], configuration: str | None, source: Path) -> dict[str, Any]:
    """The spec of one configuration as a spec without configurations (its overrides merged, its expect at the top)."""
    out = copy.deepcopy(raw)
    configurations = out.pop("configurations", None) or {}
    if configuration is None:
        return out
    if configuration not in configurations:
        raise SpecError(f"{source}: configurations: no configuration {configuration!r} "
                        f"(known: {', '.join(configurations) or 'none'})")
    chosen = configurations[configuration] or {}
    out = merge(out, chosen.get("overrides") or {})
    if "expect" in chosen:
        out["expect"] = chosen["expect"]
    return out


def seed_window(low: int, high: int, count: int, seed: int) -> list[int]:
    """`count` consecutive seeds of [low, high] (wrapping), starting where night `seed` puts them."""
    size = high - low + 1
    start = (seed * count) % size
    return [low + (start + i) % size for i in range(min(count, size))]


def _catalogue_cases(index: int, entry: ScenarioEntry, overrides: dict[str, Any]) -> list[Case]:
    raw = load_spec_file(entry.source)
    known = configurations_of(raw)
    names = list(entry.configurations) if entry.configurations is not None else known
    for name in names:
        if name not in known:
            raise SpecError(f"entries[{index}].configurations: {entry.source.stem} has no configuration {name!r} "
                            f"(known: {', '.join(str(k) for k in known if k) or 'none'})")
    return [Case(index, CATALOGUE, str(raw.get("name", entry.source.stem)), name, entry.source,
                 merge(overrides, entry.overrides)) for name in names]


def _chaos_cases(index: int, entry: ChaosEntry, overrides: dict[str, Any], seed: int) -> list[Case]:
    name = str(load_spec_file(entry.source).get("name", entry.source.stem))
    return [Case(index, RANDOM_CHAOS, name, f"seed-{s}", entry.source, merge(overrides, entry.overrides),
                 entry.configuration, {"seed": s}) for s in seed_window(*entry.seeds, entry.count, seed)]


def _matrix_cases(index: int, entry: Matrix, overrides: dict[str, Any]) -> tuple[list[Case], list[dict[str, Any]]]:
    """The cells to run, and those the spec refuses (Kafka or librdkafka would), each with the reason."""
    name = str(load_spec_file(entry.source).get("name", entry.source.stem))
    cases, refused = [], []
    for cell in entry.cells():
        expect = entry.expectation(cell, f"entries[{index}].matrix.rules")
        case = Case(index, MATRIX, name, cell_name(cell, entry.configuration), entry.source, merge(overrides, entry.overrides),
                    entry.configuration, cell, expect)
        try:
            case.load()
        except SpecError as exc:
            refused.append({"entry": index, "scenario": name, "configuration": case.configuration,
                            "settings": cell, "label": cell_label(cell), "reason": str(exc)})
            continue
        cases.append(case)
    return cases, refused


def plan_cases(campaign: Campaign, seed: int) -> tuple[list[Case], list[dict[str, Any]]]:
    """Every case of the campaign in running order, and the matrix cells refused; SpecError on a bad spec."""
    cases, refused = file_cases(campaign, seed)
    return coverage_order(cases, seed), refused


def file_cases(campaign: Campaign, seed: int) -> tuple[list[Case], list[dict[str, Any]]]:
    """Every case of the campaign in the file's order, each spec checked, and the matrix cells refused."""
    cases: list[Case] = []
    refused: list[dict[str, Any]] = []
    try:
        for index, entry in enumerate(campaign.entries):
            if isinstance(entry, ScenarioEntry):
                cases += _catalogue_cases(index, entry, campaign.overrides)
            elif isinstance(entry, ChaosEntry):
                cases += _chaos_cases(index, entry, campaign.overrides, seed)
            else:
                cells, no = _matrix_cases(index, entry, campaign.overrides)
                cases, refused = cases + cells, refused + no
    except SpecError as exc:
        raise SpecError(f"{campaign.path}: {exc}") from exc
    checked: set[str] = set()
    for case in cases:  # every spec is valid before anything starts; a repeat's copies are one spec, read once
        if (same := repr(replace(case, entry=0))) in checked:
            continue
        try:
            case.load()
        except SpecError as exc:
            raise SpecError(f"{campaign.path}: entries[{case.entry}] ({case.scenario} [{case.label}]): {exc}") from exc
        checked.add(same)
    return cases, refused


def more_copies(cases: list[Case], refused: list[dict[str, Any]], per_copy: int, have: int,
                copies: int) -> tuple[list[Case], list[dict[str, Any]]]:
    """`file_cases` of a campaign planned `have` times over, with copies `have` to `copies - 1` added (copy k of entry
    i is entry i + k × `per_copy`): what `repeat: copies` plans, without checking the same specs again."""
    ks = range(have, copies)
    return (cases + [replace(c, entry=c.entry + k * per_copy) for k in ks for c in cases if c.entry < per_copy],
            refused + [{**r, "entry": r["entry"] + k * per_copy} for k in ks for r in refused if r["entry"] < per_copy])


def without_recorded(cases: list[Case], recorded: dict[tuple[str, str], int],
                     totals: dict[tuple[str, str], int] | None = None) -> list[Case]:
    """`cases` less, for each (scenario, configuration), as many of its cases as it has runs on record (`recorded`,
    campaign.flakes.recorded_runs), its first copies first, and with `totals` (runs each should have in all) no more
    than its total lacks; the rest keep their order. A campaign run in parts (campaigns/stability.yaml) so plans only
    what the earlier parts lack, the least-run cases in its first rounds."""
    left = dict(recorded)
    kept: list[Case] = []
    taken: dict[tuple[str, str], int] = {}
    for case in sorted(cases, key=lambda c: c.entry):
        if left.get(case.key, 0) > 0:
            left[case.key] -= 1
        elif totals is None or recorded.get(case.key, 0) + taken.get(case.key, 0) < totals[case.key]:
            taken[case.key] = taken.get(case.key, 0) + 1
            kept.append(case)
    keep = {id(c) for c in kept}
    return [c for c in cases if id(c) in keep]


def _rotate(items: list[Any], by: int) -> list[Any]:
    return items[by % len(items):] + items[:by % len(items)] if items else items


def coverage_order(cases: Iterable[Case], seed: int) -> list[Case]:
    """Round-robin over scenarios: one case of each before a second of any; both levels rotated by `seed`."""
    groups: dict[str, list[Case]] = {}
    for case in cases:
        groups.setdefault(case.scenario, []).append(case)
    rounds = [_rotate(group, seed) for group in _rotate(list(groups.values()), seed)]
    ordered: list[Case] = []
    for depth in range(max((len(g) for g in rounds), default=0)):
        ordered += [group[depth] for group in rounds if depth < len(group)]
    return ordered
