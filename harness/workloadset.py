"""The run's client processes: which ones, where, with what config; start, watch, stop.

A workload process that dies while it should be running fails the run loudly
(WorkloadError with the tail of its log); it never just shrinks the history.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.spec import Spec
from testbed.addressing import Host
from testbed.errors import WorkloadError
from testbed.kafka import config as kcfg
from testbed.kafka.cluster import KafkaCluster, log_tail
from testbed.runtime.netns import NetnsRuntime
from testbed.runtime.procs import is_alive, run_of, wait_dead

DRAIN_INCOMPLETE = 2  # workloads.exits.DRAIN_INCOMPLETE


@dataclass
class Workload:
    name: str
    role: str
    host: Host
    config: dict[str, Any]
    pid: int | None = None


def plan_workloads(spec: Spec, cluster: KafkaCluster, journal_dir: Path) -> list[Workload]:
    """Every producer, consumer and observer of the run, with its config (drains come later)."""
    plan = cluster.plan
    base = {"topic": cluster.topic, "bootstrap": cluster.bootstrap}
    out: list[Workload] = []
    counters: dict[tuple[str, str], int] = defaultdict(int)

    def name_for(role: str, az: str) -> str:
        n = counters[(role, az)]
        counters[(role, az)] += 1
        return f"{role}-{az}-{n}"

    for group in spec.producers:
        for az in group.azs:
            for _ in range(group.per_az):
                name = name_for("producer", az)
                config = {**base, "process": name, "role": "producer", "az": az,
                          "journal": str(journal_dir / f"{name}.jsonl"), "partitions": cluster.settings.partitions,
                          "rate": group.rate, "value_prefix": f"{name}-", "kafka": group.settings}
                if group.value_bytes:
                    config["value_size"] = group.value_bytes
                out.append(Workload(name, "producer", plan.client_of_az(az), config))
    for cgroup in spec.consumers:
        for az in cgroup.azs:
            for _ in range(cgroup.per_az):
                name = name_for("consumer", az)
                config = {**base, "process": name, "role": "consumer", "az": az, "mode": cgroup.mode,
                          "journal": str(journal_dir / f"{name}.jsonl"), "partitions": cluster.settings.partitions}
                if cgroup.mode == "group":
                    config.update(group=cgroup.group, commit=cgroup.commit)
                out.append(Workload(name, "consumer", plan.client_of_az(az), config))
    for node in cluster.nodes:
        name = f"observer-broker-{node.broker_id}"
        out.append(Workload(name, "observer", node, {
            "process": name, "role": "observer", "az": node.az, "topic": cluster.topic,
            "journal": str(journal_dir / f"{name}.jsonl"), "broker_id": node.broker_id,
            "broker_address": f"{node.address}:{kcfg.BROKER_PORT}", "interval_s": 1.0}))
    return out


def drain_workloads(cluster: KafkaCluster, journal_dir: Path, timeout_s: float, suffix: str = "") -> list[Workload]:
    """One fresh fixed-assignment reader per AZ, from the earliest offset to the high watermark."""
    return [Workload(f"drain-{host.az}{suffix}", "drain", host, {
        "process": f"drain-{host.az}{suffix}", "role": "drain", "az": host.az, "topic": cluster.topic,
        "bootstrap": cluster.bootstrap, "journal": str(journal_dir / f"drain-{host.az}{suffix}.jsonl"),
        "partitions": cluster.settings.partitions, "timeout_s": timeout_s}) for host in cluster.plan.clients]


class WorkloadSet:
    """Starts workload processes through the runtime and holds them to account."""

    def __init__(self, runtime: NetnsRuntime, run_dir: Path) -> None:
        self.runtime = runtime
        self.run_dir = run_dir
        self.running: dict[str, Workload] = {}

    def log_path(self, name: str) -> Path:
        return self.run_dir / "logs" / f"{name}.log"

    def start(self, workloads: list[Workload]) -> None:
        config_dir = self.run_dir / "workloads"
        config_dir.mkdir(parents=True, exist_ok=True)
        for w in workloads:
            path = config_dir / f"{w.name}.json"
            path.write_text(json.dumps(w.config, indent=2, sort_keys=True) + "\n")
            child = self.runtime.spawn(w.host, f"workload/{w.name}", [sys.executable, "-m", "workloads", str(path)],
                                       self.log_path(w.name))
            w.pid = child.pid
            self.running[w.name] = w

    def check_alive(self) -> None:
        """Raise WorkloadError if any process that should be running has exited."""
        for w in self.running.values():
            if w.pid is not None and not (is_alive(w.pid) and run_of(w.pid) == self.runtime.prefix):
                raise WorkloadError(f"workload {w.name} died mid-run: {self.tail(w.name)}")

    def tail(self, name: str) -> str:
        return log_tail(self.log_path(name), lines=2)

    def stop(self, role: str, timeout: float) -> None:
        """SIGTERM every process of `role`, wait for a clean exit; one that does not exit in time is a failure."""
        victims = [w for w in self.running.values() if w.role == role and w.pid is not None]
        for w in victims:
            assert w.pid is not None
            self.runtime.signal(w.pid, signal.SIGTERM)
        stuck = wait_dead([w.pid for w in victims if w.pid is not None], timeout)
        for w in victims:
            self.running.pop(w.name, None)
        if stuck:
            for pid in stuck:
                self.runtime.signal(pid, signal.SIGKILL)
            names = [w.name for w in victims if w.pid in stuck]
            raise WorkloadError(f"workloads {', '.join(names)} did not stop within {timeout:.0f} s of SIGTERM")
        self._check_exit_codes(victims, ok=(0,))

    def _check_exit_codes(self, finished: list[Workload], ok: tuple[int, ...]) -> dict[str, int]:
        codes = {}
        for w in finished:
            child = next((c for c in self.runtime.children if c.pid == w.pid), None)
            code = child.wait(timeout=5) if child is not None else 0
            codes[w.name] = code
            if code not in ok:
                raise WorkloadError(f"workload {w.name} exited with status {code}: {self.tail(w.name)}")
        return codes

    def run_to_completion(self, workloads: list[Workload], timeout: float) -> dict[str, int]:
        """Start `workloads` (drains), wait for each to exit by itself; return exit codes."""
        self.start(workloads)
        deadline = time.monotonic() + timeout
        pids = [w.pid for w in workloads if w.pid is not None]
        stuck = wait_dead(pids, max(0.0, deadline - time.monotonic()))
        for pid in stuck:
            self.runtime.signal(pid, signal.SIGKILL)
        wait_dead(stuck, 10)
        for w in workloads:
            self.running.pop(w.name, None)
        codes = self._check_exit_codes(workloads, ok=(0, DRAIN_INCOMPLETE, -signal.SIGKILL))
        return codes
