"""Faults that name workload processes (`txn-coordinator:<process>`, `pause-workload`, `replace-workload`),
checked against the spec's workloads.

The nemesis validates a selector's syntax alone; whether `producer-az1-0` is
one of the run's transactional producers depends on the spec's workloads,
named as `harness.workloadset.plan_workloads` names them (`<role>-<az>-<n>`,
counted per AZ over the groups in order).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Protocol

from nemesis.schedule import RandomChaos, Schedule, StartEvent
from nemesis.spec import TXN_COORDINATOR
from testbed.errors import SpecError


class _Producers(Protocol):
    @property
    def azs(self) -> tuple[str, ...]: ...

    @property
    def per_az(self) -> int: ...

    @property
    def transactional(self) -> bool: ...


def producer_names(producers: Sequence[_Producers]) -> dict[str, bool]:
    """Each producer process's name -> whether it is transactional, in plan order."""
    counters: dict[str, int] = defaultdict(int)
    names: dict[str, bool] = {}
    for group in producers:
        for az in group.azs:
            for _ in range(group.per_az):
                names[f"producer-{az}-{counters[az]}"] = group.transactional
                counters[az] += 1
    return names


def check_workload_targets(schedule: Schedule, producers: Sequence[_Producers]) -> None:
    """SpecError naming the fault when a `txn-coordinator:<process>` or a `replace-workload` process is not a
    transactional producer of the spec, or a `pause-workload` process not a producer."""
    names = producer_names(producers)
    for i, item in enumerate(schedule.items):
        faults = item.faults if isinstance(item, RandomChaos) else (item.fault,) if isinstance(item, StartEvent) else ()
        for fault in faults:
            if fault.is_workload:
                _check_process(f"nemesis[{i}].process", fault.fault, fault.targets[0], names)
                continue
            for target in fault.targets:
                process = target.removeprefix(TXN_COORDINATOR)
                if target.startswith(TXN_COORDINATOR) and not names.get(process):
                    what = "not transactional" if process in names else "not a producer of this spec"
                    raise SpecError(f"nemesis[{i}].fault: {target}: {process} is {what} "
                                    f"(transactional producers: {', '.join(n for n, t in names.items() if t) or 'none'})")


def _check_process(path: str, kind: str, process: str, names: dict[str, bool]) -> None:
    if process not in names:
        raise SpecError(f"{path}: {process} is not a producer of this spec (producers: {', '.join(names) or 'none'})")
    if kind == "replace-workload" and not names[process]:
        raise SpecError(f"{path}: {process} is not transactional: a replacement fences nothing without a "
                        f"transactional.id (transactional: true)")
