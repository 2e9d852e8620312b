"""When a cluster has settled, and, when it has not, what is still missing, in words an operator can act on.

A cluster has settled when every broker answers, every broker names the same controller, and every broker's
metadata gives the same leader and ISR for each partition of the run's topics, each partition with a leader and a
full ISR. A run waits for this after healing every fault; when it never comes, the verdict is unknown and its reason
ends with `unsettled`'s words (which partitions, which leader, which ISR), so a stall Kafka never recovers from
(for example Kafka 2.7's lost ISR expansion, docs/scenarios.md's eos-pipeline section) is named, not just timed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from testbed.kafka.wire import BrokerView, PartitionView

SHOWN = 4  # partitions named in a reason; the rest are counted


def unsettled(views: Mapping[str, BrokerView | None], topics: Iterable[str], partitions: int, replicas: int) -> str:
    """'' when the views show a settled cluster; else what is missing, in one line."""
    silent = sorted(name for name, view in views.items() if view is None)
    if silent:
        return f"no answer from {', '.join(silent)}"
    answered = {name: view for name, view in views.items() if view is not None}
    controllers = {view.controller for view in answered.values()}
    if None in controllers:
        return "no controller known to " + ", ".join(sorted(n for n, v in answered.items() if v.controller is None))
    if len(controllers) > 1:
        return "the brokers name different controllers: " + ", ".join(
            f"{name} {view.controller}" for name, view in sorted(answered.items()))
    problems: list[str] = []
    for topic in topics:
        for index in range(partitions):
            seen = {name: _find(view, topic, index) for name, view in answered.items()}
            states = {_state(p) for p in seen.values()}
            if len(states) > 1:
                problems.append(f"{topic}-{index} differs between brokers (" + ", ".join(
                    f"{name}: {_describe(p)}" for name, p in sorted(seen.items())) + ")")
                continue
            first = next(iter(seen.values()))
            if first is None or first.leader is None or len(first.isr) != replicas:
                problems.append(f"{topic}-{index} {_describe(first)} of {replicas} replicas")
    if not problems:
        return ""
    more = f"; and {len(problems) - SHOWN} more" if len(problems) > SHOWN else ""
    return "; ".join(problems[:SHOWN]) + more


def _find(view: BrokerView, topic: str, index: int) -> PartitionView | None:
    return next((p for p in view.partitions.get(topic, []) if p.partition == index), None)


def _state(p: PartitionView | None) -> tuple[int | None, tuple[int, ...]] | None:
    return None if p is None else (p.leader, tuple(sorted(p.isr)))


def _describe(p: PartitionView | None) -> str:
    if p is None:
        return "unknown"
    leader = "no leader" if p.leader is None else f"leader {p.leader}"
    return f"{leader}, ISR [{', '.join(str(r) for r in sorted(p.isr))}]"
