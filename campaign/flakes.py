"""Outcomes over time: per scenario × configuration, how its cases ended in the last campaigns of a name, read
from the lake's campaigns table, and whether its flake rate over that window passes the campaign's threshold.

A case's outcome is the one campaign/records.py gave it (PASS, FLAKE, FAIL, REGRESSION, INCONCLUSIVE, SKIPPED),
read back from its rows (one per attempt; a case that never ran one row, attempt 0). Its runs are its cases that
ran (every outcome but SKIPPED); its flake rate is FLAKE ÷ runs over the window. A campaign with `repeat: N`
(campaigns/stability.yaml) has N cases of each configuration, told apart by their entry. The campaign index,
summary.md (`history_lines`), the nightly workflow's check and BENCHMARKS.md's flake table (`markdown_table`) all
read this one model.

The window is the last N campaigns of the name (`flake_rate.window`), or each case's last N runs in any campaigns of
the name however many that takes (`flake_rate.runs`: for a campaign run in parts, a budget's or a seed's share on
each machine, whose runs accumulate).

`python -m campaign.flakes CAMPAIGN.yaml [--lake DIR]... [--window N | --runs N] [--threshold X] [--write FILE]`
prints the table; exit status 1 when a case's flake rate over the window passes the threshold (the file's
`flake_rate`, or the flags; a file without either has none, and the window is DEFAULT_WINDOW), 0 otherwise, 3 for
bad input (one line naming the file and key); `--write` puts the table in FILE between `<!-- flake-table:NAME -->`
and `<!-- /flake-table:NAME -->`. Several `--lake`s are read as one (a campaign in two of them counted once: the
kept stability campaigns, campaigns/lake/, beside results/lake/).
Must never: write the lake, or change a campaign's own outcome.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from campaign.config import FlakeRate, load_campaign
from campaign.lake import DEFAULT_LAKE, read_campaigns
from campaign.records import FAIL, FLAKE, INCONCLUSIVE, OUTCOMES, PASS, REGRESSION, SKIPPED
from testbed.errors import SpecError

SHOWN = tuple(o for o in OUTCOMES if o != SKIPPED)  # the columns, records' order
DEFAULT_WINDOW = 7  # campaigns shown in the index when the campaign file sets no flake_rate
LETTER = {PASS: "P", FLAKE: "F", FAIL: "X", REGRESSION: "R", INCONCLUSIVE: "I", SKIPPED: "-"}


@dataclass
class Trend:
    """One scenario × configuration over the window: each campaign's outcomes of it, oldest first."""

    scenario: str
    configuration: str
    outcomes: list[tuple[str, list[str]]] = field(default_factory=list)  # (campaign id, its cases' outcomes)

    @property
    def counts(self) -> dict[str, int]:
        seen = [o for _, outcomes in self.outcomes for o in outcomes]
        return {o: seen.count(o) for o in SHOWN}

    @property
    def runs(self) -> int:
        return sum(1 for _, outcomes in self.outcomes for o in outcomes if o != SKIPPED)

    @property
    def flake_rate(self) -> float:
        return self.counts[FLAKE] / self.runs if self.runs else 0.0

    @property
    def letters(self) -> str:
        """Each campaign's outcomes as letters (P, F flake, X fail, R regression, I inconclusive, - skipped)."""
        return " ".join("".join(LETTER.get(o, "?") for o in outcomes) or "·" for _, outcomes in self.outcomes)


@dataclass
class History:
    """What a campaign's index and summary show of the campaigns of its name before it (itself included)."""

    window: int | None  # campaigns back; None when `runs` is the window
    threshold: float | None  # the file's flake_rate.threshold, None when it sets none
    ids: list[str] = field(default_factory=list)
    trends: list[Trend] = field(default_factory=list)
    note: str = ""  # why there is nothing to show, when there is not
    runs: int | None = None  # each case's last runs, when the window is counted in runs

    @property
    def span(self) -> str:
        """The window in words: "the last 4 campaigns" or "each case's last 20 runs"."""
        return f"each case's last {self.runs} runs" if self.runs else f"the last {self.window} campaigns"

    @property
    def above(self) -> list[Trend]:
        return over(self.trends, self.threshold) if self.threshold is not None else []


def span_of(rate: FlakeRate | None, window: int | None = None,
            runs: int | None = None) -> tuple[int | None, int | None]:
    """The window a table counts over, as (window, runs) with one of them set: `runs`, else `window` (the command's
    flags), else the campaign file's flake_rate, else the last DEFAULT_WINDOW campaigns. The one place the default
    is resolved: the index and summary (history_of), the command (main) and `trends` all ask it."""
    if runs is not None:
        return None, runs
    if window is not None:
        return window, None
    if rate is not None and rate.runs is not None:
        return None, rate.runs
    return (rate.window if rate is not None and rate.window else DEFAULT_WINDOW), None


def history_of(lake: Path, name: str, source: Path) -> History:
    """The last campaigns of `name` in the lake, over the window of its file's flake_rate (else DEFAULT_WINDOW);
    an unreadable file or lake is said in `note`, never raised."""
    try:
        rate = load_campaign(source).flake_rate
    except (SpecError, OSError):
        rate = None
    window, runs = span_of(rate)
    history = History(window, rate.threshold if rate else None, runs=runs)
    try:
        history.ids, history.trends = trends(read_campaigns(lake), name, history.window, runs)
    except (OSError, ValueError) as exc:
        history.note = f"the campaigns table in {lake} cannot be read ({exc})"
    return history


def trends(rows: Iterable[dict[str, Any]], name: str, window: int | None,
           runs: int | None = None) -> tuple[list[str], list[Trend]]:
    """The campaigns of `name` in the window (by start, oldest first) and each scenario × configuration's outcomes in
    them, sorted by scenario and configuration; rows are the lake's campaigns table (campaign.lake.read_campaigns).
    The window is the last `window` campaigns, or with `runs` each case's last `runs` runs (SKIPPED is no run);
    neither: `span_of`'s default."""
    window, runs = span_of(None, window, runs)
    mine = [r for r in rows if r.get("campaign") == name]
    started: dict[str, Any] = {}
    cases: dict[tuple[str, int, str, str], str] = {}
    for r in mine:
        cid = str(r["campaign_id"])
        started[cid] = min(started.get(cid, r["started_at"]), r["started_at"])
        cases[(cid, int(r["entry"]), str(r["scenario"]), str(r["configuration"]))] = str(r["outcome"])
    order = sorted(started, key=lambda c: (started[c], c))
    shown = set(order[-window:] if window else order)  # runs: every campaign, then each case's last runs
    seen: dict[tuple[str, str], list[tuple[str, str]]] = {}  # (scenario, configuration) -> [(campaign, outcome)]
    for (cid, _, scenario, configuration), outcome in sorted(
            cases.items(), key=lambda kv: (started[kv[0][0]], kv[0][0], kv[0][1])):
        if cid in shown:
            seen.setdefault((scenario, configuration), []).append((cid, outcome))
    if runs:
        seen = {key: last_runs(pairs, runs) for key, pairs in seen.items()}
    by_key = {}
    for key, pairs in seen.items():
        grouped: dict[str, list[str]] = {}
        for cid, outcome in pairs:
            grouped.setdefault(cid, []).append(outcome)
        by_key[key] = Trend(*key, list(grouped.items()))
    if runs:  # the campaigns some case's last runs came from
        shown = {cid for pairs in seen.values() for cid, _ in pairs}
    ids = [c for c in order if c in shown]
    return ids, [by_key[k] for k in sorted(by_key)]


def last_runs(pairs: list[tuple[str, str]], runs: int) -> list[tuple[str, str]]:
    """The (campaign, outcome) pairs from the `runs`-th last run on (a SKIPPED case between them is kept, no run)."""
    ran = [i for i, (_, outcome) in enumerate(pairs) if outcome != SKIPPED]
    return pairs[ran[-runs]:] if len(ran) >= runs else pairs


def over(items: Sequence[Trend], threshold: float) -> list[Trend]:
    """The cases whose flake rate over the window is above `threshold`."""
    return [t for t in items if t.flake_rate > threshold]


def _rate(trend: Trend) -> str:
    return f"{trend.flake_rate:.0%} ({trend.counts[FLAKE]}/{trend.runs})" if trend.runs else "-"


def markdown_table(ids: Sequence[str], items: Sequence[Trend], runs: int | None = None) -> str:
    """The flake table: per scenario × configuration, its runs, each outcome's count, its flake rate and the letters."""
    head = ["scenario", "configuration", "runs", *SHOWN, "flake rate", "outcomes, oldest campaign first"]
    plural = "s" if len(ids) != 1 else ""
    lines = [(f"Each case's last {runs} runs, in " if runs else "Over ") + f"{len(ids)} campaign{plural}"
             + (f" ({ids[0]} to {ids[-1]})" if ids else "") + ":", "",
             "| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for t in items:
        cells = [t.scenario, t.configuration, str(t.runs), *(str(t.counts[o]) for o in SHOWN), _rate(t),
                 f"`{t.letters}`"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def history_lines(history: History) -> list[str]:
    """For summary.md and the console: the window, then each case that did not pass every run."""
    if history.note or not history.ids:
        return [history.note or "no campaign of this name in the lake yet"]
    n = len(history.ids)
    lines = [f"over {history.span}, {n} campaign{'s' if n != 1 else ''} ({history.ids[0]} to {history.ids[-1]}): "
             f"{len(history.trends)} cases, {sum(t.runs for t in history.trends)} runs"
             + (f"; flake-rate threshold {history.threshold:.0%}" if history.threshold is not None else "")]
    above = history.above
    for t in history.trends:
        if t.counts["PASS"] != t.runs:
            lines.append(f"{t.scenario} [{t.configuration}]: {t.letters} (flake rate {_rate(t)})"
                         + (" ABOVE THE THRESHOLD" if t in above else ""))
    return lines


def recorded_runs(rows: Iterable[dict[str, Any]], name: str) -> dict[tuple[str, str], int]:
    """How many runs each (scenario, configuration) has in the campaigns of `name` (rows as `read_lakes` gives
    them; a case's attempts are one run, a SKIPPED case none): what `harness campaign --resume` counts. Every run
    on record: `trends`' runs window with no bound."""
    _, items = trends(rows, name, None, runs=sys.maxsize)
    return {(t.scenario, t.configuration): t.runs for t in items if t.runs}


def owed_runs(rows: Iterable[dict[str, Any]], name: str, rate: FlakeRate | None) -> dict[tuple[str, str], int]:
    """For a campaign whose `flake_rate` counts each case's last N runs: how many more runs, all passing, each
    (scenario, configuration) needs for its flake rate over its last N to be at most the threshold; only the cases
    that need some. What `harness campaign --resume` adds to its repeat: a configuration that flaked runs again until
    the flake has left its window (the stability campaign's goal, none in 20). Nothing without a runs window."""
    if rate is None or rate.runs is None:
        return {}
    _, items = trends(rows, name, None, runs=sys.maxsize)
    owed = {}
    for t in items:
        seen = [o for _, outcomes in t.outcomes for o in outcomes if o != SKIPPED]
        for more in range(rate.runs + 1):  # `runs` passes always clear it
            window = (seen + [PASS] * more)[-rate.runs:]
            if window.count(FLAKE) <= rate.threshold * len(window):
                break
        if more:
            owed[(t.scenario, t.configuration)] = more
    return owed


def read_lakes(lakes: Sequence[Path]) -> list[dict[str, Any]]:
    """The campaigns tables of several lakes as one: a campaign found in more than one is read from the first."""
    rows: list[dict[str, Any]] = []
    taken: set[str] = set()
    for lake in lakes:
        found = read_campaigns(lake)
        rows += [r for r in found if r["campaign_id"] not in taken]
        taken |= {r["campaign_id"] for r in found}
    return rows


def write_between_markers(path: Path, name: str, table: str) -> None:
    """Replace what is between FILE's `<!-- flake-table:NAME -->` and `<!-- /flake-table:NAME -->` with `table`."""
    start, end = f"<!-- flake-table:{name} -->", f"<!-- /flake-table:{name} -->"
    text = path.read_text(encoding="utf-8")
    if start not in text or end not in text or text.index(start) > text.index(end):
        raise ValueError(f"{path}: no {start} ... {end} markers to write the flake table between")
    before, rest = text.split(start, 1)
    after = rest.split(end, 1)[1]
    path.write_text(f"{before}{start}\n{table}{end}{after}", encoding="utf-8")


def main(argv: Sequence[str] | None = None, out: Any = None) -> int:
    out = out or sys.stdout
    parser = argparse.ArgumentParser(prog="python -m campaign.flakes", description=__doc__.split("\n\n")[0])
    parser.add_argument("campaign", type=Path, help="the campaign file (its name and flake_rate)")
    parser.add_argument("--lake", type=Path, action="append", help="a results lake (default: results/lake/); "
                        "repeat to read several as one")
    window_flags = parser.add_mutually_exclusive_group()
    window_flags.add_argument("--window", type=int, help="how many campaigns back (default: the file's flake_rate)")
    window_flags.add_argument("--runs", type=int, help="each case's last N runs, in however many campaigns")
    parser.add_argument("--threshold", type=float, help="the flake rate a case may reach (default: the file's)")
    parser.add_argument("--write", type=Path, metavar="FILE", help="write the table into FILE between its markers")
    args = parser.parse_args(argv)
    try:
        campaign = load_campaign(args.campaign)
    except SpecError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    rate, lakes = campaign.flake_rate, args.lake or [DEFAULT_LAKE]
    window, runs = span_of(rate, args.window, args.runs)
    threshold = args.threshold if args.threshold is not None else (rate.threshold if rate else None)
    span = runs if runs is not None else window or 0
    if span < 1 or (threshold is not None and not 0 <= threshold < 1):
        print(f"error: --window and --runs must be >= 1 and --threshold 0 to 1 (excluded), got {span} and "
              f"{threshold}", file=sys.stderr)
        return 3
    ids, items = trends(read_lakes(lakes), campaign.name, window, runs)
    table = markdown_table(ids, items, runs)
    out.write(f"campaign {campaign.name}, {', '.join(map(str, lakes))}:\n{table}")
    if args.write:
        try:
            write_between_markers(args.write, campaign.name, table)
        except (OSError, ValueError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 3
        out.write(f"written into {args.write}\n")
    if threshold is None:
        out.write(f"{args.campaign} sets no flake_rate threshold (nor --threshold): nothing to fail\n")
    bad = over(items, threshold) if threshold is not None else []
    for t in bad:
        out.write(f"FLAKE RATE ABOVE {threshold:.0%}: {t.scenario} [{t.configuration}]: {_rate(t)} over "
                  f"{f'its last {runs} runs' if runs else f'{len(ids)} campaigns'} ({t.letters})\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
