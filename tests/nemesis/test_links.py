"""Degraded links as data: the pair maps, their union, and the rules and shaping they ask of hosts (no cluster)."""

from __future__ import annotations

import pytest

from nemesis import links
from nemesis.links import Degradation
from nemesis.spec import parse_fault
from testbed.addressing import make_plan
from testbed.errors import SpecError
from testbed.runtime.base import LinkShaping

PLAN = make_plan("198.18.2.0/24", 3)
LOSSY = Degradation(loss=0.3)
SLOW = Degradation(delay_ms=50)
NONE = Degradation()


def test_degrade_hosts_gives_each_direction_its_own_degradation() -> None:
    pairs = links.degrade_hosts(["a"], ["b", "c"], LOSSY, SLOW)
    assert pairs == {("a", "b"): LOSSY, ("a", "c"): LOSSY, ("b", "a"): SLOW, ("c", "a"): SLOW}
    assert links.degrade_hosts(["a"], ["b"], LOSSY, NONE) == {("a", "b"): LOSSY}
    with pytest.raises(ValueError, match="both ends"):
        links.degrade_hosts(["a", "b"], ["b"], LOSSY, LOSSY)


def test_degrade_link_and_rest_cover_every_host_of_each_side() -> None:
    between = links.degrade_link(PLAN, "az1", "az2", SLOW, SLOW)
    az1, az2 = {"az1-node", "az1-client"}, {"az2-node", "az2-client"}
    assert set(between) == {(s, r) for s in az1 for r in az2} | {(s, r) for s in az2 for r in az1}
    rest = links.degrade_rest(PLAN, ["az3-node"], LOSSY, NONE)
    assert set(rest) == {("az3-node", h.name) for h in PLAN.hosts if h.name != "az3-node"}
    with pytest.raises(ValueError, match="itself"):
        links.degrade_link(PLAN, "az1", "az1", SLOW, SLOW)


def test_union_combines_overlaps_independent_losses_added_delays_lowest_rate() -> None:
    a = {("x", "y"): Degradation(loss=0.5, delay_ms=10, rate_kbit=800)}
    b = {("x", "y"): Degradation(loss=0.5, delay_ms=20, jitter_ms=5, rate_kbit=400), ("y", "x"): SLOW}
    assert links.union(a, b) == {("x", "y"): Degradation(loss=0.75, delay_ms=30, jitter_ms=5, rate_kbit=400),
                                 ("y", "x"): SLOW}
    assert links.union(a, {}) == a


def test_degradation_refuses_impossible_values() -> None:
    for bad in ({"loss": 1.0}, {"loss": -0.1}, {"delay_ms": -1}, {"rate_kbit": 0}):
        with pytest.raises(ValueError):
            Degradation(**bad)  # type: ignore[arg-type]


def test_loss_and_delay_rules_sit_on_the_receiver_naming_only_the_sender() -> None:
    pairs = links.union(links.degrade_hosts(["az1-node"], ["az2-node"], Degradation(loss=0.3, delay_ms=50),
                                            Degradation(delay_ms=50)),
                        links.degrade_hosts(["az3-node"], ["az2-node"], Degradation(delay_ms=200), NONE))
    rules = links.link_rules(PLAN, pairs)
    n1, n2, n3 = (PLAN.host(f"az{i}-node").address for i in (1, 2, 3))
    assert rules["az2-node"] == (
        f"-A FAULTLINE-IN -s {n1}/32 -m statistic --mode random --probability 0.3 -j DROP\n"
        f"-A FAULTLINE-IN -s {n1}/32 -j NFQUEUE --queue-num 1 --queue-bypass\n"
        f"-A FAULTLINE-IN -s {n3}/32 -j NFQUEUE --queue-num 2 --queue-bypass\n")
    assert rules["az1-node"] == f"-A FAULTLINE-IN -s {n2}/32 -j NFQUEUE --queue-num 1 --queue-bypass\n"
    assert rules["az3-node"] == "" and set(rules) == {h.name for h in PLAN.hosts}
    assert f"{PLAN.control}/" not in "".join(rules.values())
    shaping = links.link_shaping(PLAN, pairs)
    assert shaping["az2-node"] == LinkShaping(delays=((1, 50.0, 0.0), (2, 200.0, 0.0)))
    assert shaping["az1-node"] == LinkShaping(delays=((1, 50.0, 0.0),))
    assert shaping["az3-node"].empty


def test_rates_are_shaped_on_the_senders_egress_by_destination() -> None:
    pairs = links.degrade_rest(PLAN, ["az1-node"], Degradation(rate_kbit=1000), Degradation(rate_kbit=2000))
    shaping = links.link_shaping(PLAN, pairs)
    others = [h for h in PLAN.hosts if h.name != "az1-node"]
    assert set(shaping["az1-node"].rates) == {(h.address, 1000) for h in others}
    for h in others:
        assert shaping[h.name].rates == ((PLAN.host("az1-node").address, 2000),)
    assert all(r == "" for r in links.link_rules(PLAN, pairs).values())
    assert links.needs_shaper(pairs.values()) and not links.needs_shaper([LOSSY])


def test_link_rules_refuse_hosts_outside_the_plan() -> None:
    with pytest.raises(ValueError, match="not in the plan"):
        links.link_rules(PLAN, {("az1-node", "elsewhere"): LOSSY})


def test_link_specs_take_a_value_per_direction() -> None:
    spec = parse_fault("f", {"fault": "lossy-link", "between": ["leader", "follower"], "loss": 0.3})
    assert spec.is_link and spec.targets == ("leader", "follower") and spec.degrade == (LOSSY, LOSSY)
    spec = parse_fault("f", {"fault": "slow-link", "target": "az1", "delay_ms": [200, 0], "jitter_ms": 5})
    assert spec.degrade == (Degradation(delay_ms=200, jitter_ms=5), Degradation(jitter_ms=5))
    spec = parse_fault("f", {"fault": "throttle-link", "target": "az2-node", "ends": "node", "rate_kbit": [800, None]})
    assert spec.degrade == (Degradation(rate_kbit=800), NONE) and spec.ends == "node"


@pytest.mark.parametrize(("raw", "message"), [
    ({"fault": "lossy-link", "between": ["az1", "az2"]}, r"f\.loss: required"),
    ({"fault": "lossy-link", "loss": 0.3}, "either 'between'"),
    ({"fault": "lossy-link", "target": "az1", "between": ["az1", "az2"], "loss": 0.3}, "either 'between'"),
    ({"fault": "lossy-link", "target": "az1", "loss": 1.5}, "not a probability"),
    ({"fault": "lossy-link", "target": "az1", "loss": [0.1]}, r"f\.loss: expected a number or a list of two"),
    ({"fault": "lossy-link", "target": "az1", "loss": 0}, "degrades nothing"),
    ({"fault": "slow-link", "target": "az1", "delay_ms": "slow"}, r"f\.delay_ms"),
    ({"fault": "throttle-link", "target": "az1", "rate_kbit": 0.5}, "whole number"),
    ({"fault": "throttle-link", "target": "az1", "rate_kbit": 100, "scope": "kafka"}, r"f\.scope: unknown key"),
    ({"fault": "slow-link", "target": "nowhere", "delay_ms": 5}, r"f\.target: 'nowhere' is not a target"),
])
def test_bad_link_specs_name_their_key(raw: dict[str, object], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        parse_fault("f", raw)
