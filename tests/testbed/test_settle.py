"""What a run says when the healed cluster does not settle: testbed.kafka.settle.unsettled on brokers' views."""

from __future__ import annotations

import pytest

from testbed.errors import ClusterError
from testbed.kafka.settle import unsettled
from testbed.kafka.waiting import wait_for
from testbed.kafka.wire import BrokerView, PartitionView

TOPICS = ["faultline", "faultline-in"]


def view(broker: int, isr: dict[tuple[str, int], list[int]] | None = None, controller: int | None = 1,
         leader: dict[tuple[str, int], int | None] | None = None) -> BrokerView:
    """Broker `broker`'s view of a 3-partition, 3-replica cluster: leader = partition index, full ISRs, except
    where `isr` and `leader` say otherwise."""
    isr, leader = isr or {}, leader or {}
    parts = {t: [PartitionView(i, leader.get((t, i), i), 0, [0, 1, 2], isr.get((t, i), [0, 1, 2]), 0)
                 for i in range(3)] for t in TOPICS}
    return BrokerView(broker, controller, {0: "a", 1: "b", 2: "c"}, parts)


def test_a_settled_cluster_has_nothing_missing() -> None:
    views = {f"az{b + 1}-node": view(b) for b in range(3)}
    assert unsettled(views, TOPICS, 3, 3) == ""


def test_a_partition_whose_isr_never_expanded_is_named_with_its_leader_and_isr() -> None:
    # Kafka 2.7's lost ISR expansion (KAFKA-12686): every broker agrees, the leader stays alone in its ISR.
    stuck = {("faultline", 2): [2], ("faultline-in", 1): [1]}
    views = {f"az{b + 1}-node": view(b, stuck) for b in range(3)}
    assert unsettled(views, TOPICS, 3, 3) == \
        "faultline-2 leader 2, ISR [2] of 3 replicas; faultline-in-1 leader 1, ISR [1] of 3 replicas"


def test_brokers_that_disagree_are_each_quoted() -> None:
    views = {"az1-node": view(0, {("faultline", 0): [0, 1]}), "az2-node": view(1), "az3-node": view(2)}
    assert unsettled(views, TOPICS, 3, 3) == ("faultline-0 differs between brokers (az1-node: leader 0, ISR [0, 1], "
                                            "az2-node: leader 0, ISR [0, 1, 2], az3-node: leader 0, ISR [0, 1, 2])")


def test_a_partition_without_a_leader_or_missing_from_the_metadata_is_named() -> None:
    views = {f"az{b + 1}-node": view(b, leader={("faultline", 1): None}) for b in range(3)}
    assert unsettled(views, TOPICS, 3, 3) == "faultline-1 no leader, ISR [0, 1, 2] of 3 replicas"
    assert unsettled(views, ["faultline-in"], 4, 3) == "faultline-in-3 unknown of 3 replicas"


def test_silent_brokers_and_controllers_come_before_partitions() -> None:
    assert unsettled({"az1-node": None, "az2-node": view(1)}, TOPICS, 3, 3) == "no answer from az1-node"
    assert unsettled({"az1-node": view(0, controller=None), "az2-node": view(1)}, TOPICS, 3, 3) == \
        "no controller known to az1-node"
    assert unsettled({"az1-node": view(0, controller=2), "az2-node": view(1)}, TOPICS, 3, 3) == \
        "the brokers name different controllers: az1-node 2, az2-node 1"


def test_a_long_list_is_cut_after_four_partitions() -> None:
    stuck = {(t, i): [i] for t in TOPICS for i in range(3)}
    reason = unsettled({"az1-node": view(0, stuck)}, TOPICS, 3, 3)
    assert reason.count("of 3 replicas") == 4 and reason.endswith("; and 2 more")


def test_the_timeout_names_what_was_still_missing() -> None:
    with pytest.raises(ClusterError) as caught:
        wait_for("the cluster to settle", lambda: None, 0.05, interval=0.01, why=lambda: "faultline-2 leader 2, ISR [2]")
    assert str(caught.value) == "timed out after 0 s waiting for the cluster to settle: faultline-2 leader 2, ISR [2]"
