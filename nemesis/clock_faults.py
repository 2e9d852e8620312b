"""Clock faults: the wall clock of chosen Kafka processes is skewed, stepped, or strobed, while the host's stays true.

Every Kafka JVM of a role the spec's clock faults name starts with its wall clock on
an offset file (`cluster.settings.shifted_clocks`; the runtime's `ShiftsClocks`,
testbed.runtime.clocks: libfaketime), at 0. A fault adds its `offset_ms` to the
offset of each process it hits (the `role` of each `target` node: its broker by
default), so faults on one process add up:
- `clock-skew`: from the start to the stop; the stop takes it off again (NTP
  stepping the clock back to true time).
- `clock-jump`: a step at the start that stays: the stop changes nothing, and a
  later jump (often the opposite one) or the run's heal-all moves it again.
- `clock-strobe`: from the start, every 1/`rate` s the offset is added or taken
  off again, in turn (each flip an `info` row); the stop leaves it off.
A running process sees a new offset within `CLOCK_REREAD_S` (2 s); its monotonic
clock never moves. The history's times stay the harness's true clock; each
process's offset after every change is journaled (`offsets` in the start, stop and
flip rows), and heal-all puts every shifted clock back to 0 (`reset_clocks`).

Must never: shift a process that is not the cluster's, or touch this machine's clock.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nemesis.fault_base import FaultEnv, Injected
from nemesis.faults import roles_hit
from testbed.errors import FaultError, RuntimeFailure
from testbed.runtime.base import ShiftsClocks
from testbed.runtime.clocks import CLOCK_REREAD_S, read_offset_ms

if TYPE_CHECKING:
    from nemesis.fault_spec import FaultSpec
    from nemesis.targets import Resolver
    from testbed.addressing import Host
    from testbed.kafka.cluster import KafkaCluster, NodeRole

Proc = tuple["Host", "NodeRole"]
_WRITES = threading.Lock()  # one change of the offset files at a time: a strobe's thread and the schedule's faults


def _runtime(cluster: KafkaCluster, fault: str, roles: tuple[NodeRole, ...] = ()) -> ShiftsClocks:
    runtime = cluster.runtime
    if not isinstance(runtime, ShiftsClocks):
        raise FaultError(f"{fault}: the {runtime.kind} runtime cannot shift a process's clock")
    fixed = [r for r in roles if not cluster.clock_shifted(r)]
    if fixed:
        raise FaultError(f"{fault}: this cluster's {' and '.join(fixed)} processes were started with true clocks "
                         f"(no clock fault of the spec names them); nothing can shift them now")
    return runtime


def shift(cluster: KafkaCluster, procs: list[Proc], delta_ms: float, fault: str) -> dict[str, float]:
    """Add `delta_ms` to each process's offset; each one's offset now (ms), by process name."""
    runtime = _runtime(cluster, fault, tuple({role for _, role in procs}))
    offsets: dict[str, float] = {}
    with _WRITES:
        for node, role in procs:
            path = cluster.clock_offset_file(node, role)
            offset = round(read_offset_ms(path) + delta_ms, 3)
            try:
                runtime.set_clock_offset(node, path, offset)
            except RuntimeFailure as exc:
                raise FaultError(f"{fault}: {exc}") from exc
            offsets[cluster.process_name(node, role)] = offset
    return offsets


def reset_clocks(cluster: KafkaCluster) -> dict[str, float]:
    """Every shifted clock of the cluster back to true time (heal-all's sweep): the offsets they had, by process."""
    if not isinstance(cluster.runtime, ShiftsClocks):
        return {}
    was: dict[str, float] = {}
    with _WRITES:
        for node in cluster.nodes:
            for role in cluster.roles:
                path = cluster.clock_offset_file(node, role)
                offset = read_offset_ms(path) if cluster.clock_shifted(role) else 0
                if offset:
                    cluster.runtime.set_clock_offset(node, path, 0)
                    was[cluster.process_name(node, role)] = offset
    return was


def _hit(spec: FaultSpec, resolver: Resolver, env: FaultEnv) -> tuple[list[Proc], dict[str, Any]]:
    """The processes the fault shifts, and the journal's targets for them."""
    assert spec.clock is not None
    roles = roles_hit(spec, env.cluster)
    _runtime(env.cluster, spec.fault, roles)
    nodes = resolver.nodes(spec.targets)
    procs = [(node, role) for node in nodes for role in roles]
    return procs, {"nodes": [n.name for n in nodes], "brokers": sorted(n.broker_id for n in nodes),
                   "processes": [env.cluster.process_name(n, r) for n, r in procs],
                   "offset_ms": spec.clock.offset_ms}


def _procs_of(injected: Injected, env: FaultEnv) -> list[Proc]:
    return [(env.cluster.plan.host(name), role) for name, role in injected.processes]


class ClockShift:
    """clock-skew (`steps_back`: the stop takes the offset off) and clock-jump (the step stays)."""

    def __init__(self, steps_back: bool) -> None:
        self.steps_back = steps_back
        self._undone: set[tuple[str, str]] = set()  # (run folder, fault name): a second undo changes nothing

    def inject(self, spec: FaultSpec, resolver: Resolver, env: FaultEnv, key: str) -> Injected:
        assert spec.clock is not None
        procs, targets = _hit(spec, resolver, env)
        offsets = shift(env.cluster, procs, spec.clock.offset_ms, spec.fault)
        return Injected(key, spec.fault, targets, {"offsets": offsets, "seen_within_s": CLOCK_REREAD_S},
                        tuple((n.name, r) for n, r in procs))

    def undo(self, injected: Injected, env: FaultEnv) -> dict[str, Any]:
        procs = _procs_of(injected, env)
        if not self.steps_back:  # a step stays; say where the clocks are
            return {"offsets": {env.cluster.process_name(n, r): read_offset_ms(env.cluster.clock_offset_file(n, r))
                                for n, r in procs}}
        undone = (str(env.cluster.run_dir), injected.key)
        if undone in self._undone:
            return {}
        self._undone.add(undone)
        return {"offsets": shift(env.cluster, procs, -injected.targets["offset_ms"], injected.fault)}


@dataclass
class _Strobe:
    procs: list[Proc]
    offset_ms: float
    period_s: float
    stop: threading.Event = field(default_factory=threading.Event)
    shifted: bool = True  # the offset is on now (the start put it on)
    flips: int = 0
    error: BaseException | None = None
    thread: threading.Thread | None = None


class ClockStrobe:
    """clock-strobe: the offset on and off every 1/`rate` s in a thread of its own until the stop."""

    def __init__(self) -> None:
        self._running: dict[str, _Strobe] = {}

    def inject(self, spec: FaultSpec, resolver: Resolver, env: FaultEnv, key: str) -> Injected:
        assert spec.clock is not None
        procs, targets = _hit(spec, resolver, env)
        offsets = shift(env.cluster, procs, spec.clock.offset_ms, spec.fault)
        strobe = _Strobe(procs, spec.clock.offset_ms, 1 / spec.clock.rate)
        targets["rate"] = spec.clock.rate
        strobe.thread = threading.Thread(target=self._flip, args=(strobe, env, key, targets, spec.fault),
                                         name=f"clock-strobe-{key}", daemon=True)
        self._running[key] = strobe
        strobe.thread.start()
        return Injected(key, spec.fault, targets, {"offsets": offsets, "seen_within_s": CLOCK_REREAD_S},
                        tuple((n.name, r) for n, r in procs))

    def _flip(self, strobe: _Strobe, env: FaultEnv, key: str, targets: dict[str, Any], fault: str) -> None:
        try:
            while not strobe.stop.wait(strobe.period_s):
                delta = -strobe.offset_ms if strobe.shifted else strobe.offset_ms
                offsets = shift(env.cluster, strobe.procs, delta, fault)
                strobe.shifted, strobe.flips = not strobe.shifted, strobe.flips + 1
                if env.journal is not None:
                    env.journal.write("info", fault, targets, {"name": key, "flip": strobe.flips, "offsets": offsets})
        except BaseException as exc:  # noqa: BLE001 - re-raised by the stop, as every background worker's
            strobe.error = exc

    def undo(self, injected: Injected, env: FaultEnv) -> dict[str, Any]:
        strobe = self._running.pop(injected.key, None)
        if strobe is None:  # undone already
            return {}
        strobe.stop.set()
        if strobe.thread is not None:
            strobe.thread.join()
        if strobe.error is not None:
            raise FaultError(f"{injected.fault}: a flip failed: {strobe.error}") from strobe.error
        offsets = shift(env.cluster, strobe.procs, -strobe.offset_ms if strobe.shifted else 0, injected.fault)
        return {"offsets": offsets, "flips": strobe.flips}


CLOCK_SKEW = ClockShift(steps_back=True)
CLOCK_JUMP = ClockShift(steps_back=False)
CLOCK_STROBE = ClockStrobe()
