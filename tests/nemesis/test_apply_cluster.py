"""On a real cluster: every partition shape cuts exactly the traffic it says, and heals completely.

For each shape, probe every ordered pair of hosts (TCP on a neutral port and
on the Kafka and ZooKeeper ports, UDP for direction) and the control plane to
and from every host; compare with what the grudge says; heal; probe again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from nemesis import shapes
from nemesis.firewall import Firewall, apply_grudge, heal, reset
from testbed.addressing import AddressPlan
from testbed.kafka.cluster import KafkaCluster
from testbed.runtime.netns import NetnsRuntime
from tests.nemesis import nemesis_probe as probes

pytestmark = pytest.mark.cluster

Shape = Callable[[AddressPlan], shapes.Grudge]
SHAPES: list[tuple[str, Shape, shapes.Scope]] = [
    ("isolate-az1", lambda p: shapes.isolate_az(p, "az1"), "all"),
    ("cut-link-az1-az2", lambda p: shapes.cut_link(p, "az1", "az2"), "all"),
    ("cut-link-az1-to-az2-one-way", lambda p: shapes.cut_link(p, "az1", "az2", one_way=True), "all"),
    ("split-minority-az3", lambda p: shapes.split_minority(p, ["az3"]), "all"),
    ("bridge-az2", lambda p: shapes.bridge(p), "all"),
    ("majorities-ring", lambda p: shapes.majorities_ring(p), "all"),
    ("node-link-one-way", lambda p: shapes.cut_hosts(["az3-node"], ["az1-node"], one_way=True), "all"),
    ("isolate-az2-kafka", lambda p: shapes.isolate_az(p, "az2"), "kafka"),
    ("isolate-az2-zookeeper", lambda p: shapes.isolate_az(p, "az2"), "zookeeper"),
    ("cut-link-az3-to-az1-one-way-kafka", lambda p: shapes.cut_link(p, "az3", "az1", one_way=True), "kafka"),
]


@pytest.fixture(scope="module")
def network(
    live_cluster: tuple[KafkaCluster, NetnsRuntime],
) -> Iterator[tuple[NetnsRuntime, probes.Listeners]]:
    _, runtime = live_cluster
    listeners = probes.start_listeners(runtime.plan, namespaces(runtime))
    try:
        yield runtime, listeners
    finally:
        listeners.close()
        reset(runtime)


def namespaces(runtime: NetnsRuntime) -> dict[str, str]:
    return {h.name: runtime.namespace(h) for h in runtime.plan.hosts}


def assert_network(
    runtime: NetnsRuntime, listeners: probes.Listeners, cuts: list[tuple[shapes.Grudge, shapes.Scope]]
) -> None:
    found = probes.probe(runtime.plan, namespaces(runtime), listeners)
    want = probes.expected(runtime.plan, cuts, listeners.control_port)
    assert probes.differences(found, want) == []


def test_open_network_before_any_fault(network: tuple[NetnsRuntime, probes.Listeners]) -> None:
    runtime, listeners = network
    assert_network(runtime, listeners, [])


@pytest.mark.parametrize(("name", "shape", "scope"), SHAPES, ids=[s[0] for s in SHAPES])
def test_shape_cuts_exactly_its_grudge_and_heals(
    network: tuple[NetnsRuntime, probes.Listeners], name: str, shape: Shape, scope: shapes.Scope
) -> None:
    runtime, listeners = network
    grudge = shape(runtime.plan)
    try:
        apply_grudge(runtime, grudge, scope)
        assert_network(runtime, listeners, [(grudge, scope)])
    finally:
        heal(runtime)
    assert_network(runtime, listeners, [])
    assert all("DROP" not in saved for saved in iptables_save(runtime).values())


def iptables_save(runtime: NetnsRuntime) -> dict[str, str]:
    return {h.name: runtime.execute(h, ["iptables-save"]).stdout for h in runtime.plan.hosts}


def test_overlapping_cuts_add_and_remove_independently(
    network: tuple[NetnsRuntime, probes.Listeners],
) -> None:
    runtime, listeners = network
    fw = Firewall(runtime)
    iso = shapes.isolate_az(runtime.plan, "az3")
    link = shapes.cut_link(runtime.plan, "az1", "az2", one_way=True)
    try:
        assert fw.add("iso", iso, "kafka") == sorted(shapes.all_hosts(runtime.plan))
        assert fw.add("link", link, "all") == ["az1-client", "az1-node", "az2-client", "az2-node"]
        assert_network(runtime, listeners, [(iso, "kafka"), (link, "all")])
        fw.remove("iso")
        assert_network(runtime, listeners, [(link, "all")])
        assert fw.remove("iso") == []
    finally:
        fw.clear()
    assert_network(runtime, listeners, [])


def test_reset_removes_chains_and_hooks_and_is_idempotent(
    network: tuple[NetnsRuntime, probes.Listeners],
) -> None:
    runtime, listeners = network
    grudge = shapes.isolate_az(runtime.plan, "az1")
    apply_grudge(runtime, grudge)
    reset(runtime)
    reset(runtime)
    assert all("FAULTLINE" not in saved for saved in iptables_save(runtime).values())
    assert_network(runtime, listeners, [])
    apply_grudge(runtime, grudge)  # and rules go in again after a reset
    assert_network(runtime, listeners, [(grudge, "all")])
    heal(runtime)
    heal(runtime)
    assert_network(runtime, listeners, [])


def test_fast_path_notices_changes_behind_its_back(network: tuple[NetnsRuntime, probes.Listeners]) -> None:
    """Rules flushed by someone else, or the channel process killed: the next change is still exact."""
    runtime, listeners = network
    iso1, iso2 = shapes.isolate_az(runtime.plan, "az1"), shapes.isolate_az(runtime.plan, "az2")
    try:
        apply_grudge(runtime, iso1)
        for host in runtime.plan.hosts:
            runtime.execute(host, ["iptables", "-F", "FAULTLINE-IN"])
            runtime.execute(
                host, ["iptables", "-A", "FAULTLINE-OUT", "-d", runtime.plan.control, "-j", "DROP"]
            )
        apply_grudge(runtime, iso1)  # same rules as this channel last installed: must still rewrite
        assert_network(runtime, listeners, [(iso1, "all")])
        for channel in runtime._firewalls._channels.values():
            channel.process.kill()
        apply_grudge(runtime, iso2)
        assert_network(runtime, listeners, [(iso2, "all")])
    finally:
        heal(runtime)
    assert_network(runtime, listeners, [])


def test_apply_and_heal_take_milliseconds(network: tuple[NetnsRuntime, probes.Listeners]) -> None:
    runtime, _ = network
    grudge = shapes.split(runtime.plan, ["az3"], ["az1", "az2"])
    heal(runtime)
    applies, heals = [], []
    for _ in range(5):
        started = time.perf_counter()
        apply_grudge(runtime, grudge)
        applies.append(time.perf_counter() - started)
        started = time.perf_counter()
        heal(runtime)
        heals.append(time.perf_counter() - started)
    assert sorted(applies)[2] < 0.25 and sorted(heals)[2] < 0.25  # generous; the benchmark has the figures
