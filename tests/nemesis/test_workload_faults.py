"""pause-workload and replace-workload: their specs, and what they ask of the harness's WorkloadControl."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from nemesis.registry import fault_for
from nemesis.spec import parse_fault
from nemesis.targets import Resolver
from nemesis.workload_faults import HoldRequest, PauseWorkload, ReplaceWorkload
from testbed.addressing import make_plan
from testbed.errors import FaultError, SpecError


class Control:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def pause(self, process: str) -> int:
        self.calls.append(("pause", process))
        return 4242

    def resume(self, process: str) -> None:
        self.calls.append(("resume", process))

    def replace(self, process: str) -> str:
        self.calls.append(("replace", process))
        return f"{process}-r1"


def resolver() -> Resolver:
    return Resolver(make_plan("198.18.2.0/24", 3), random.Random(1), 0, None)


def test_pause_is_undone_by_resume_and_a_replacement_stays() -> None:
    control = Control()
    env = SimpleNamespace(workloads=control)
    pause = parse_fault("f", {"fault": "pause-workload", "process": "producer-az1-0"})
    assert isinstance(fault_for(pause), PauseWorkload) and pause.is_workload and pause.targets == ("producer-az1-0",)
    injected = fault_for(pause).inject(pause, resolver(), env, "zombie")  # type: ignore[arg-type]
    assert (injected.fault, injected.targets, injected.detail) == (
        "pause-workload", {"process": "producer-az1-0"}, {"pid": 4242})
    fault_for(pause).undo(injected, env)  # type: ignore[arg-type]
    replace = parse_fault("f", {"fault": "replace-workload", "process": "producer-az1-0"})
    assert isinstance(fault_for(replace), ReplaceWorkload)
    again = fault_for(replace).inject(replace, resolver(), env, "replacement")  # type: ignore[arg-type]
    assert again.targets == {"process": "producer-az1-0", "replacement": "producer-az1-0-r1"}
    fault_for(replace).undo(again, env)  # type: ignore[arg-type]
    assert control.calls == [("pause", "producer-az1-0"), ("resume", "producer-az1-0"),
                             ("replace", "producer-az1-0")]


def test_without_the_harness_workloads_it_says_so() -> None:
    pause = parse_fault("f", {"fault": "pause-workload", "process": "producer-az1-0"})
    with pytest.raises(FaultError, match="given none"):
        PauseWorkload().inject(pause, resolver(), SimpleNamespace(workloads=None), "z")  # type: ignore[arg-type]


@pytest.mark.parametrize(("raw", "says"), [
    ({"fault": "pause-workload"}, r"^f\.process: required for fault pause-workload"),
    ({"fault": "hold-request", "process": "consumer-az1-0"}, r"^f\.process: 'consumer-az1-0' is not a workload"),
    ({"fault": "replace-workload", "process": "producer-az1-0", "target": "az1"}, r"^f\.target: unknown key"),
])
def test_bad_workload_fault_specs(raw: dict, says: str) -> None:
    with pytest.raises(SpecError, match=says):
        parse_fault("f", raw)


class Holds:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, object]] = []

    def hold(self, process: str, kind: dict) -> dict:
        self.calls.append(("hold", process, kind))
        return {"correlation_id": 7, "held_ns": 1}

    def release(self, process: str, before: dict | None = None) -> dict:
        self.calls.append(("release", process, before))
        return {"released_ns": 2}


def test_hold_request_arms_the_proxy_and_its_stop_releases_before_the_named_request() -> None:
    control = Holds()
    env = SimpleNamespace(workloads=control)
    spec = parse_fault("f", {"fault": "hold-request", "process": "producer-az1-0", "api": "EndTxnCommit",
                             "release_before": "EndTxnAbort"})
    assert isinstance(fault_for(spec), HoldRequest) and spec.is_workload
    injected = fault_for(spec).inject(spec, resolver(), env, "hold-1")  # type: ignore[arg-type]
    assert injected.targets == {"process": "producer-az1-0", "api": "EndTxnCommit"}
    assert injected.detail["correlation_id"] == 7
    fault_for(spec).undo(injected, env)  # type: ignore[arg-type]
    assert control.calls == [("hold", "producer-az1-0", {"api_key": 26, "committed": True}),
                             ("release", "producer-az1-0", {"api_key": 26, "committed": False})]
    plain = parse_fault("f", {"fault": "hold-request", "process": "producer-az1-0"})
    HoldRequest().undo(HoldRequest().inject(plain, resolver(), env, "h"), env)  # type: ignore[arg-type]
    assert control.calls[-2:] == [("hold", "producer-az1-0", {"api_key": 26, "committed": None}),
                                  ("release", "producer-az1-0", None)]
