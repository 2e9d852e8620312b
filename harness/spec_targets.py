"""Faults that name workload processes (`txn-coordinator:<process>`, `pause-workload`, `replace-workload`,
`hold-request`), checked against the spec's workloads; producers behind a request-holding proxy (`proxy`).

The nemesis validates a selector's syntax alone; whether `producer-az1-0` is
one of the run's transactional producers depends on the spec's workloads,
named as `harness.workloadset.plan_workloads` names them
(`testbed.journal_names.producer_process`: counted per AZ over the groups in order).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterator, Sequence
from typing import Protocol

from nemesis.fault_spec import TXN_COORDINATOR
from nemesis.schedule import Schedule
from testbed.errors import SpecError
from testbed.journal_names import CONSUMER_RE, producer_process
from testbed.kafka.config import ClusterSettings
from testbed.runtime.kinds import KINDS, kind


class _Producers(Protocol):
    @property
    def azs(self) -> tuple[str, ...]: ...

    @property
    def per_az(self) -> int: ...

    @property
    def transactional(self) -> bool: ...

    @property
    def proxy(self) -> bool: ...


def _planned(producers: Sequence[_Producers]) -> Iterator[tuple[str, _Producers]]:
    """Each producer process's name and its group, in plan order (as `plan_workloads` names them)."""
    counters: dict[str, int] = defaultdict(int)
    for group in producers:
        for az in group.azs:
            for _ in range(group.per_az):
                yield producer_process(az, counters[az]), group
                counters[az] += 1


def proxied_names(producers: Sequence[_Producers]) -> set[str]:
    """The producer processes that run behind a request-holding proxy."""
    return {name for name, group in _planned(producers) if group.proxy}


def check_proxies(schedule: Schedule, producers: Sequence[_Producers], cluster: ClusterSettings) -> ClusterSettings:
    """SpecError for a proxy the runtime cannot run, two in one AZ (the brokers advertise one loopback port each),
    or a `hold-request` on a producer without one; the cluster, with its PROXIED listener if any producer has one."""
    proxied_azs: set[str] = set()
    for i, group in enumerate(producers):
        if not group.proxy:
            continue
        where = f"workloads.producers[{i}].proxy"
        if not kind(cluster.runtime).request_proxy:
            raise SpecError(f"{where}: the {cluster.runtime} runtime cannot run a request-holding proxy (use --runtime "
                            f"{' or '.join(k.name for k in KINDS if k.request_proxy)})")
        if group.per_az > 1 or proxied_azs & set(group.azs):
            raise SpecError(f"{where}: at most one proxied producer per AZ (the brokers advertise one loopback "
                            f"port each, which its proxy owns)")
        proxied_azs |= set(group.azs)
    proxied = proxied_names(producers)
    for i, fault in schedule.faults():
        if fault.fault == "hold-request" and fault.targets[0] not in proxied:
            raise SpecError(f"nemesis[{i}].process: {fault.targets[0]} has no request-holding proxy "
                            f"(proxied producers: {', '.join(sorted(proxied)) or 'none'}; say proxy: true)")
    return dataclasses.replace(cluster, proxied_listener=True) if proxied else cluster


def producer_names(producers: Sequence[_Producers]) -> dict[str, bool]:
    """Each producer process's name -> whether it is transactional, in plan order."""
    return {name: group.transactional for name, group in _planned(producers)}


def check_workload_targets(schedule: Schedule, producers: Sequence[_Producers]) -> None:
    """SpecError naming the fault when a `txn-coordinator:<process>` or a `replace-workload` process is not a
    transactional producer of the spec, or a `pause-workload` process not a producer."""
    names = producer_names(producers)
    for i, fault in schedule.faults():
        if fault.is_workload and CONSUMER_RE.match(fault.targets[0]):
            continue  # a consumer: harness.spec_groups checks it
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
