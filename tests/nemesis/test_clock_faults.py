"""Clock faults as specs, their refusals, and the offsets they write and journal (the real offset files of
testbed.runtime.clocks, no process; tests/testbed/test_clocks.py runs a JVM on them)."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harness.spec import parse_spec
from nemesis.clock_faults import CLOCK_JUMP, CLOCK_SKEW, CLOCK_STROBE, reset_clocks
from nemesis.fault_base import FaultEnv
from nemesis.journal import NemesisJournal, read_journal
from nemesis.spec import parse_fault
from testbed.errors import FaultError, SpecError
from testbed.runfolder import NodeFolder
from testbed.runtime.clocks import LocalClocks, read_offset_ms
from tests.harness.test_spec import BASE


def node(name: str, broker_id: int) -> Any:
    return SimpleNamespace(name=name, broker_id=broker_id)


NODES = {"az1-node": node("az1-node", 0), "az2-node": node("az2-node", 1)}


class Runtime(LocalClocks):
    kind = "netns"


def env(tmp_path: Path, shifted: tuple[str, ...] = ("broker", "zookeeper"), runtime: Any = None,
        journal: NemesisJournal | None = None) -> Any:
    settings = SimpleNamespace(shifted_clocks=shifted, quorum_role="zookeeper")
    folder = lambda n: NodeFolder(tmp_path / n.name)  # noqa: E731
    cluster = SimpleNamespace(runtime=runtime or Runtime(), settings=settings, roles=("zookeeper", "broker"),
                              clock_shifted=lambda r: ("broker" if r == "broker" else "zookeeper") in shifted,
                              nodes=tuple(NODES.values()), run_dir=tmp_path, node_folder=folder,
                              clock_offset_file=lambda n, r: folder(n).clock_offset(r),
                              plan=SimpleNamespace(host=lambda name: NODES[name]),
                              process_name=lambda n, r: f"{n.name}/{r}")
    return FaultEnv(cluster=cluster, firewall=None, journal=journal)  # type: ignore[arg-type]


class Resolver:
    def nodes(self, selectors: tuple[str, ...]) -> list[Any]:
        return [NODES[s.replace("txn-coordinator:producer-az1-0", "az1-node")] for s in selectors]


def offset(tmp_path: Path, name: str, role: str = "broker") -> float:
    return read_offset_ms(NodeFolder(tmp_path / name).clock_offset(role))


def test_a_skew_shifts_the_brokers_clock_and_its_stop_puts_it_back(tmp_path: Path) -> None:
    spec = parse_fault("n[0]", {"fault": "clock-skew", "target": "az1-node", "offset_ms": 5000})
    injected = CLOCK_SKEW.inject(spec, Resolver(), env(tmp_path), "skew")  # type: ignore[arg-type]
    assert injected.targets == {"nodes": ["az1-node"], "brokers": [0], "processes": ["az1-node/broker"],
                                "offset_ms": 5000.0}
    assert injected.detail["offsets"] == {"az1-node/broker": 5000.0}
    assert (tmp_path / "az1-node" / "clock" / "broker.offset").read_text() == "+5.000\n"  # libfaketime's seconds
    assert offset(tmp_path, "az1-node", "zookeeper") == 0
    assert CLOCK_SKEW.undo(injected, env(tmp_path)) == {"offsets": {"az1-node/broker": 0.0}}
    assert CLOCK_SKEW.undo(injected, env(tmp_path)) == {}  # idempotent: a second undo moves nothing
    assert offset(tmp_path, "az1-node") == 0


def test_jumps_add_up_and_stay_until_heal_all_puts_every_clock_back(tmp_path: Path) -> None:
    back = parse_fault("n[0]", {"fault": "clock-jump", "target": "txn-coordinator:producer-az1-0",
                                "offset_ms": -30000, "role": "both"})
    forward = parse_fault("n[1]", {"fault": "clock-jump", "target": "az1-node", "offset_ms": 10000})
    first = CLOCK_JUMP.inject(back, Resolver(), env(tmp_path), "back")  # type: ignore[arg-type]
    assert first.detail["offsets"] == {"az1-node/zookeeper": -30000.0, "az1-node/broker": -30000.0}
    assert CLOCK_JUMP.undo(first, env(tmp_path)) == {"offsets": {"az1-node/zookeeper": -30000.0,
                                                                 "az1-node/broker": -30000.0}}  # the step stays
    second = CLOCK_JUMP.inject(forward, Resolver(), env(tmp_path), "forward")  # type: ignore[arg-type]
    assert second.detail["offsets"] == {"az1-node/broker": -20000.0}
    assert reset_clocks(env(tmp_path).cluster) == {"az1-node/zookeeper": -30000.0, "az1-node/broker": -20000.0}
    assert offset(tmp_path, "az1-node") == 0 and offset(tmp_path, "az1-node", "zookeeper") == 0
    assert reset_clocks(env(tmp_path).cluster) == {}


def test_a_strobe_flips_the_offset_in_its_own_thread_journals_each_flip_and_ends_back(tmp_path: Path) -> None:
    journal = NemesisJournal(tmp_path / "nemesis.jsonl")
    spec = parse_fault("n[0]", {"fault": "clock-strobe", "target": "az2-node", "offset_ms": -2000, "rate": 0.5})
    e = env(tmp_path, journal=journal)
    injected = CLOCK_STROBE.inject(spec, Resolver(), e, "strobe")  # type: ignore[arg-type]
    assert offset(tmp_path, "az2-node") == -2000
    time.sleep(4.5)  # two flips: off at 2 s, on again at 4 s
    undone = CLOCK_STROBE.undo(injected, e)
    assert undone["flips"] == 2 and undone["offsets"] == {"az2-node/broker": 0.0}
    flips = [r["detail"] for r in read_journal(journal.path) if r["type"] == "info"]
    assert flips == [{"name": "strobe", "flip": 1, "offsets": {"az2-node/broker": 0.0}},
                     {"name": "strobe", "flip": 2, "offsets": {"az2-node/broker": -2000.0}}]
    assert CLOCK_STROBE.undo(injected, e) == {}


def test_a_cluster_started_with_true_clocks_or_a_runtime_that_cannot_is_refused_at_the_start(tmp_path: Path) -> None:
    spec = parse_fault("n[0]", {"fault": "clock-jump", "target": "az1-node", "offset_ms": 1000})
    with pytest.raises(FaultError, match=r"^clock-jump: this cluster's broker processes were started with true clocks "
                                         r"\(no clock fault of the spec names them\)"):
        CLOCK_JUMP.inject(spec, Resolver(), env(tmp_path, shifted=("zookeeper",)), "j")  # type: ignore[arg-type]
    with pytest.raises(FaultError, match=r"^clock-jump: the docker runtime cannot shift a process's clock$"):
        CLOCK_JUMP.inject(spec, Resolver(), env(tmp_path, runtime=SimpleNamespace(kind="docker")), "j")  # type: ignore[arg-type]
    assert not (tmp_path / "az1-node").exists()


@pytest.mark.parametrize(("fault", "says"), [
    ({"fault": "clock-strobe", "target": "leader", "offset_ms": 1000, "rate": 0},
     r"^n\[0\]\.rate: expected flips a second > 0 and <= 0.5 \(a process may see a new clock offset 2 s late\), "
     r"got 0$"),
    ({"fault": "clock-strobe", "target": "leader", "offset_ms": 1000, "rate": -2},
     r"^n\[0\]\.rate: expected flips a second > 0 and <= 0.5"),
    ({"fault": "clock-strobe", "target": "leader", "offset_ms": 1000, "rate": 1},
     r"^n\[0\]\.rate: expected flips a second > 0 and <= 0.5"),
    ({"fault": "clock-strobe", "target": "leader", "offset_ms": 1000}, r"^n\[0\]\.rate: required for fault clock-strobe$"),
    ({"fault": "clock-jump", "target": "leader", "offset_ms": 0},
     r"^n\[0\]\.offset_ms: expected a number of milliseconds other than 0 \(negative: back\), got 0$"),
    ({"fault": "clock-skew", "target": "leader", "offset_ms": "5s"},
     r"^n\[0\]\.offset_ms: expected a number of milliseconds other than 0"),
    ({"fault": "clock-skew", "target": "leader"}, r"^n\[0\]\.offset_ms: required for fault clock-skew$"),
    ({"fault": "clock-jump", "target": "leader", "offset_ms": 10, "rate": 1},
     r"^n\[0\]\.rate: unknown key for fault clock-jump"),
])
def test_bad_clock_faults_name_the_key(fault: dict[str, Any], says: str) -> None:
    with pytest.raises(SpecError, match=says):
        parse_fault("n[0]", fault)


def test_a_runtime_that_cannot_shift_a_clock_is_refused_in_one_line_and_netns_starts_every_jvm_shifted() -> None:
    spec = {**BASE, "nemesis": [{"at": 1, "fault": "clock-jump", "target": "leader", "offset_ms": -30000}]}
    assert parse_spec({**spec, "cluster": {"runtime": "netns"}}).cluster.shifted_clocks == ("broker",)
    both = {**spec, "nemesis": [*spec["nemesis"], {"at": 2, "fault": "clock-skew", "target": "controller",
                                                   "offset_ms": 1000, "role": "both"}]}
    assert parse_spec({**both, "cluster": {"runtime": "netns"}}).cluster.shifted_clocks == ("broker", "zookeeper")
    assert parse_spec({**BASE, "cluster": {"runtime": "netns"}}).cluster.shifted_clocks == ()
    with pytest.raises(SpecError, match=r"^nemesis\[0\]\.fault: clock-jump needs a runtime that can shift a "
                                        r"process's clock \(libfaketime preloaded into the nodes' JVMs\); the docker "
                                        r"runtime cannot: its images carry no libfaketime .*\(use --runtime netns\)$"):
        parse_spec({**spec, "cluster": {"runtime": "docker"}})
    with pytest.raises(SpecError, match=r"^nemesis\[0\]\.fault: clock-jump needs .* the ssh runtime cannot: its "
                                        r"hosts need not have libfaketime"):
        parse_spec({**spec, "cluster": {"runtime": "ssh", "inventory": "hosts.yaml"}})
