"""The nemesis: starts and stops faults on a live cluster, runs schedules, heals everything.

Every start and stop is resolved against the cluster as it is at that moment,
applied, and journaled (the history's `nemesis` table) before the call
returns. `heal_all` is the undo of last resort, meant for every exit path of
a run: it leaves no fault rule, no paused process and no stopped process
behind, whatever happened before (see its docstring). Must never: cut the
control plane, or signal or start anything that is not this cluster's.
"""

from __future__ import annotations

import itertools
import json
import logging
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nemesis.clock_faults import reset_clocks
from nemesis.fault_base import FaultEnv, Injected, WorkloadControl
from nemesis.fault_spec import FaultSpec
from nemesis.faults import start_again
from nemesis.firewall import Firewall, FirewalledRuntime
from nemesis.journal import NemesisJournal, unstopped
from nemesis.registry import fault_for
from nemesis.schedule import HealEvent, Schedule, StartEvent, StopEvent
from nemesis.spec import parse_fault
from nemesis.targets import Resolver, coordinator_finder, group_coordinator_finder, observe
from testbed.errors import FaultError, HarnessError
from testbed.journal_names import HEAL_ALL
from testbed.kafka.cluster import KafkaCluster, NodeRole

log = logging.getLogger("faultline.nemesis")
POLL_S = 0.05


@dataclass(frozen=True)
class ActiveFault:
    """A fault that is in effect: its name, its spec, what it hit, and when it started."""

    name: str
    spec: FaultSpec
    injected: Injected
    started_ns: int

    @property
    def targets(self) -> dict[str, Any]:
        return self.injected.targets


@dataclass
class HealReport:
    """What `heal_all` did: faults it stopped, processes it resumed or restarted, errors it met."""

    stopped: list[str] = field(default_factory=list)
    resumed: list[str] = field(default_factory=list)
    restarted: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    clocks: dict[str, float] = field(default_factory=dict)  # shifted clocks put back to true time: their offsets

    @property
    def changed(self) -> bool:
        return bool(self.stopped or self.resumed or self.restarted or self.errors or self.clocks)


def _ms(since_ns: int) -> float:
    return round((time.time_ns() - since_ns) / 1e6, 2)


class Nemesis:
    def __init__(self, cluster: KafkaCluster, runtime: FirewalledRuntime, journal_path: Path, seed: int,
                 snapshot: Callable[[str], dict[str, Any]] | None = None,
                 workloads: WorkloadControl | None = None) -> None:
        """`snapshot(label)`, when given, runs before each fault is undone (the run keeps the replicas' segments);
        `workloads`, when given, lets workload faults act on the run's workload processes."""
        self.cluster = cluster
        self.snapshot = snapshot
        self._snapshots = itertools.count(1)
        self.seed = seed
        self.rng = random.Random(seed)
        self.firewall = Firewall(runtime)
        cluster.on_power_on.append(self.firewall.restore)  # a node back from a power cut gets the active faults
        self.journal = NemesisJournal(journal_path)
        self.env = FaultEnv(cluster, self.firewall, workloads, self.journal)
        self._active: dict[str, ActiveFault] = {}
        # One fault operation at a time (_ops, held through slow undos); reading what is active never
        # waits for one (_state), so a progress line does not stall behind a graceful stop.
        self._ops = threading.RLock()
        self._state = threading.Lock()
        self._numbers = itertools.count(1)
        self._runs: list[ScheduleRun] = []

    @property
    def active(self) -> list[ActiveFault]:
        with self._state:
            return list(self._active.values())

    def active_names(self) -> list[str]:
        """The names of the faults in effect, oldest first (for progress lines)."""
        with self._state:
            return list(self._active)

    def find(self, name: str) -> ActiveFault | None:
        with self._state:
            return self._active.get(name)

    # -- one fault ---------------------------------------------------------------
    def start(self, fault: FaultSpec | Mapping[str, Any], name: str | None = None,
              **detail: Any) -> ActiveFault:
        """Resolve the fault's targets now, apply it, journal it; FaultError (journaled as info) if it cannot."""
        spec = fault if isinstance(fault, FaultSpec) else parse_fault("fault", fault)
        with self._ops:
            name = name or f"{spec.fault}-{next(self._numbers)}"
            if self.find(name) is not None:
                raise FaultError(f"a fault named {name} is already active")
            resolver = Resolver(self.cluster.plan, self.rng, spec.partition, lambda: observe(self.cluster),
                                coordinator_finder(self.cluster), group_coordinator_finder(self.cluster))
            invoked = time.time_ns()
            info = {"name": name, "spec": spec.to_json(), "invoked_ns": invoked, **detail}
            try:
                injected = fault_for(spec).inject(spec, resolver, self.env, name)
            except HarnessError as exc:
                self._journal_failure(spec, name, info, resolver, exc)
                raise FaultError(f"starting {name} ({spec}): {exc}") from exc
            if resolver.coordinators:
                info["coordinators"] = dict(resolver.coordinators)
            if resolver.group_coordinators:
                info["group_coordinators"] = dict(resolver.group_coordinators)
            info.update(took_ms=_ms(invoked), resolve_ms=resolver.observe_ms,
                        facts=resolver.facts.to_json() if resolver.facts else None, **injected.detail)
            row = self.journal.write("start", injected.fault, injected.targets, info)
            active = ActiveFault(name, spec, injected, row["time_ns"])
            with self._state:
                self._active[name] = active
            log.info("nemesis: started %s: %s %s", name, injected.fault, json.dumps(injected.targets, sort_keys=True))
            return active

    def _journal_failure(self, spec: FaultSpec, name: str, info: dict[str, Any], resolver: Resolver,
                         exc: BaseException) -> None:
        facts = resolver.facts.to_json() if resolver.facts else None
        self.journal.write("info", spec.fault, {}, {**info, "facts": facts, "error": str(exc)})

    def stop(self, active: ActiveFault | str, by: str = "call", **detail: Any) -> None:
        """Undo one active fault and journal it; FaultError (the fault stays active) if the undo fails."""
        with self._ops:
            name = active if isinstance(active, str) else active.name
            current = self.find(name)
            if current is None:
                raise FaultError(f"no active fault named {name}")
            invoked = time.time_ns()
            info = {"name": name, "by": by, "invoked_ns": invoked, **detail}
            if self.snapshot is not None and not current.spec.is_workload:  # the brokers' logs did not change by it
                info["snapshot"] = self._snapshot_before_undo(name)
            try:
                undone = fault_for(current.spec).undo(current.injected, self.env)
            except HarnessError as exc:
                self.journal.write("info", current.injected.fault, current.targets, {**info, "error": str(exc)})
                raise FaultError(f"stopping {name}: {exc}") from exc
            self.journal.write("stop", current.injected.fault, current.targets,
                               {**info, **(undone or {}), "took_ms": _ms(invoked)})
            with self._state:
                del self._active[name]
            log.info("nemesis: stopped %s", name)

    def _snapshot_before_undo(self, name: str) -> dict[str, Any]:
        """What the snapshot copied, or why it could not: the undo goes ahead either way."""
        assert self.snapshot is not None
        label = f"{next(self._snapshots):02d}-{name}"
        started = time.time_ns()
        try:
            return {**self.snapshot(label), "took_ms": _ms(started)}
        except OSError as exc:
            log.warning("nemesis: no snapshot before undoing %s: %s", name, exc)
            return {"label": label, "error": str(exc)}

    def stop_all(self, by: str = "call") -> list[str]:
        """Undo every active fault, newest first; FaultError after trying them all if any failed."""
        stopped, errors = [], []
        with self._ops:
            for active in reversed(self.active):
                try:
                    self.stop(active, by=by)
                    stopped.append(active.name)
                except FaultError as exc:
                    errors.append(str(exc))
        if errors:
            raise FaultError("; ".join(errors))
        return stopped

    # -- everything --------------------------------------------------------------
    def close_orphans(self, by: str) -> list[str]:
        """Journal a `stop` for every fault the journal started and never stopped (a dead harness's), once
        `heal_all` has undone them all; return their names. The checker then sees each fault end here,
        not at the end of the run."""
        names = []
        for row in unstopped(self.journal.path):
            name = row["detail"]["name"]
            self.journal.write("stop", row["fault"], row["targets"], {"name": name, "by": by})
            names.append(name)
        return names

    def heal_all(self, by: str = "heal-all") -> HealReport:
        """Leave the cluster with no fault in effect; idempotent; safe on every exit path.

        In order: cancel any schedule this nemesis runs (so nothing starts a new
        fault behind our back) and wait for it; undo every active fault, newest
        first; then, whatever this object believes, clear every host's firewall, put every
        shifted clock back to true time,
        resume (SIGCONT) every stopped process of the cluster, and start every
        ZooKeeper server and then every broker that is not running, including
        ones that died on their own (journaled as such). A fault whose own undo
        failed is undone by that sweep and journaled as stopped by it. Journals
        one `info` row `heal-all` when it changed anything or `by` names who
        asked (`recover` heals what a dead harness left). Does not wait for
        the cluster to settle. FaultError after trying everything if the sweep
        itself failed (then the cluster may still be faulted).
        """
        current = threading.current_thread()
        for run in self._runs:
            run.cancel()
            if run.thread is not current:
                run.thread.join()
        report = HealReport()
        with self._ops:
            stopped_procs = {p for a in self.active for p in a.injected.processes}
            for active in reversed(self.active):
                try:
                    self.stop(active, by="heal-all")
                    report.stopped.append(active.name)
                except FaultError as exc:  # journaled by stop; the sweep below undoes it anyway
                    log.warning("heal-all: %s", exc)
            try:
                self.firewall.clear()
            except HarnessError as exc:
                report.errors.append(f"clearing firewalls: {exc}")
            try:
                report.clocks = reset_clocks(self.cluster)
            except HarnessError as exc:
                report.errors.append(f"putting clocks back: {exc}")
            self._restore_processes(report, stopped_procs)
            for left in self.active:  # their own undo failed; the sweep above undid them
                self.journal.write("stop", left.injected.fault, left.targets,
                                   {"name": left.name, "by": "heal-all sweep"})
                report.stopped.append(left.name)
            with self._state:
                self._active.clear()
            if report.changed or by != "heal-all":
                self.journal.write("info", HEAL_ALL, {"resumed": report.resumed, "restarted": report.restarted},
                                   {"stopped": report.stopped, "errors": report.errors, "by": by,
                                    **({"clocks": report.clocks} if report.clocks else {})})
        if report.errors:
            raise FaultError("heal-all: " + "; ".join(report.errors))
        return report

    def _restore_processes(self, report: HealReport, by_faults: set[tuple[str, NodeRole]]) -> None:
        cluster = self.cluster
        for node in cluster.nodes:
            for role in cluster.roles:
                if cluster.paused(node, role):
                    try:
                        cluster.resume(node, role)
                        report.resumed.append(cluster.process_name(node, role))
                    except HarnessError as exc:
                        report.errors.append(f"resuming {cluster.process_name(node, role)}: {exc}")
        down = [(node, role) for role in cluster.roles for node in cluster.nodes if cluster.pids(node)[role] is None]
        for node, role in down:
            if (node.name, role) not in by_faults:
                log.warning("heal-all: %s was not running and no fault had stopped it; starting it",
                            cluster.process_name(node, role))
        try:
            start_again(cluster, down)
        except HarnessError as exc:
            report.errors.append(f"starting stopped processes: {exc}")
        report.restarted += [cluster.process_name(n, r) for n, r in down if cluster.pids(n)[r] is not None]

    # -- schedules ----------------------------------------------------------------
    def run(self, schedule: Schedule, t0: float, stop_event: threading.Event) -> ScheduleRun:
        """Run `schedule` in a background thread, event times counted from `t0` (a `time.monotonic()` reading).

        Returns at once. The thread stops after the last event or when
        `stop_event` is set (or `heal_all` is called); it never heals on its
        own, so call `heal_all` afterwards. `ScheduleRun.join()` re-raises the
        thread's exception: a fixed-timeline fault that cannot start fails the
        run; a random-chaos fault that cannot start is journaled and skipped.
        """
        if t0 > time.monotonic() + 86400:
            raise FaultError(f"t0={t0} is not a time.monotonic() reading")
        run = ScheduleRun(self, schedule, t0, stop_event)
        self._runs.append(run)
        run.thread.start()
        return run

    def close(self) -> None:
        self.journal.close()


class ScheduleRun:
    """One schedule running in its own thread; `join` re-raises what went wrong in it."""

    def __init__(self, nemesis: Nemesis, schedule: Schedule, t0: float, stop_event: threading.Event) -> None:
        self.nemesis = nemesis
        self.events = schedule.timeline(nemesis.seed)
        self.t0 = t0
        self.stop_event = stop_event
        self._cancel = threading.Event()
        self.error: BaseException | None = None
        self.fired: list[str] = []
        self.thread = threading.Thread(target=self._main, name="nemesis-schedule", daemon=True)

    def cancel(self) -> None:
        self._cancel.set()

    @property
    def done(self) -> bool:
        return not self.thread.is_alive()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the thread; re-raise its exception. FaultError if it is still running at `timeout`."""
        self.thread.join(timeout)
        if self.thread.is_alive():
            raise FaultError(f"nemesis schedule still running after {timeout} s")
        if self.error is not None:
            raise self.error

    def _stopped(self) -> bool:
        return self.stop_event.is_set() or self._cancel.is_set()

    def _wait_until(self, at: float) -> bool:
        """Sleep until `t0 + at`; False if told to stop first."""
        while not self._stopped():
            remaining = self.t0 + at - time.monotonic()
            if remaining <= 0:
                return True
            self.stop_event.wait(min(remaining, POLL_S))
        return False

    def _main(self) -> None:
        skipped: set[str] = set()
        try:
            if any(isinstance(e, StartEvent) and (e.fault.is_partition or e.fault.is_link) for e in self.events):
                self.nemesis.firewall.prepare()  # so the first partition takes the fast path too
            for event in self.events:
                if not self._wait_until(event.at):
                    return
                late_ms = round((time.monotonic() - self.t0 - event.at) * 1000, 1)
                self._fire(event, skipped, late_ms)
        except BaseException as exc:  # reported to whoever joins
            log.error("nemesis schedule failed: %s", exc)
            self.error = exc

    def _fire(self, event: StartEvent | StopEvent | HealEvent, skipped: set[str], late_ms: float) -> None:
        nemesis = self.nemesis
        if isinstance(event, StartEvent):
            try:
                nemesis.start(event.fault, event.name, at_s=event.at, late_ms=late_ms)
                self.fired.append(f"start {event.name}")
            except FaultError as exc:
                if not event.optional:
                    raise
                log.warning("nemesis: skipped %s: %s", event.name, exc)
                skipped.add(event.name)
        elif isinstance(event, StopEvent):
            if event.name in skipped:
                return
            if nemesis.find(event.name) is None:
                if event.optional:
                    return
                raise FaultError(f"schedule stops {event.name} at {event.at:g} s, but it is not active")
            nemesis.stop(event.name, by="schedule", at_s=event.at, late_ms=late_ms)
            self.fired.append(f"stop {event.name}")
        else:
            nemesis.stop_all(by="schedule")
            self.fired.append("heal all")
