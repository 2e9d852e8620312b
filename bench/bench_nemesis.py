"""Benchmark: how long the nemesis takes to put a partition in place on every host, and to heal it.

Brings up a real cluster (network FAULTLINE_TEST_NETWORK, default
198.18.2.0/24), then for each shape times, `--rounds` times (default 20):
from the call until the call returns with every host's rules installed
(apply), and from the heal call until every host is clear (heal). Two paths:
`firewall` is `nemesis.firewall.apply_grudge` / `heal` (every host rewritten
in parallel); `nemesis` is `Nemesis.start` / `Nemesis.stop` of the same fault
spec, which adds resolving the target from the live cluster (`resolve`: the
part of `apply` spent asking every broker for its view) and journaling.
Also the cold path (hosts without a firewall channel: one iptables-restore
process per host, and the full reset that removes chains and hooks), and
`Nemesis.heal_all`. Prints the median, 90th percentile and maximum in
milliseconds; exits 1 if a median of the firewall or nemesis start/stop
paths is over the 50 ms target (the cold path and heal_all are shown for
information). Needs root.
Takes the cluster down on exit.

    FAULTLINE_ACTIVE=... .venv/bin/python bench/bench_nemesis.py [--rounds 20] [--json out.json]
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from checkers.argparser import ArgumentParser  # noqa: E402
from nemesis import shapes  # noqa: E402
from nemesis.firewall import (  # noqa: E402
    FirewalledRuntime,  # noqa: E402
    apply_grudge,
    heal,
    reset,
)
from nemesis.journal import read_journal  # noqa: E402
from nemesis.nemesis import Nemesis  # noqa: E402
from testbed.kafka.config import ClusterSettings  # noqa: E402
from testbed.lifecycle import provision  # noqa: E402
from testbed.runtime.base import Firewalled  # noqa: E402
from testbed.runtime.kinds import DEFAULT_KIND, KIND_NAMES, default_network  # noqa: E402

TARGET_MS = 50.0
PAUSE_S = 0.1  # between operations, so one does not queue behind the last


def timed(call: Callable[[], Any]) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"median_ms": round(statistics.median(ordered), 2),
            "p90_ms": round(ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))], 2),
            "max_ms": round(ordered[-1], 2), "n": len(ordered)}


def bench_firewall(runtime: FirewalledRuntime, grudge: shapes.Grudge, rounds: int) -> dict[str, Any]:
    applies, heals = [], []
    for _ in range(rounds):
        applies.append(timed(lambda: apply_grudge(runtime, grudge)))
        time.sleep(PAUSE_S)
        heals.append(timed(lambda: heal(runtime)))
        time.sleep(PAUSE_S)
    return {"apply": summary(applies), "heal": summary(heals)}


def bench_nemesis(nemesis: Nemesis, spec: dict[str, Any], rounds: int) -> dict[str, Any]:
    starts, stops, resolves = [], [], []
    for _ in range(rounds):
        started = time.perf_counter()
        active = nemesis.start(spec)
        starts.append((time.perf_counter() - started) * 1000)
        time.sleep(PAUSE_S)
        stops.append(timed(lambda: nemesis.stop(active)))  # noqa: B023 - called at once
        time.sleep(PAUSE_S)
    for row in read_journal(nemesis.journal.path)[-2 * rounds:]:
        if row["type"] == "start" and row["detail"].get("resolve_ms") is not None:
            resolves.append(row["detail"]["resolve_ms"])
    return {"apply": summary(starts), "heal": summary(stops), "resolve": summary(resolves)}


def bench_reset(runtime: FirewalledRuntime, grudge: shapes.Grudge, rounds: int) -> dict[str, Any]:
    """The cold path: rules on hosts without a channel (one-shot restore each), then the full reset."""
    applies, resets = [], []
    for _ in range(rounds):
        applies.append(timed(lambda: apply_grudge(runtime, grudge)))
        time.sleep(PAUSE_S)
        resets.append(timed(lambda: reset(runtime)))
        time.sleep(PAUSE_S)
    return {"apply": summary(applies), "heal": summary(resets)}


def main() -> int:
    parser = ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--runtime", default=DEFAULT_KIND, choices=KIND_NAMES)
    args = parser.parse_args()
    # A range of its own beside a cluster the machine may run (netns), the runtime's own otherwise.
    own = {DEFAULT_KIND: "198.18.2.0/24"}.get(args.runtime, default_network(args.runtime))
    network = os.environ.get("FAULTLINE_TEST_NETWORK", own)
    results: dict[str, Any] = {"rounds": args.rounds, "cpus": os.cpu_count(), "network": network,
                               "runtime": args.runtime}
    with tempfile.TemporaryDirectory() as tmp, \
            provision(ClusterSettings(runtime=args.runtime, network=network), Path(tmp) / "run") as (cluster, runtime):
        assert isinstance(runtime, Firewalled), f"the {runtime.kind} runtime has no firewall"
        plan = runtime.plan
        cases = {"isolate-az": shapes.isolate_az(plan, "az1"),
                 "split majority/minority": shapes.split(plan, ["az1", "az2"], ["az3"])}
        specs = {"isolate-az": {"fault": "isolate-az", "target": "leader"},
                 "split majority/minority": {"fault": "split", "minority": ["controller"]}}
        results["cold isolate-az (one-shot, full reset)"] = bench_reset(runtime, cases["isolate-az"], args.rounds)
        nemesis = Nemesis(cluster, runtime, Path(tmp) / "nemesis.jsonl", seed=1)
        try:
            for name, grudge in cases.items():
                results[f"firewall {name}"] = bench_firewall(runtime, grudge, args.rounds)
                results[f"nemesis {name}"] = bench_nemesis(nemesis, specs[name], args.rounds)
            results["nemesis heal_all (full reset)"] = {
                "heal": summary([timed(nemesis.heal_all) for _ in range(args.rounds)])}
        finally:
            nemesis.heal_all()
            nemesis.close()
    worst = 0.0
    print(f"nemesis benchmark: {args.rounds} rounds, {results['cpus']} CPUs, target median <= {TARGET_MS:.0f} ms")
    print(f"{'case':40} {'op':7} {'median':>8} {'p90':>8} {'max':>8}")
    for case, figures in results.items():
        if not isinstance(figures, dict):
            continue
        for op in ("apply", "resolve", "heal"):
            if op not in figures:
                continue
            f = figures[op]
            if op != "resolve" and case.startswith(("firewall", "nemesis isolate", "nemesis split")):
                worst = max(worst, f["median_ms"])  # the paths a run takes; the rest is for information
            print(f"{case:40} {op:7} {f['median_ms']:8.1f} {f['p90_ms']:8.1f} {f['max_ms']:8.1f}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0 if worst <= TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
