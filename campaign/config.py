"""Campaign files: YAML in, a validated `Campaign` out, or a SpecError naming the file and the key's path.

A campaign lists what to run (docs/campaigns.md): catalogue scenarios (every configuration or some),
seeded random-chaos runs over a seed range, and matrix sweeps (`campaign.matrix`), with a
default budget, a checker engine and spec overrides for every run (to shorten them, say). Every spec
a campaign would run is built and validated here, before anything starts.
Must never: start a run, touch the network, or write a file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from campaign.keys import check_keys
from campaign.matrix import Matrix, parse_matrix
from harness.spec import load_spec_file
from testbed.errors import SpecError
from testbed.paths import REPO_ROOT

CATALOGUE_DIR = REPO_ROOT / "scenarios"
TOP_KEYS = {"name", "description", "budget", "engine", "overrides", "entries", "repeat", "flake_rate"}
FLAKE_RATE_KEYS = {"window", "runs", "threshold"}
SCENARIO_KEYS = {"scenario", "configurations", "overrides"}
CHAOS_KEYS = {"scenario", "configuration", "seeds", "count", "overrides"}
DEFAULT_CHAOS_SCENARIO = "random-chaos"
ENGINES = ("auto", "spark", "pandas")
_DURATION = re.compile(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")


@dataclass(frozen=True)
class ScenarioEntry:
    """A catalogue scenario: `configurations` (None: every one the file has)."""

    source: Path
    configurations: tuple[str, ...] | None
    overrides: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ChaosEntry:
    """Seeded random-chaos runs: `count` seeds a campaign out of the range [low, high], rotating night by night."""

    source: Path
    configuration: str | None
    seeds: tuple[int, int]
    count: int
    overrides: dict[str, Any] = field(default_factory=dict)


Entry = ScenarioEntry | ChaosEntry | Matrix


@dataclass(frozen=True)
class FlakeRate:
    """`flake_rate`: over the last `window` campaigns of the name (or, with `runs`, over each case's last `runs` runs
    in any campaigns of the name, however many that takes), a case (scenario × configuration) whose share of
    FLAKE outcomes among its runs is above `threshold` fails `python -m campaign.flakes` (campaign.flakes)."""

    window: int | None
    threshold: float
    runs: int | None = None  # instead of window: each case's last runs (runs accumulate across partial campaigns)


@dataclass(frozen=True)
class Campaign:
    name: str
    path: Path
    description: str
    budget_s: float | None
    engine: str | None
    overrides: dict[str, Any]
    entries: tuple[Entry, ...]  # the file's entries `repeat` times over: copy k of entry i is entry i + k × len(file's)
    repeat: int = 1
    flake_rate: FlakeRate | None = None


def parse_duration(text: Any, where: str) -> float:
    """'90s', '10m', '1h30m' (or a number of seconds) as seconds; SpecError naming `where` otherwise."""
    if isinstance(text, int | float) and not isinstance(text, bool) and text > 0:
        return float(text)
    match = _DURATION.fullmatch(str(text).strip()) if isinstance(text, str) else None
    if not match or not any(match.groups()):
        raise SpecError(f"{where}: expected a duration like 90s, 10m or 1h30m, got {text!r}")
    hours, minutes, seconds = (int(g or 0) for g in match.groups())
    total = hours * 3600 + minutes * 60 + seconds
    if total <= 0:
        raise SpecError(f"{where}: a budget must be longer than 0 s, got {text!r}")
    return float(total)


def mapping(where: str, raw: Any) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise SpecError(f"{where}: must be a mapping of spec keys, got {type(raw).__name__}")
    return raw


def scenario_source(where: str, value: Any, base: Path) -> Path:
    """A scenario by catalogue name (scenarios/<name>.yaml) or as a path to a spec file (relative to the campaign's folder)."""
    if not isinstance(value, str) or not value:
        raise SpecError(f"{where}: must name a catalogue scenario or a spec file, got {value!r}")
    path = (base / value) if value.endswith((".yaml", ".yml")) else CATALOGUE_DIR / f"{value}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in CATALOGUE_DIR.glob("*.yaml")))
        raise SpecError(f"{where}: no scenario {value!r} ({path} does not exist; the catalogue has {known})")
    return path


def _names(where: str, raw: Any) -> tuple[str, ...] | None:
    if raw is None:
        return None
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not raw or not all(isinstance(n, str) for n in raw):
        raise SpecError(f"{where}: must be a list of configuration names")
    return tuple(raw)


def parse_chaos(where: str, raw: Any, base: Path) -> ChaosEntry:
    raw = check_keys(where, raw, CHAOS_KEYS)
    seeds = raw.get("seeds")
    if not (isinstance(seeds, list) and len(seeds) == 2 and all(isinstance(s, int) and not isinstance(s, bool)
                                                                 for s in seeds) and 0 <= seeds[0] <= seeds[1]):
        raise SpecError(f"{where}.seeds: must be a range [low, high] of seeds (0 <= low <= high), got {seeds!r}")
    count = raw.get("count", 1)
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise SpecError(f"{where}.count: must be a number of seeds >= 1, got {count!r}")
    configuration = raw.get("configuration")
    if configuration is not None and not isinstance(configuration, str):
        raise SpecError(f"{where}.configuration: must be a configuration name, got {configuration!r}")
    source = scenario_source(f"{where}.scenario", raw.get("scenario", DEFAULT_CHAOS_SCENARIO), base)
    return ChaosEntry(source, configuration, (seeds[0], seeds[1]), count, mapping(f"{where}.overrides",
                                                                                  raw.get("overrides")))


def parse_entry(where: str, raw: Any, base: Path) -> Entry:
    if isinstance(raw, dict) and "random-chaos" in raw:
        check_keys(where, raw, {"random-chaos"})
        return parse_chaos(f"{where}.random-chaos", raw["random-chaos"], base)
    if isinstance(raw, dict) and "matrix" in raw:
        check_keys(where, raw, {"matrix"})
        matrix = raw["matrix"]
        scenario = check_keys(f"{where}.matrix", matrix, {"scenario", "configuration", "overrides", "grid", "rules"})
        source = scenario_source(f"{where}.matrix.scenario", scenario.get("scenario"), base)
        return parse_matrix(f"{where}.matrix", matrix, source)
    if isinstance(raw, dict) and "scenario" in raw:
        raw = check_keys(where, raw, SCENARIO_KEYS)
        return ScenarioEntry(scenario_source(f"{where}.scenario", raw["scenario"], base),
                             _names(f"{where}.configurations", raw.get("configurations")),
                             mapping(f"{where}.overrides", raw.get("overrides")))
    raise SpecError(f"{where}: must be one of {{scenario: ...}}, {{random-chaos: ...}} or {{matrix: ...}}")


def parse_repeat(raw: Any) -> int:
    if raw is None:
        return 1
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 1:
        raise SpecError(f"repeat: must be how many times each case runs (a whole number >= 1), got {raw!r}")
    return raw


def parse_flake_rate(raw: Any) -> FlakeRate | None:
    if raw is None:
        return None
    raw = check_keys("flake_rate", raw, FLAKE_RATE_KEYS)
    window, runs, threshold = raw.get("window"), raw.get("runs"), raw.get("threshold")
    if (window is None) == (runs is None):
        raise SpecError("flake_rate: give exactly one of window (campaigns) and runs (each case's last runs)")
    for key, value, what in (("window", window, "campaigns"), ("runs", runs, "runs")):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise SpecError(f"flake_rate.{key}: must be a number of {what} >= 1, got {value!r}")
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0 <= threshold < 1:
        raise SpecError(f"flake_rate.threshold: must be a share of runs, 0 <= threshold < 1 (0.2: one run in "
                        f"five), got {threshold!r}")
    return FlakeRate(window, float(threshold), runs)


def parse_campaign(raw: Any, path: Path) -> Campaign:
    raw = check_keys("campaign", raw, TOP_KEYS)
    name = raw.get("name", path.stem)
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]*", name):
        raise SpecError(f"name: must be an identifier like nightly, got {name!r}")
    engine = raw.get("engine")
    if engine is not None and engine not in ENGINES:
        raise SpecError(f"engine: must be auto, spark or pandas, got {engine!r}")
    entries = raw.get("entries")
    if not isinstance(entries, list) or not entries:
        raise SpecError("entries: must be a non-empty list of scenarios, random-chaos and matrix entries")
    budget = raw.get("budget")
    repeat = parse_repeat(raw.get("repeat"))
    parsed = tuple(parse_entry(f"entries[{i}]", e, path.parent) for i, e in enumerate(entries))
    return Campaign(
        name=name, path=path, description=str(raw.get("description", "")).strip(),
        budget_s=parse_duration(budget, "budget") if budget is not None else None, engine=engine,
        overrides=mapping("overrides", raw.get("overrides")),
        entries=parsed * repeat, repeat=repeat, flake_rate=parse_flake_rate(raw.get("flake_rate")))


def load_campaign(path: Path) -> Campaign:
    """Read and validate a campaign file; every error is a SpecError starting with the file's name."""
    raw = load_spec_file(path)  # the spec files' reader: a missing file or broken YAML names the file and line
    try:
        return parse_campaign(raw, path)
    except SpecError as exc:
        raise SpecError(f"{path}: {exc}") from exc
