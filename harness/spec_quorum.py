"""The spec's checks of a KRaft quorum's membership changes (KIP-853): the dynamic quorum against the cluster, and
the `remove-controller` / `add-controller` faults against the quorum and against each other, in schedule order.

The voters are followed through the schedule's starts by time: every node's controller at first; a removal by
node (`az2`, `broker-1`) takes that node's out, one by a selector resolved when it fires (`controller`, the active
one) takes an unknown one out (the count is still known). Refused, each in one line naming the event: a change on
ZooKeeper or on a static quorum, removing the last voter, adding a voter that is one already (by node, or the
active controller), a change drawn by random chaos (its order is the point). What only the cluster can say (which
node `controller` is) the fault itself checks when it starts.

Must never: start, create or connect to anything.
"""

from __future__ import annotations

import re

from harness.spec_types import fail
from nemesis.schedule import Schedule, StartEvent
from testbed.dist.versions import parse
from testbed.kafka.config import ClusterSettings

CHANGES = ("remove-controller", "add-controller")
DYNAMIC_SINCE = (3, 9)
_NODE = re.compile(r"^(?:az([1-9])(?:-node)?|broker-([0-8]))$")


def node_of(selector: str) -> int | None:
    """The broker id a selector names whatever the cluster's state (an AZ, a node, a broker); None otherwise."""
    found = _NODE.match(selector)
    if found is None:
        return None
    return int(found[1]) - 1 if found[1] else int(found[2])


def check_dynamic_quorum(cluster: ClusterSettings) -> None:
    """Refuse `kraft_quorum: dynamic` where it cannot be: ZooKeeper, before 3.9, combined nodes."""
    if cluster.kraft_quorum != "dynamic":
        return
    if not cluster.kraft:
        raise fail("cluster.kraft_quorum", "dynamic: a dynamic controller quorum is KRaft's (KIP-853); this cluster "
                   "runs metadata zookeeper")
    if parse(cluster.kafka_version) < DYNAMIC_SINCE:
        raise fail("cluster.kraft_quorum", f"dynamic: needs Kafka 3.9 or later (KIP-853); this spec runs "
                   f"{cluster.kafka_version}")
    if cluster.kraft_controllers != "separate":
        raise fail("cluster.kraft_quorum", "dynamic: built for separate controllers only (add-controller formats "
                   "a controller's metadata directory afresh, which a combined node shares with its broker)")


def check_quorum_changes(schedule: Schedule, cluster: ClusterSettings) -> None:
    """Refuse the membership changes the cluster or the voters at that point cannot take (module docstring)."""
    check_dynamic_quorum(cluster)
    starts = sorted(((item.at, i, item) for i, item in enumerate(schedule.items)
                     if isinstance(item, StartEvent) and item.fault.fault in CHANGES), key=lambda t: (t[0], t[1]))
    drawn = [i for i, f in schedule.faults() if f.fault in CHANGES and not isinstance(schedule.items[i], StartEvent)]
    if drawn:
        raise fail(f"nemesis[{drawn[0]}].faults", "remove-controller and add-controller cannot be drawn by random "
                   "chaos: the voters they leave depend on their order; schedule them")
    if starts and cluster.kraft_quorum != "dynamic":
        where, kind = f"nemesis[{starts[0][1]}].fault", starts[0][2].fault.fault
        if not cluster.kraft:
            raise fail(where, f"{kind}: a ZooKeeper-mode cluster has no KRaft controller quorum")
        raise fail(where, f"{kind}: the quorum is static (controller.quorum.voters); set cluster.kraft_quorum: "
                   "dynamic")
    voters, count, known = set(range(cluster.nodes)), cluster.nodes, True
    for _, i, event in starts:
        fault = event.fault
        where = f"nemesis[{i}].target"
        node = node_of(fault.targets[0]) if fault.targets else None
        if fault.fault == "remove-controller":
            if count == 1:
                raise fail(where, f"remove-controller at {event.at:g} s would remove the last controller voter "
                           "(a quorum needs one)")
            if node is not None and known and node not in voters:
                raise fail(where, f"remove-controller at {event.at:g} s: broker {node}'s controller is not a voter "
                           "then (removed before)")
            count -= 1
            known = known and node is not None
            voters.discard(node if node is not None else -1)
            continue
        if count == cluster.nodes:
            raise fail(where if fault.targets else f"nemesis[{i}].fault", f"add-controller at {event.at:g} s: every "
                       "node's controller is a voter then (adding an existing voter)")
        if fault.targets and fault.targets[0] == "controller":
            raise fail(where, "add-controller: target controller is the active controller, a voter already")
        if node is not None and known and node in voters:
            raise fail(where, f"add-controller at {event.at:g} s: broker {node}'s controller is a voter then "
                       "(adding an existing voter)")
        if not fault.targets and known:
            outside = sorted(set(range(cluster.nodes)) - voters)
            if len(outside) > 1:
                raise fail(f"nemesis[{i}].fault", f"add-controller at {event.at:g} s: no target, and the controllers "
                           f"of brokers {outside} are not voters then; name one with target")
            node = outside[0]
        count += 1
        known = known and node is not None
        voters.add(node if node is not None else -1)
