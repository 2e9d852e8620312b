"""Where a Spark check's seconds go (not a test): one process, as `python -m checkers --engine spark` runs.

Times the steps of one process (Spark session start, each check: the first one cold, then
``--warm`` more), with Spark's event log on, then reads the log back: per check, its jobs, and the
stages that took longest (wall time, executors' run and CPU time, GC, tasks); and the JVM's own
counters (process CPU time, JIT compilation time, GC time, classes loaded).

    .venv/bin/python bench/profile_checker.py HISTORY_DIR [--warm 1] [--top 12] [--java="-XX:..."] [--conf K=V]

Run it under the heavy lock (it starts Spark). The event log lives in a temporary folder, removed at exit.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from checkers import spark_session as ss  # noqa: E402
from checkers.argparser import ArgumentParser  # noqa: E402


def _cpu_seconds(pid: int | None) -> float:
    """User + system CPU seconds of process ``pid`` (from /proc), 0 if unknown."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def jvm_counters(spark: Any) -> dict[str, float]:
    """The JVM's CPU time, JIT compilation time, GC time (seconds) and classes loaded, through py4j."""
    mf = spark.sparkContext._jvm.java.lang.management.ManagementFactory
    gc = sum(b.getCollectionTime() for b in mf.getGarbageCollectorMXBeans())
    return {
        "cpu_s": _cpu_seconds(ss.jvm_pid()),
        "jit_s": mf.getCompilationMXBean().getTotalCompilationTime() / 1e3,
        "gc_s": gc / 1e3,
        "classes": mf.getClassLoadingMXBean().getTotalLoadedClassCount(),
        "uptime_s": mf.getRuntimeMXBean().getUptime() / 1e3,
    }


def _operators(info: dict[str, Any]) -> str:
    """The operators a stage runs (its RDDs' scopes: Exchange, HashAggregate, BroadcastExchange, ...)."""
    names = []
    for rdd in info.get("RDD Info", []):
        scope = json.loads(rdd.get("Scope") or "{}").get("name", "")
        name = scope.split(" (")[0]
        if name and name not in names and not name.startswith("WholeStageCodegen"):
            names.append(name)
    return ", ".join(reversed(names)) or info["Stage Name"].split(" at ")[0]


def stage_table(log: Path, windows: list[tuple[str, float, float]], top: int, timeline: bool = False) -> None:
    """Per check window (wall-clock ms), its jobs and longest stages, from the event log."""
    stages, jobs = [], []
    files = sorted(f for f in log.iterdir() if f.name.startswith("events")) if log.is_dir() else [log]
    for line in (line for f in files for line in f.read_text().splitlines()):
        event = json.loads(line)
        kind = event["Event"]
        if kind == "SparkListenerStageCompleted":
            info = event["Stage Info"]
            acc = {a["Name"]: a.get("Value", 0) for a in info.get("Accumulables", [])}
            stages.append({
                "id": info["Stage ID"], "name": _operators(info), "site": info["Stage Name"],
                "start": info.get("Submission Time", 0) / 1e3, "end": info.get("Completion Time", 0) / 1e3,
                "tasks": info["Number of Tasks"],
                "run_s": int(acc.get("internal.metrics.executorRunTime", 0)) / 1e3,
                "cpu_s": int(acc.get("internal.metrics.executorCpuTime", 0)) / 1e9,
                "gc_s": int(acc.get("internal.metrics.jvmGCTime", 0)) / 1e3,
            })
        elif kind == "SparkListenerJobEnd":
            jobs.append(event["Completion Time"] / 1e3)
    for label, start, end in windows:
        inside = [s for s in stages if start <= s["start"] <= end]
        n_jobs = sum(1 for t in jobs if start <= t <= end)
        busy = sum(s["run_s"] for s in inside)
        cpu = sum(s["cpu_s"] for s in inside)
        print(f"\n{label}: {end - start:.1f} s wall, {n_jobs} jobs, {len(inside)} stages, "
              f"executors run {busy:.1f} s (CPU {cpu:.1f} s, GC {sum(s['gc_s'] for s in inside):.1f} s)")
        order = (lambda s: s["start"]) if timeline else (lambda s: s["start"] - s["end"])
        for s in sorted(inside, key=order)[: len(inside) if timeline else top]:
            at = f"{s['start'] - start:6.2f}-{s['end'] - start:6.2f}  " if timeline else ""
            print(f"  {at}stage {s['id']:>4} {s['end'] - s['start']:6.2f} s  run {s['run_s']:6.2f} s  "
                  f"cpu {s['cpu_s']:6.2f} s  gc {s['gc_s']:5.2f} s  tasks {s['tasks']:>3}  {s['name']}"
                  + (f"  [{s['site']}]" if timeline else ""))


def main() -> None:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("history_dir", type=Path)
    parser.add_argument("--warm", type=int, default=1, help="checks after the first (cold) one")
    parser.add_argument("--top", type=int, default=12, help="longest stages shown per check")
    parser.add_argument("--timeline", action="store_true", help="every stage, by start (seconds into the check)")
    parser.add_argument("--conf", action="append", default=[], help="KEY=VALUE: a Spark setting to try (repeatable)")
    parser.add_argument("--java", default="", help="JVM options to try, added to the driver's")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="faultline-eventlog-") as logs:  # removed on every exit path
        profile(args, Path(logs))


def profile(args: Any, logs: Path) -> None:
    """Run the checks of ``args`` with Spark's event log in ``logs``, then print the tables."""
    started = time.time()
    base = ss.settings

    def with_log(master: str) -> dict[str, str]:
        conf = {**base(master), "spark.eventLog.enabled": "true", "spark.eventLog.dir": f"file://{logs}",
                "spark.eventLog.compress": "false", "spark.eventLog.rolling.enabled": "false"}
        conf["spark.driver.extraJavaOptions"] += f" {args.java}"
        return conf | dict(kv.split("=", 1) for kv in args.conf)

    ss.settings = with_log  # type: ignore[assignment]
    from checkers.api import check

    t = time.time()
    spark = ss.spark_session()
    print("driver JVM options:", spark.conf.get("spark.driver.extraJavaOptions"))
    print(f"python start to session: {t - started:.1f} s + session start {time.time() - t:.1f} s")
    print("JVM after start:", jvm_counters(spark))
    windows = []
    try:
        for i in range(1 + args.warm):
            t = time.time()
            verdict = check(args.history_dir, engine="spark")
            label = "cold check" if i == 0 else f"warm check {i}"
            windows.append((label, t, time.time()))
            counts = {k: n for k, n in verdict["counts"].items() if n}
            print(f"{label}: {time.time() - t:.1f} s  {counts}")
            print("  JVM:", jvm_counters(spark))
    finally:
        ss.stop_session()  # writes the event log out
    print(f"whole: {time.time() - started:.1f} s")
    (log,) = logs.iterdir()
    stage_table(log, windows, args.top, args.timeline)


if __name__ == "__main__":
    main()
