"""Benchmark (not a test): what journaling costs the producer workload, and how it compares with Kafka's own tool.

On one cluster (3 nodes, topic of 3 partitions, replication 3), from the az1
client host, acks=all and 100-byte values, it measures records per second of:

  (a) the producer workload with its journal (as in a real run),
  (b) the same producer with journaling off (config ``journal_enabled: false``),
  (c) org.apache.kafka.tools.ProducerPerformance (kafka-tools jar), sized to
      run about as long as (b) did.

(a) and (b) run `--duration` seconds each, alternately for `--rounds` rounds,
then get SIGTERM and flush; their rate is acknowledged records over the time
from the first send to the last acknowledgement. Targets (issue 4): (a) at
least 90% of (b) and at least 0.8x (c). On a shared 2-core machine other
work moves these rates a lot, so it also prints the median of the per-round
a/b ratios and each producer's CPU time per record (all its threads), the
view of the journal's cost that contention disturbs least.

    .venv/bin/python bench/bench_workload.py [--duration 15] [--rounds 3]
        [--network 198.18.0.0/24] [--attach RUN_DIR] [--json OUT.json]
        [--transactional 10,100]

`--transactional SIZES` measures instead the transactional producer (contract v2: every send in a
transaction of SIZE sends, committed; journal on) against the non-transactional one, both at acks=all
and journaled, alternately for `--rounds` rounds: (a) not transactional, (t<SIZE>) one per size.

`--attach` reuses a running cluster (made with `python -m harness cluster up`
or `provision(..., keep=True)`) instead of provisioning and removing one.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from checkers.argparser import ArgumentParser
from testbed.addressing import DEFAULT_NETWORK
from testbed.kafka.cluster import KafkaCluster
from testbed.kafka.config import ClusterSettings
from testbed.lifecycle import cluster_from_state, provision
from testbed.runtime.base import Runtime, wait_ended

PERF_CLASS = "org.apache.kafka.tools.ProducerPerformance"
PERF_LINE = re.compile(r"(\d+) records sent, ([\d.]+) records/sec .*?([\d.]+) ms avg latency")
VALUE_SIZE = 100


@contextlib.contextmanager
def cluster_for(args: argparse.Namespace, work: Path) -> Iterator[tuple[KafkaCluster, Runtime]]:
    if args.attach:
        yield cluster_from_state(Path(args.attach))
        return
    settings = ClusterSettings(network=args.network, partitions=3)
    with provision(settings, run_dir=work / "cluster") as (cluster, runtime):
        yield cluster, runtime


def run_producer(cluster: KafkaCluster, runtime: Runtime, work: Path, name: str, journal: bool,
                 duration: float, txn_size: int | None = None) -> dict[str, Any]:
    """Run one producer workload for `duration` s, stop it, and return its summary plus records/s
    (`txn_size`: a transactional producer, every transaction of that many sends committed).

    `work` lies in the run folder where the runtime's hosts keep their own copies (docker, ssh)."""
    host = runtime.plan.client_of_az("az1")
    journal_path = runtime.host_path(host, work / "journal" / f"{name}.jsonl")
    config = {"process": name, "role": "producer", "az": "az1", "journal": journal_path,
              "bootstrap": cluster.bootstrap, "topic": cluster.topic, "partitions": cluster.settings.partitions,
              "rate": 0, "value_size": VALUE_SIZE, "value_prefix": f"{name}-", "journal_enabled": journal,
              "kafka": {"acks": "all"}}
    if txn_size is not None:
        config.update(transactional_id=f"{cluster.runtime.prefix}-{name}", txn_size=txn_size, txn_abort_share=0.0,
                      kafka={"acks": "all", "transaction.timeout.ms": 60000, "delivery.timeout.ms": 30000})
    path = work / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config))
    log = work / f"{name}.log"
    child = runtime.spawn(host, name, [*cluster.software(host).python, "-m", "workloads", runtime.put(host, path)],
                          log)
    time.sleep(duration)
    child.signal(signal.SIGTERM)
    wait_ended([child], 600)
    status = child.exit_status()
    runtime.fetch(host, log)
    summary = next((json.loads(line) for line in reversed(log.read_text().splitlines())
                    if line.startswith("{") and '"role": "producer"' in line), None)
    if status != 0 or summary is None:
        raise SystemExit(f"{name} exited {status}: {log.read_text()[-500:]}")
    summary["records_per_s"] = summary["ok"] / summary["total_s"]
    summary["cpu_us_per_record"] = summary["cpu_s"] / max(summary["ok"], 1) * 1e6
    return summary


def run_perf(cluster: KafkaCluster, runtime: Runtime, records: int, duration: float,
             role: str = "client") -> dict[str, Any]:
    """Run ProducerPerformance for `records` records in az1's client host (or node host: a client container has
    no Java); parse its final line."""
    host = runtime.plan.client_of_az("az1") if role == "client" else runtime.plan.node_of_az("az1")
    software = cluster.software(host)
    argv = [software.java, "-Xmx512m", "-cp", software.kafka_classpath, PERF_CLASS,
            "--topic", cluster.topic, "--num-records", str(records), "--record-size", str(VALUE_SIZE),
            "--throughput", "-1", "--producer-props", f"bootstrap.servers={cluster.bootstrap}", "acks=all"]
    proc = runtime.execute(host, argv, timeout=duration * 20 + 120)
    final = [m for m in PERF_LINE.finditer(proc.stdout)]
    if not final:
        raise SystemExit(f"ProducerPerformance printed no summary: {proc.stdout[-500:]} {proc.stderr[-500:]}")
    sent, rate, latency = final[-1].groups()
    return {"records": int(sent), "records_per_s": float(rate), "avg_latency_ms": float(latency),
            "command": " ".join(argv[:3] + ["<classpath>"] + argv[4:])}


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=15.0, help="seconds per producer run")
    parser.add_argument("--rounds", type=int, default=3, help="alternating (b), (a) rounds")
    parser.add_argument("--network", default=DEFAULT_NETWORK)
    parser.add_argument("--attach", help="run dir of a running cluster to use instead of provisioning one")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--transactional", metavar="SIZES",
                        help="comma-separated transaction sizes: the transactional producer against the plain one")
    args = parser.parse_args(argv)
    if args.transactional:
        return transactional_main(args, [int(n) for n in args.transactional.split(",")])
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="faultline-bench-workload-") as tmp, \
            cluster_for(args, Path(tmp)) as (cluster, runtime):
        work = Path(tmp)
        journaled: list[float] = []
        unjournaled: list[float] = []
        cpu: dict[str, list[float]] = {"a": [], "b": []}
        for i in range(args.rounds):
            b = run_producer(cluster, runtime, work, f"bench-nojournal-{i}", False, args.duration)
            a = run_producer(cluster, runtime, work, f"bench-journal-{i}", True, args.duration)
            unjournaled.append(b["records_per_s"])
            journaled.append(a["records_per_s"])
            cpu["a"].append(a["cpu_us_per_record"])
            cpu["b"].append(b["cpu_us_per_record"])
            print(f"round {i + 1}: (a) journaled {a['records_per_s']:,.0f}/s "
                  f"({a['cpu_us_per_record']:.2f} us CPU/record), (b) journal off {b['records_per_s']:,.0f}/s "
                  f"({b['cpu_us_per_record']:.2f} us CPU/record)", flush=True)
        perf = run_perf(cluster, runtime, int(statistics.median(unjournaled) * args.duration), args.duration)
    a_rate, b_rate, c_rate = statistics.median(journaled), statistics.median(unjournaled), perf["records_per_s"]
    paired = statistics.median(a / b for a, b in zip(journaled, unjournaled, strict=True))
    cpu_ratio = statistics.median(cpu["b"]) / statistics.median(cpu["a"])
    results = {"duration_s": args.duration, "rounds": args.rounds, "value_size": VALUE_SIZE, "acks": "all",
               "a_journaled": a_rate, "b_journal_off": b_rate, "c_producer_performance": c_rate,
               "a_over_b": a_rate / b_rate, "a_over_c": a_rate / c_rate,
               "a_over_b_paired_median": paired, "a_over_b_by_cpu": cpu_ratio,
               "load_average_start": load_start, "load_average_end": os.getloadavg(),
               "a_runs": journaled, "b_runs": unjournaled, "perf": perf,
               "a_cpu_us_per_record": statistics.median(cpu["a"]),
               "b_cpu_us_per_record": statistics.median(cpu["b"])}
    print(f"(a) journaled producer     {a_rate:12,.0f} records/s (median of {args.rounds})")
    print(f"(b) journaling off         {b_rate:12,.0f} records/s")
    print(f"(c) ProducerPerformance    {c_rate:12,.0f} records/s")
    print(f"a/b = {a_rate / b_rate:.2f} (target >= 0.90)   a/c = {a_rate / c_rate:.2f} (target >= 0.80)")
    print(f"producer CPU per record (all its threads): (a) {results['a_cpu_us_per_record']:.2f} us, "
          f"(b) {results['b_cpu_us_per_record']:.2f} us; a/b by CPU {cpu_ratio:.2f}, "
          f"median of per-round a/b {paired:.2f}")
    print(f"load average {load_start[0]:.1f} at start, {os.getloadavg()[0]:.1f} at end "
          f"({os.cpu_count()} CPUs): other work on the machine skews every figure above")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


def transactional_main(args: argparse.Namespace, sizes: list[int]) -> int:
    """(a) the journaled producer at acks=all against (t<N>) the transactional one, N sends per transaction."""
    load_start = os.getloadavg()
    rates: dict[str, list[float]] = {"a": [], **{f"t{n}": [] for n in sizes}}
    commits: dict[str, list[float]] = {f"t{n}": [] for n in sizes}
    with tempfile.TemporaryDirectory(prefix="faultline-bench-txn-") as tmp, \
            cluster_for(args, Path(tmp)) as (cluster, runtime):
        work = Path(tmp)
        for i in range(args.rounds):
            line = [f"round {i + 1}:"]
            a = run_producer(cluster, runtime, work, f"bench-plain-{i}", True, args.duration)
            rates["a"].append(a["records_per_s"])
            line.append(f"(a) {a['records_per_s']:,.0f}/s")
            for n in sizes:
                t = run_producer(cluster, runtime, work, f"bench-txn{n}-{i}", True, args.duration, txn_size=n)
                rates[f"t{n}"].append(t["records_per_s"])
                commits[f"t{n}"].append(t["committed"] / t["total_s"])
                line.append(f"(t{n}) {t['records_per_s']:,.0f}/s, {t['committed'] / t['total_s']:,.1f} commits/s")
            print(" ".join(line), flush=True)
    medians = {k: statistics.median(v) for k, v in rates.items()}
    results = {"duration_s": args.duration, "rounds": args.rounds, "value_size": VALUE_SIZE, "acks": "all",
               "records_per_s": medians, "runs": rates,
               "commits_per_s": {k: statistics.median(v) for k, v in commits.items()},
               "load_average_start": load_start, "load_average_end": os.getloadavg()}
    print(f"(a) not transactional        {medians['a']:12,.0f} records/s (median of {args.rounds})")
    for n in sizes:
        print(f"(t{n}) {n} sends per transaction {medians[f't{n}']:12,.0f} records/s "
              f"({medians[f't{n}'] / medians['a']:.2f} of (a)), {results['commits_per_s'][f't{n}']:,.1f} commits/s")
    print(f"load average {load_start[0]:.1f} at start, {os.getloadavg()[0]:.1f} at end ({os.cpu_count()} CPUs)")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
