"""The partition shapes and their firewall rules, as pure functions (no cluster, no root)."""

from __future__ import annotations

import itertools

import pytest

from nemesis import shapes
from testbed.addressing import make_plan

PLAN = make_plan("198.18.2.0/24", 3)
PLAN5 = make_plan("198.18.2.0/24", 5)
H = sorted(shapes.all_hosts(PLAN))


def az_hosts(*names: str) -> set[str]:
    return {f"{az}-{role}" for az in names for role in ("node", "client")}


def cut_set(grudge: shapes.Grudge) -> set[tuple[str, str]]:
    return set(shapes.cut_pairs(grudge))


def pairs(senders: set[str], receivers: set[str]) -> set[tuple[str, str]]:
    return {(s, r) for s in senders for r in receivers}


def test_hosts_of_az_are_node_and_client() -> None:
    assert shapes.hosts_of_az(PLAN, "az2") == {"az2-node", "az2-client"}
    with pytest.raises(ValueError, match="no AZ"):
        shapes.hosts_of_az(PLAN, "az9")


def test_complete_grudge_cuts_across_components_only() -> None:
    g = shapes.complete_grudge([{"a", "b"}, {"c"}])
    assert g == {"a": {"c"}, "b": {"c"}, "c": {"a", "b"}}
    assert shapes.complete_grudge([{"a", "b"}]) == {}
    with pytest.raises(ValueError, match="overlap"):
        shapes.complete_grudge([{"a"}, {"a", "b"}])


def test_cut_link_two_way_cuts_both_directions_between_the_two_azs_only() -> None:
    g = shapes.cut_link(PLAN, "az1", "az2")
    a, b = az_hosts("az1"), az_hosts("az2")
    assert cut_set(g) == pairs(a, b) | pairs(b, a)
    assert not any("az3" in h for pair in cut_set(g) for h in pair)


def test_cut_link_one_way_drops_only_from_first_to_second() -> None:
    g = shapes.cut_link(PLAN, "az1", "az2", one_way=True)
    assert cut_set(g) == pairs(az_hosts("az1"), az_hosts("az2"))
    assert shapes.is_cut(g, "az1-node", "az2-client")
    assert not shapes.is_cut(g, "az2-node", "az1-node")
    with pytest.raises(ValueError):
        shapes.cut_link(PLAN, "az1", "az1")


def test_isolate_az_cuts_the_az_from_everyone_and_nothing_inside() -> None:
    g = shapes.isolate_az(PLAN, "az3")
    inside, outside = az_hosts("az3"), az_hosts("az1", "az2")
    assert cut_set(g) == pairs(inside, outside) | pairs(outside, inside)


def test_split_minority_and_sides() -> None:
    g = shapes.split_minority(PLAN5, ["az1", "az4"])
    minority, majority = az_hosts("az1", "az4"), az_hosts("az2", "az3", "az5")
    assert cut_set(g) == pairs(minority, majority) | pairs(majority, minority)
    with pytest.raises(ValueError, match="not a minority"):
        shapes.split_minority(PLAN, ["az1", "az2"])
    explicit = shapes.split(PLAN5, ["az1"], ["az2"])
    assert cut_set(explicit) == cut_set(shapes.cut_link(PLAN5, "az1", "az2"))
    with pytest.raises(ValueError, match="both sides"):
        shapes.split(PLAN, ["az1"], ["az1", "az2"])


def test_bridge_keeps_the_middle_connected_to_both_halves() -> None:
    g = shapes.bridge(PLAN)  # az2 in the middle
    assert cut_set(g) == pairs(az_hosts("az1"), az_hosts("az3")) | pairs(az_hosts("az3"), az_hosts("az1"))
    g = shapes.bridge(PLAN, "az1")
    assert cut_set(g) == cut_set(shapes.cut_link(PLAN, "az2", "az3"))
    g5 = shapes.bridge(PLAN5, "az3")
    left, right = az_hosts("az1", "az2"), az_hosts("az4", "az5")
    assert cut_set(g5) == pairs(left, right) | pairs(right, left)


def test_majorities_ring_three_azs_is_a_one_way_ring() -> None:
    g = shapes.majorities_ring(PLAN)
    expected = (
        pairs(az_hosts("az2"), az_hosts("az1"))
        | pairs(az_hosts("az3"), az_hosts("az2"))
        | pairs(az_hosts("az1"), az_hosts("az3"))
    )
    assert cut_set(g) == expected


@pytest.mark.parametrize("plan", [PLAN, PLAN5, make_plan("198.18.2.0/24", 7)])
def test_majorities_ring_every_az_hears_a_distinct_majority(plan: object) -> None:
    from testbed.addressing import AddressPlan

    assert isinstance(plan, AddressPlan)
    g = shapes.majorities_ring(plan)
    names = shapes.azs(plan)
    heard = {}
    for az in names:
        node = f"{az}-node"
        hears = frozenset(other for other in names if f"{other}-node" not in g.get(node, frozenset()))
        assert len(hears) > len(names) / 2
        heard[az] = hears
    assert len(set(heard.values())) == len(names)


def test_merge_is_union_and_drops_empty() -> None:
    g = shapes.merge({"a": frozenset({"b"})}, {"a": frozenset({"c"}), "d": frozenset()})
    assert g == {"a": {"b", "c"}}


def test_one_way_refuses_self_cut() -> None:
    with pytest.raises(ValueError):
        shapes.one_way_grudge({"a"}, {"a", "b"})


# -- rules ---------------------------------------------------------------------------
def addr(name: str) -> str:
    return PLAN.host(name).address


def test_rules_drop_on_input_of_receiver_and_output_of_sender() -> None:
    rules = shapes.firewall_rules(PLAN, [(shapes.cut_link(PLAN, "az1", "az2", one_way=True), "all")])
    assert set(rules) == set(H)
    r_recv = rules["az2-node"].splitlines()
    assert f"-A FAULTLINE-IN -s {addr('az1-node')}/32 -j DROP" in r_recv
    assert f"-A FAULTLINE-IN -s {addr('az1-client')}/32 -j DROP" in r_recv
    assert not any("FAULTLINE-OUT" in line for line in r_recv)
    r_send = rules["az1-client"].splitlines()
    assert f"-A FAULTLINE-OUT -d {addr('az2-node')}/32 -j DROP" in r_send
    assert not any("FAULTLINE-IN" in line for line in r_send)
    assert rules["az3-node"] == rules["az3-client"] == ""


def test_rules_two_way_have_both_chains_on_each_side() -> None:
    rules = shapes.firewall_rules(PLAN, [(shapes.isolate_az(PLAN, "az1"), "all")])
    lines = rules["az1-node"].splitlines()
    assert len(lines) == 2 * 4  # in + out for each of the 4 outside hosts
    for other in ("az2-node", "az2-client", "az3-node", "az3-client"):
        assert f"-A FAULTLINE-IN -s {addr(other)}/32 -j DROP" in lines
        assert f"-A FAULTLINE-OUT -d {addr(other)}/32 -j DROP" in lines
    assert len(rules["az2-node"].splitlines()) == 2 * 2


def test_kafka_scope_drops_port_9092_the_proxied_and_the_az_listeners_as_server_and_client_side() -> None:
    rules = shapes.firewall_rules(PLAN, [(shapes.cut_link(PLAN, "az1", "az2"), "kafka")])
    lines = rules["az1-node"].splitlines()
    a = addr("az2-node")
    for port in ("9092", "9094", "9101:9109"):
        assert f"-A FAULTLINE-IN -s {a}/32 -p tcp --dport {port} -j DROP" in lines
        assert f"-A FAULTLINE-IN -s {a}/32 -p tcp --sport {port} -j DROP" in lines
        assert f"-A FAULTLINE-OUT -d {a}/32 -p tcp --dport {port} -j DROP" in lines
        assert f"-A FAULTLINE-OUT -d {a}/32 -p tcp --sport {port} -j DROP" in lines
    assert all("9092" in line or "9094" in line or "9101:9109" in line for line in lines)
    assert len(lines) == 2 * 2 * 2 * 3  # 2 peers x in/out x dport/sport x (broker, proxied and AZ listeners)


def test_kafka_scope_covers_an_az_proxys_way_to_the_brokers_but_not_the_quorum() -> None:
    """An AZ's proxy (on its client host) reaches broker b's AZ listener on 9100 + the AZ's index; a
    request-holding proxy reaches the PROXIED listener on 9094: both carry Kafka's traffic and a kafka cut drops it."""
    assert [p for p in (9092, 9094, 9101, 9103, 9109) if shapes.scope_covers("kafka", p)] == [
        9092, 9094, 9101, 9103, 9109]
    assert not any(shapes.scope_covers("kafka", p) for p in (9093, 9100, 9110, 2181))
    assert shapes.scope_covers("zookeeper", 2181) and not shapes.scope_covers("zookeeper", 9101)
    assert shapes.scope_covers("all", 9101)
    rules = shapes.firewall_rules(PLAN, [(shapes.cut_link(PLAN, "az1", "az2"), "kafka")])
    assert f"-A FAULTLINE-OUT -d {addr('az2-node')}/32 -p tcp --dport 9101:9109 -j DROP" in rules["az1-client"]


def test_zookeeper_scope_drops_the_metadata_quorums_ports_only() -> None:
    """ZooKeeper's three ports and a KRaft controller's listener (9093): the metadata quorum in either mode."""
    rules = shapes.firewall_rules(PLAN, [(shapes.isolate_az(PLAN, "az1"), "zookeeper")])
    ports = {line.split("port ")[1].split()[0] for h in H for line in rules[h].splitlines()}
    assert ports == {"2181", "2888", "3888", "9093"}
    assert not any("9092" in rules[h] for h in H)
    assert len(rules["az1-node"].splitlines()) == 4 * 2 * 4 * 2


def test_control_plane_is_never_named_and_rules_are_single_hosts() -> None:
    for grudge in (
        shapes.isolate_az(PLAN, "az1"),
        shapes.majorities_ring(PLAN),
        shapes.bridge(PLAN),
        shapes.split_minority(PLAN, ["az3"]),
        shapes.cut_link(PLAN, "az2", "az3", one_way=True),
    ):
        for scope in shapes.SCOPES:
            rules = shapes.firewall_rules(PLAN, [(grudge, scope)])
            text = "".join(rules.values())
            assert f" {PLAN.control}/" not in text
            for line in text.splitlines():
                target = line.split()[3]
                assert target.endswith("/32") and target[:-3] in {h.address for h in PLAN.hosts}


def test_rules_merge_overlapping_cuts_without_duplicates() -> None:
    iso = shapes.isolate_az(PLAN, "az1")
    link = shapes.cut_link(PLAN, "az1", "az2")
    both = shapes.firewall_rules(PLAN, [(iso, "all"), (link, "all")])
    alone = shapes.firewall_rules(PLAN, [(iso, "all")])
    assert both == alone
    mixed = shapes.firewall_rules(PLAN, [(link, "all"), (link, "kafka")])
    assert "--dport 9092" in mixed["az1-node"] and "-s " in mixed["az1-node"]


def test_rules_refuse_unknown_hosts_self_cuts_and_bad_scopes() -> None:
    with pytest.raises(ValueError, match="not in the plan"):
        shapes.firewall_rules(PLAN, [({"az1-node": frozenset({"control"})}, "all")])
    with pytest.raises(ValueError, match="from itself"):
        shapes.firewall_rules(PLAN, [({"az1-node": frozenset({"az1-node"})}, "all")])
    with pytest.raises(ValueError, match="scope"):
        shapes.firewall_rules(PLAN, [({}, "udp")])  # type: ignore[list-item]


def test_empty_grudge_means_no_rules() -> None:
    assert set(shapes.firewall_rules(PLAN, [({}, "all")]).values()) == {""}
    assert set(shapes.firewall_rules(PLAN, []).values()) == {""}


def test_every_shape_is_symmetric_unless_one_way_or_ring() -> None:
    for grudge in (
        shapes.isolate_az(PLAN, "az2"),
        shapes.bridge(PLAN),
        shapes.cut_link(PLAN, "az1", "az3"),
        shapes.split_minority(PLAN5, ["az2", "az5"]),
        shapes.majorities_ring(PLAN5),
    ):
        cut = cut_set(grudge)
        assert all((b, a) in cut for a, b in cut)
    for a, b in itertools.permutations(shapes.azs(PLAN), 2):
        assert shapes.cut_link(PLAN, a, b, one_way=True) != shapes.cut_link(PLAN, b, a, one_way=True)
