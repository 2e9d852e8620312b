"""The spec's consumer groups against the rest of it: group protocols and assignors, the broker version, and the
faults that name a group or a consumer process (`group-coordinator:<group>`, `pause-workload` on a consumer).

A member's settings may choose `group.protocol` (`classic`, `consumer`) and `partition.assignment.strategy`
(`range`, `roundrobin`, `cooperative-sticky`, or a comma list of them). Refused, one line naming the key: an
unknown protocol or strategy; `consumer` with a strategy (KIP-848 assigns on the broker: librdkafka refuses
`partition.assignment.strategy` there and points to `group.remote.assignor`); `consumer` on a broker older than
4.0 (`testbed.dist.versions`). A `group-coordinator:<group>` target must name a group of the spec's group
consumers; a `pause-workload` on a consumer must name a consumer of the spec that is not killed on schedule (its
process is then a supervisor whose SIGSTOP would leave the member running).

Must never: start, create or connect to anything.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any, Protocol

from harness.spec_types import fail
from nemesis.fault_spec import GROUP_COORDINATOR
from nemesis.schedule import Schedule
from testbed.dist.versions import release
from testbed.journal_names import CONSUMER_RE, client_process


class ConsumerGroup(Protocol):
    """What these checks read of a `harness.spec_consumers.ConsumerGroup` (which imports this module)."""

    @property
    def azs(self) -> tuple[str, ...]: ...

    @property
    def per_az(self) -> int: ...

    @property
    def mode(self) -> str: ...

    @property
    def group(self) -> str | None: ...

    @property
    def settings(self) -> dict[str, Any]: ...

    @property
    def kill_every_s(self) -> float: ...


GROUP_PROTOCOLS = ("classic", "consumer")
ASSIGNORS = ("range", "roundrobin", "cooperative-sticky")  # librdkafka's client-side assignors (classic protocol)


def check_protocol_settings(where: str, settings: dict[str, Any]) -> None:
    """Refuse an unknown `group.protocol` or assignor, or an assignor with the consumer protocol; `where` is the
    settings' key path (`workloads.consumers[0].settings`)."""
    protocol = str(settings.get("group.protocol", "classic")).strip()
    if protocol not in GROUP_PROTOCOLS:
        raise fail(f"{where}.group.protocol", f"{protocol!r} is not one of {', '.join(GROUP_PROTOCOLS)}")
    if "partition.assignment.strategy" not in settings:
        return
    if protocol == "consumer":
        raise fail(f"{where}.partition.assignment.strategy", "group.protocol consumer (KIP-848) assigns partitions "
                   "on the broker: drop the client-side assignor (librdkafka refuses it there)")
    for strategy in str(settings["partition.assignment.strategy"]).split(","):
        if strategy.strip() not in ASSIGNORS:
            raise fail(f"{where}.partition.assignment.strategy",
                       f"{strategy.strip()!r} is not one of {', '.join(ASSIGNORS)}")


def check_group_protocols(consumers: Sequence[ConsumerGroup], kafka_version: str) -> None:
    """Refuse `group.protocol: consumer` on a broker version that does not run it."""
    allowed = release(kafka_version).group_protocols
    for i, group in enumerate(consumers):
        protocol = str(group.settings.get("group.protocol", "classic")).strip()
        if group.mode == "group" and protocol not in allowed:
            raise fail(f"workloads.consumers[{i}].settings.group.protocol", f"{protocol} (KIP-848) needs Kafka 4.0 "
                       f"or later; this spec runs Kafka {kafka_version}: use classic or a 4.x kafka_version")


def consumer_names(consumers: Sequence[ConsumerGroup]) -> dict[str, ConsumerGroup]:
    """Each consumer process's name -> its group of the spec, as `plan_workloads` names them (per AZ, in order)."""
    counters: dict[str, int] = defaultdict(int)
    names: dict[str, ConsumerGroup] = {}
    for group in consumers:
        for az in group.azs:
            for _ in range(group.per_az):
                names[client_process("consumer", az, counters[az])] = group
                counters[az] += 1
    return names


def check_group_targets(schedule: Schedule, consumers: Sequence[ConsumerGroup]) -> None:
    """SpecError naming the fault when a `group-coordinator:<group>` names no group of the spec's group consumers,
    or a `pause-workload` names a consumer the spec does not run or one killed on schedule."""
    groups = [g.group for g in consumers if g.mode == "group" and g.group is not None]
    names = consumer_names(consumers)
    for i, fault in schedule.faults():
        if fault.is_workload and CONSUMER_RE.match(fault.targets[0]):
            process = fault.targets[0]
            if process not in names:
                raise fail(f"nemesis[{i}].process", f"{process} is not a consumer of this spec (consumers: "
                           f"{', '.join(names) or 'none'})")
            if names[process].kill_every_s > 0:
                raise fail(f"nemesis[{i}].process", f"{process} is killed on schedule (kill_every_s): its process "
                           "is a supervisor, and pausing it would leave the member running")
            continue
        for target in fault.targets:
            group = target.removeprefix(GROUP_COORDINATOR)
            if target.startswith(GROUP_COORDINATOR) and group not in groups:
                raise fail(f"nemesis[{i}].target", f"{target}: {group} is not a consumer group of this spec "
                           f"(groups: {', '.join(dict.fromkeys(groups)) or 'none'})")
