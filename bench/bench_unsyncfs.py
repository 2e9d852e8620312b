"""Benchmark (not a test): what unsyncfs under the nodes' data directories costs producer throughput.

Two clusters one after the other (3 nodes, 3 partitions, replication 3), the
first with every node's data directories on unsyncfs (as every netns run has
them), the second without (`lose_unsynced_writes: false`). On each, from the
az1 client host with acks=all and 100-byte values, `--rounds` runs of
  (a) the producer workload with its journal (as in a real run), `--duration` s,
  (c) org.apache.kafka.tools.ProducerPerformance, unthrottled, `--records` records.
Target (issue 16): with unsyncfs at least 0.7x the throughput without it; on docker (issue 27) no more
costly than on netns. On docker ProducerPerformance runs in az1's node container (`--perf-host node`:
a client container has no Java).

    .venv/bin/python bench/bench_unsyncfs.py [--runtime netns|docker] [--duration 15] [--rounds 2]
        [--records 300000] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_workload import run_perf, run_producer  # noqa: E402

from testbed.kafka.config import ClusterSettings  # noqa: E402
from testbed.lifecycle import provision  # noqa: E402
from testbed.runtime import unsynced  # noqa: E402
from testbed.runtime.kinds import KIND_NAMES, default_network  # noqa: E402


def measure(on: bool, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    settings = ClusterSettings(runtime=args.runtime, network=args.network or default_network(args.runtime),
                               partitions=3, lose_unsynced_writes=on)
    label = "unsyncfs" if on else "plain"
    workload, perf = [], []
    with provision(settings, run_dir=work / label) as (cluster, runtime):
        mounts = len([s for s in unsynced.mounted().values() if s.startswith(runtime.prefix)])
        assert mounts == (2 * len(cluster.nodes) if on else 0), f"{label}: {mounts} unsyncfs mounts"
        for i in range(args.rounds):
            a = run_producer(cluster, runtime, cluster.run_dir / "bench", f"bench-{label}-{i}", True, args.duration)
            c = run_perf(cluster, runtime, args.records, args.duration, args.perf_host)
            workload.append(a["records_per_s"])
            perf.append(c["records_per_s"])
            print(f"{label} round {i + 1}: producer workload {a['records_per_s']:,.0f}/s, "
                  f"ProducerPerformance {c['records_per_s']:,.0f}/s ({c['avg_latency_ms']:.1f} ms avg latency)",
                  flush=True)
    return {"mounts": mounts, "workload_runs": workload, "perf_runs": perf,
            "workload": statistics.median(workload), "perf": statistics.median(perf)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=15.0, help="seconds per producer workload run")
    parser.add_argument("--records", type=int, default=300000, help="records per ProducerPerformance run")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--runtime", choices=KIND_NAMES[:2], default="netns")
    parser.add_argument("--network", help="default: the runtime's own")
    parser.add_argument("--perf-host", choices=("client", "node"), default="client",
                        help="where ProducerPerformance runs: az1's client host, or its node host (docker: a client "
                             "container has no Java)")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args(argv)
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="faultline-bench-unsyncfs-") as tmp:
        on = measure(True, args, Path(tmp))
        off = measure(False, args, Path(tmp))
    results = {"unsyncfs": on, "plain": off, "workload_ratio": on["workload"] / off["workload"],
               "perf_ratio": on["perf"] / off["perf"], "load_average_start": load_start,
               "load_average_end": os.getloadavg(), "cpus": os.cpu_count(), "runtime": args.runtime}
    print(f"producer workload:   {on['workload']:10,.0f}/s on unsyncfs, {off['workload']:10,.0f}/s without: "
          f"{results['workload_ratio']:.2f}x (target >= 0.70)")
    print(f"ProducerPerformance: {on['perf']:10,.0f}/s on unsyncfs, {off['perf']:10,.0f}/s without: "
          f"{results['perf_ratio']:.2f}x")
    print(f"load average {load_start[0]:.1f} at start, {os.getloadavg()[0]:.1f} at end ({os.cpu_count()} CPUs)")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
