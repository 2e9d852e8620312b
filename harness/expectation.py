"""A scenario configuration's expectation: what its verdict must show, compared with what it showed.

Beside the verdict's counts, `valid` and the observed facts, an expectation can name the mechanism:

- `reason`: a regular expression an expected unknown verdict's reason must match (a stall names its partitions,
  leaders and ISRs), so an unknown for another cause fails the expectation, and with it the campaign's PASS;
- `faults`: the Kafka error a named fault's own request must get (`stray-transactional-produce`'s batch: 48
  INVALID_TXN_STATE when the leader verifies it, NONE when it takes it), so a refusal for another cause (a
  timeout, NOT_LEADER) fails; or, for a disk fault, a kind of call its stop row must count (`counted:
  delayed-fsync`: the slow disk was really in a broker's path, not merely set);
- `logs`: a pattern that must (or must not) appear in the nodes' logs within a window of the run, the window's ends
  a fault's start or stop, or the story's start, give or take seconds. A `precondition` line is the evidence that the
  run hit what it is about (a race window): without it the run is INCONCLUSIVE, neither passed nor failed, unless it
  found an anomaly the expectation forbids (that fails it whatever the window).

What the run showed of its faults and logs comes in as `Evidence` (`harness.evidence` reads the run folder).
Must never: read a run folder or judge a history (it compares a verdict and evidence already made).
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from typing import Any

from checkers.anomalies import ANOMALIES
from nemesis.registry import fault_kind
from nemesis.schedule import Schedule, StartEvent, StopEvent
from testbed.errors import SpecError
from testbed.kafka.txn_wire import ERRORS

KAFKA_ERRORS = {name: code for code, name in ERRORS.items()}  # NONE is 0: the request was taken
_ANCHOR = re.compile(r"(?:(?P<run>run)|(?P<fault>.+)\.(?P<edge>start|stop))(?:\s*(?P<sign>[+-])\s*(?P<s>\d+(?:\.\d*)?))?")
_BROKER = re.compile(r"broker-(\d+)")
SHOWN_LINES = 3  # matching lines an expectation's observed side quotes per pattern


@dataclass(frozen=True)
class Anchor:
    """One end of a log window: a fault's start or stop (`fault` and `edge`), or the story's start (`fault` None),
    moved by `offset_s` seconds."""

    text: str
    fault: str | None = None
    edge: str = "start"
    offset_s: float = 0.0


@dataclass(frozen=True)
class LogEvidence:
    """`expect.logs[i]`: `pattern` must appear (`appears`), or must not, in the logs of `brokers` (every node's when
    empty), in files named `file` (every log file when None), between `start` and `end` (the run's whole log when
    None). A `precondition` not met makes the run inconclusive rather than failed."""

    pattern: str
    brokers: tuple[int, ...] = ()
    file: str | None = None
    start: Anchor | None = None
    end: Anchor | None = None
    appears: bool = True
    precondition: bool = False
    says: str = ""

    @property
    def text(self) -> str:
        where = " or ".join(f"broker-{b}" for b in self.brokers) or "any node"
        window = f" from {self.start.text if self.start else 'the first line'}" \
                 f" to {self.end.text if self.end else 'the last'}" if self.start or self.end else ""
        what = self.says or f"/{self.pattern}/"
        return (f"{'' if self.appears else 'no '}{what} in {where}'s {self.file or 'logs'}{window}"
                + (" (precondition)" if self.precondition else ""))


@dataclass(frozen=True)
class LogFinding:
    """What the logs held for one LogEvidence: how many lines matched in its window, the first few (`node/file:
    line`), or why none could be looked for (`problem`: an anchor that never happened, no logs at all)."""

    count: int = 0
    lines: tuple[str, ...] = ()
    problem: str | None = None


@dataclass(frozen=True)
class Evidence:
    """What a run folder showed beyond its verdict: each named fault's outcome (`status`, `error_code`, `error`;
    None where the fault never started or journaled none), a LogFinding per `expect.logs` entry, in order, and each
    named disk fault's counts (summed over its nodes; None where it never stopped)."""

    faults: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    logs: tuple[LogFinding, ...] = ()
    counts: dict[str, dict[str, int] | None] = field(default_factory=dict)  # a disk fault's stop row, over its nodes


@dataclass(frozen=True)
class Expectation:
    absent: tuple[str, ...] = ()
    present: tuple[str, ...] = ()
    valid: bool | str | None = None  # "unknown": the run must end unjudged
    observed: tuple[str, ...] = ()
    reason: str | None = None  # with valid "unknown": a pattern the unknown verdict's reason must match
    faults: tuple[tuple[str, str], ...] = ()  # (fault name, the Kafka error name its request must get)
    logs: tuple[LogEvidence, ...] = ()
    counted: tuple[tuple[str, str], ...] = ()  # (disk fault name, the kind of call its stop row must count)

    @property
    def empty(self) -> bool:
        return not (self.absent or self.present or self.observed or self.valid is not None or self.faults
                    or self.logs or self.counted)


def parse_expect(raw: dict[str, Any] | None, where: str = "expect", metadata: str | None = None) -> Expectation:
    """The expectation of a spec or configuration, its keys already type-checked (harness.spec_keys.EXPECT); on a
    cluster of `metadata` mode, without the log evidence another mode's (each item is checked all the same)."""
    raw = raw or {}
    absent, present = ([*ANOMALIES] if raw.get(k) == "all" else raw.get(k, []) for k in ("absent", "present"))
    reason = raw.get("reason")
    if reason is not None:
        if raw.get("valid") != "unknown":
            raise SpecError(f"{where}.reason: only with valid: unknown (it is matched against an unknown verdict's "
                            f"reason), got valid: {raw.get('valid')!r}")
        _regex(f"{where}.reason", reason)
    outcomes = raw.get("faults") or {}
    for name, outcome in outcomes.items():
        if ("error" in outcome) == ("counted" in outcome):
            raise SpecError(f"{where}.faults.{name}: one of error (a client fault's answer) and counted (a disk "
                            f"fault's calls), got {', '.join(outcome) or 'neither'}")
    faults = tuple((name, _kafka_error(f"{where}.faults.{name}.error", outcome["error"]))
                   for name, outcome in outcomes.items() if "error" in outcome)
    counted = tuple((name, outcome["counted"]) for name, outcome in outcomes.items() if "counted" in outcome)
    parsed = [(item, _log_evidence(f"{where}.logs[{i}]", item)) for i, item in enumerate(raw.get("logs") or [])]
    logs = tuple(ev for item, ev in parsed if item.get("metadata") in (None, metadata))
    return Expectation(tuple(absent), tuple(present), raw.get("valid"), tuple(raw.get("observed", [])), reason,
                       faults, logs, counted)


def _regex(where: str, pattern: str) -> None:
    """A spec's pattern compiles, and means the same to a later Python: a `[` inside a class, or `--`, `&&`, `~~`, `||`
    there, is refused (Python warns "Possible nested set": set operations may give it another meaning)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        try:
            re.compile(pattern)
        except FutureWarning as exc:
            raise SpecError(f"{where}: {pattern!r} may mean otherwise to a later Python ({exc}): write \\[ for a [ "
                            f"inside [...], and escape a doubled -, &, ~ or | there") from None
        except re.error as exc:
            raise SpecError(f"{where}: {pattern!r} is not a regular expression: {exc}") from None


def _kafka_error(where: str, value: int | str) -> str:
    """A Kafka error name from a name or a code (48 or INVALID_TXN_STATE); SpecError for one Kafka has not."""
    if isinstance(value, int) and value in ERRORS:
        return ERRORS[value]
    if isinstance(value, str) and value in KAFKA_ERRORS:
        return value
    raise SpecError(f"{where}: {value!r} is no Kafka error this harness knows (a code like 48 or a name like "
                    f"INVALID_TXN_STATE; NONE: the request was taken)")


def _anchor(where: str, text: str) -> Anchor:
    match = _ANCHOR.fullmatch(text.strip())
    if match is None:
        raise SpecError(f"{where}: {text!r} is not a moment of the run (`run`, `<fault name>.start` or "
                        f"`<fault name>.stop`, then optionally +/- seconds, e.g. kill-controller.start+5)")
    offset = float(match["s"] or 0) * (-1 if match["sign"] == "-" else 1)
    return Anchor(text.strip(), match["fault"], match["edge"] or "start", offset)


def _log_evidence(where: str, raw: dict[str, Any]) -> LogEvidence:
    _regex(f"{where}.pattern", raw["pattern"])
    nodes = raw.get("nodes", [])
    brokers = []
    for i, node in enumerate([nodes] if isinstance(nodes, str) else nodes):
        match = _BROKER.fullmatch(node)
        if match is None:
            raise SpecError(f"{where}.nodes[{i}]: {node!r} is not a node of the cluster (broker-<id>, e.g. broker-0)")
        brokers.append(int(match[1]))
    start, end = (_anchor(f"{where}.{k}", raw[k]) if k in raw else None for k in ("from", "to"))
    if raw.get("precondition") and raw.get("appears") is False:
        raise SpecError(f"{where}.precondition: a precondition is evidence that must appear (appears: true)")
    return LogEvidence(raw["pattern"], tuple(brokers), raw.get("file"), start, end, raw.get("appears", True),
                       bool(raw.get("precondition", False)), raw.get("says", ""))


def check_names(expect: Expectation, schedule: Schedule, brokers: int, where: str = "expect") -> None:
    """The faults and brokers an expectation names exist in its configuration: each `faults` entry a fault of the
    fixed timeline whose kind journals its request's outcome, each anchor's fault one the timeline starts (and
    stops, for `.stop`), each broker one of the cluster's."""
    starts = {item.name: item.fault.fault for item in schedule.items if isinstance(item, StartEvent)}
    stops = {item.name for item in schedule.items if isinstance(item, StopEvent)}
    for name, _ in expect.faults:
        if name not in starts:
            raise SpecError(f"{where}.faults.{name}: no fault of the nemesis timeline is named {name!r} "
                            f"(named: {', '.join(starts) or 'none'})")
        if fault_kind(starts[name]).outcome is None:
            raise SpecError(f"{where}.faults.{name}: a {starts[name]} fault sends no request of its own, so it has "
                            f"no error to expect")
    for name, _ in expect.counted:
        if name not in starts or name not in stops:
            raise SpecError(f"{where}.faults.{name}: no fault of the nemesis timeline is named {name!r} and stopped "
                            f"(its counts are in its stop row; named: {', '.join(starts) or 'none'})")
        if fault_kind(starts[name]).category != "disk":
            raise SpecError(f"{where}.faults.{name}: a {starts[name]} fault is no disk fault, so it counts no calls")
    for i, ev in enumerate(expect.logs):
        for key, anchor in (("from", ev.start), ("to", ev.end)):
            if anchor is None or anchor.fault is None:
                continue
            if anchor.fault not in starts or (anchor.edge == "stop" and anchor.fault not in stops):
                raise SpecError(f"{where}.logs[{i}].{key}: the nemesis timeline never {anchor.edge}s a fault named "
                                f"{anchor.fault!r} (named: {', '.join(starts) or 'none'})")
        for b in ev.brokers:
            if b >= brokers:
                raise SpecError(f"{where}.logs[{i}].nodes: broker-{b} is not one of the cluster's {brokers} brokers")


def compare(expect: Expectation, verdict: dict[str, Any], facts: dict[str, bool],
            evidence: Evidence | None = None) -> dict[str, Any] | None:
    """Expected against observed for a scenario configuration; None when the spec expects nothing. `mismatches`
    says what the run showed instead of each expectation it missed, `unmet` those expectations in `expected`'s
    words ("no lost", "a verdict"), for the run's one line (report.verdict_view.verdict_line); `inconclusive` the
    preconditions the run never showed (neither passed nor failed)."""
    if expect.empty:
        return None
    evidence = evidence or Evidence()
    counts = verdict.get("counts", {})
    unmet: list[tuple[str, str]] = []  # (what was expected, what the run showed instead)
    unmet += [(f"no {a}", f"{a} = {counts.get(a)} (expected none)") for a in expect.absent if counts.get(a, 0) != 0]
    forbidden = bool(unmet)
    unmet += [(f"{a} > 0", f"{a} = 0 (expected > 0)") for a in expect.present if counts.get(a, 0) == 0]
    unmet += [(fact, f"{fact} not observed") for fact in expect.observed if not facts.get(fact)]
    if expect.valid is not None and verdict.get("valid") != expect.valid:
        unmet.append((f"valid = {expect.valid}", f"valid = {verdict.get('valid')} (expected {expect.valid})"))
    reason = str(verdict.get("reason", "no reason given"))
    if verdict.get("valid") == "unknown" and expect.valid != "unknown":
        unmet.append(("a verdict", f"verdict unknown: {reason}"))
    elif verdict.get("valid") == "unknown" and expect.reason and not re.search(expect.reason, reason):
        unmet.append((f"reason ~ /{expect.reason}/",
                      f"verdict unknown for another reason than /{expect.reason}/: {reason}"))
    observed = [f"{a} = {counts.get(a, 0)}" for a in (*expect.absent, *expect.present)]
    observed += [f"{fact}: {'yes' if facts.get(fact) else 'no'}" for fact in expect.observed]
    observed.append(f"valid = {verdict.get('valid')}")
    for name, error in expect.faults:
        got = fault_error(evidence.faults.get(name))
        observed.append(f"{name}: {got}")
        if got != error:
            unmet.append((f"{name} error {error}", f"{name} got {got} (expected {error})"))
    for name, what in expect.counted:
        counts = evidence.counts.get(name)
        seen = "no stop row (the fault never stopped)" if counts is None else f"{what} {counts.get(what, 0)}"
        observed.append(f"{name}: {seen}")
        if not counts or counts.get(what, 0) <= 0:
            unmet.append((f"{name} counted {what}", f"{name} counted {seen} (expected > 0)"))
    missing: list[tuple[str, str]] = []
    for ev, finding in zip(expect.logs, evidence.logs or [LogFinding(problem="not looked for")] * len(expect.logs),
                           strict=True):
        shown = f"{finding.count} line(s)" + (f", e.g. {finding.lines[0]}" if finding.lines else "")
        observed.append(f"{ev.says or '/' + ev.pattern + '/'}: {finding.problem or shown}")
        if finding.problem is None and (finding.count > 0) == ev.appears:
            continue
        (missing if ev.precondition else unmet).append((ev.text, f"{ev.text}: {finding.problem or shown}"))
    if missing and forbidden:  # an anomaly the expectation forbids fails the run whether or not the window was hit
        unmet += [(wanted, f"precondition not shown: {shown}") for wanted, shown in missing]
        missing = []
    expected = ", ".join([*(f"no {a}" for a in expect.absent), *(f"{a} > 0" for a in expect.present),
                          *expect.observed] + ([f"valid = {expect.valid}"] if expect.valid is not None else [])
                         + ([f"reason ~ /{expect.reason}/"] if expect.reason else [])
                         + [f"{name} error {error}" for name, error in expect.faults]
                         + [f"{name} counted {what}" for name, what in expect.counted] + [ev.text for ev in expect.logs])
    result: dict[str, Any] = {"expected": expected, "observed": ", ".join(observed), "passed": not unmet and not missing,
                              "mismatches": [shown for _, shown in unmet], "unmet": [wanted for wanted, _ in unmet],
                              "facts": facts}
    if missing:
        result["inconclusive"] = [f"precondition not shown: {shown}" for _, shown in missing]
    return result


def fault_error(outcome: dict[str, Any] | None) -> str:
    """The Kafka error name a fault's request got (NONE: taken), or what happened instead (no answer, never sent)."""
    if outcome is None:
        return "no outcome (the fault never started)"
    code = outcome.get("error_code")
    if isinstance(code, int):
        return ERRORS.get(code, f"ERROR_{code}")
    return f"no answer ({outcome.get('error') or 'never sent'})"
