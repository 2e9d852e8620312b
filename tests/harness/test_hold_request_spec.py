"""`proxy: true` producers and `hold-request` faults (txn-delayed-endtxn): said at validation, in one line."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml

from harness.spec import parse_spec
from nemesis.spec import parse_fault
from testbed.addressing import make_plan
from testbed.errors import SpecError
from testbed.kafka.config import ClusterSettings, server_properties

REPO = Path(__file__).resolve().parents[2]
SPEC = yaml.safe_load((REPO / "scenarios" / "txn-delayed-endtxn.yaml").read_text())


def spec_with(**producer: object) -> dict:
    raw = copy.deepcopy(SPEC)
    raw["workloads"]["producers"][0].update(producer)
    return raw


def test_every_configuration_holds_endtxn_of_a_proxied_producer_on_a_proxied_cluster() -> None:
    for configuration in SPEC["configurations"]:
        spec = parse_spec(SPEC, configuration)
        assert spec.cluster.proxied_listener and spec.producers[0].proxy
        holds = [item.fault for item in spec.nemesis.items if hasattr(item, "fault")]
        assert {f.fault for f in holds} == {"hold-request"}
    starts = [i.fault for i in parse_spec(SPEC, "before-abort").nemesis.items if hasattr(i, "fault")]
    assert {(f.api, f.release_before) for f in starts} == {("EndTxnCommit", "EndTxnAbort")}
    first = parse_spec(SPEC, "before-produce").nemesis.items[0].fault
    assert (first.api, first.release_before) == ("EndTxn", "Produce")
    assert parse_spec(SPEC, "at-stop").nemesis.items[0].fault.release_before is None


def test_a_cluster_without_proxied_producers_has_no_second_listener() -> None:
    raw = spec_with(proxy=False)
    raw["nemesis"] = []
    raw.pop("configurations")
    assert not parse_spec(raw).cluster.proxied_listener


def test_hold_request_needs_a_proxied_producer() -> None:
    with pytest.raises(SpecError, match=re.escape("nemesis[0].process: producer-az1-0 has no request-holding proxy "
                                                  "(proxied producers: none; say proxy: true)")):
        parse_spec(spec_with(proxy=False))


def test_a_runtime_that_cannot_run_the_proxy_is_refused_in_one_line() -> None:
    raw = copy.deepcopy(SPEC)
    raw["cluster"]["runtime"] = "docker"
    with pytest.raises(SpecError, match=r"^workloads\.producers\[0\]\.proxy: the docker runtime cannot run a "
                                        r"request-holding proxy \(use --runtime netns\)$"):
        parse_spec(raw)


def test_two_proxied_producers_in_one_az_are_refused() -> None:
    with pytest.raises(SpecError, match=r"^workloads\.producers\[0\]\.proxy: at most one proxied producer per AZ"):
        parse_spec(spec_with(per_az=2))


@pytest.mark.parametrize(("raw", "says"), [
    ({"fault": "hold-request"}, r"fault\.process: required for fault hold-request"),
    ({"fault": "hold-request", "process": "producer-az1-0", "api": "Fetch"}, r"fault\.api: 'Fetch' is not one of"),
    ({"fault": "hold-request", "process": "producer-az1-0", "release_before": "x"}, r"fault\.release_before: 'x'"),
    ({"fault": "hold-request", "process": "consumer-az1-0"}, r"fault\.process: 'consumer-az1-0' is not a workload"),
])
def test_bad_hold_request_specs_name_their_key(raw: dict, says: str) -> None:
    with pytest.raises(SpecError, match=says):
        parse_fault("fault", raw)


def test_the_brokers_get_a_proxied_listener_advertised_in_the_clients_loopback() -> None:
    plan = make_plan("198.18.0.0/24", 3)
    node = plan.nodes[1]
    props = dict(line.split("=", 1) for line in server_properties(
        plan, node, ClusterSettings(proxied_listener=True), "/data").splitlines() if "=" in line)
    assert props["listeners"] == f"PLAINTEXT://{node.address}:9092,PROXIED://{node.address}:9094"
    assert props["advertised.listeners"] == f"PLAINTEXT://{node.address}:9092,PROXIED://127.0.0.1:{19090 + node.broker_id}"
    assert props["listener.security.protocol.map"] == "PLAINTEXT:PLAINTEXT,PROXIED:PLAINTEXT"
    assert props["inter.broker.listener.name"] == "PLAINTEXT"
    plain = server_properties(plan, node, ClusterSettings(), "/data")
    assert "PROXIED" not in plain and "inter.broker.listener.name" not in plain
