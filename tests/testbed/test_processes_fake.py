"""ProcessGroup on the fake runtime: one copy per name, stop escalates, kill hits all at once, logs fetched first."""

from __future__ import annotations

import time
from pathlib import Path
from signal import SIGKILL, SIGTERM

import pytest

from testbed.addressing import Host
from testbed.errors import RuntimeFailure
from testbed.processes import ProcessGroup
from tests.fakes import DIES_AT_ONCE, IGNORES_SIGTERM, FakeProcess, FakeRuntime, Script, exits_by_itself


@pytest.fixture
def runtime() -> FakeRuntime:
    runtime = FakeRuntime(scripts={"stubborn": IGNORES_SIGTERM, "short": exits_by_itself(0, after_s=0.05),
                                   "slow-": Script(linger_s=0.3), "crash": DIES_AT_ONCE})
    runtime.create()
    return runtime


def group(runtime: FakeRuntime, tmp_path: Path) -> ProcessGroup:
    return ProcessGroup(runtime, lambda name: tmp_path / "logs" / f"{name}.log")


def host(runtime: FakeRuntime) -> Host:
    return runtime.plan.clients[0]


def start(procs: ProcessGroup, runtime: FakeRuntime, name: str) -> FakeProcess:
    """Start `name` through the group; the fake process the runtime made for it."""
    started = procs.start(host(runtime), name, ["python", "-m", "workloads", f"{name}.json"])
    assert started is runtime.processes[name]
    return runtime.processes[name]


def test_start_refuses_a_second_copy_of_a_running_process(runtime: FakeRuntime, tmp_path: Path) -> None:
    procs = group(runtime, tmp_path)
    first = procs.start(host(runtime), "p", ["python", "x"])
    with pytest.raises(RuntimeFailure, match="p is already running"):
        procs.start(host(runtime), "p", ["python", "x"])
    assert [p.name for p in runtime.spawned] == ["p"], "the refused start must not spawn anything"
    first.signal(SIGKILL)
    again = procs.start(host(runtime), "p", ["python", "x"])  # once it has ended, a new copy may start
    assert again.pid != first.pid and procs.running("p") is again
    assert runtime.spawned[-1].log == tmp_path / "logs" / "p.log"


def test_a_process_that_died_at_once_is_not_running_and_is_not_signalled(
        runtime: FakeRuntime, tmp_path: Path) -> None:
    procs = group(runtime, tmp_path)
    crashed = start(procs, runtime, "crash")
    assert procs.running("crash") is None and procs.get("crash") is crashed
    assert procs.exit_status("crash") == 1
    assert procs.signal("crash", SIGTERM) is None and crashed.signals == []
    assert procs.stop(["crash"], timeout=1.0) == []
    procs.start(host(runtime), "crash", ["x"])  # nothing runs under that name: a new copy may start


def test_stop_escalates_to_sigkill_and_names_the_process_that_ignored_sigterm(
        runtime: FakeRuntime, tmp_path: Path) -> None:
    procs = group(runtime, tmp_path)
    polite, stubborn = start(procs, runtime, "polite"), start(procs, runtime, "stubborn")
    assert procs.stop(["polite", "stubborn", "never-started"], timeout=0.2) == ["stubborn"]
    assert [s for s, _ in polite.signals] == [SIGTERM] and polite.exit_status() == 0
    assert [s for s, _ in stubborn.signals] == [SIGTERM, SIGKILL]
    assert stubborn.exit_status() == -SIGKILL and not stubborn.alive()


def test_stop_within_signals_all_at_once_and_gives_each_process_its_own_timeout(
        runtime: FakeRuntime, tmp_path: Path) -> None:
    procs = group(runtime, tmp_path)
    slow = [start(procs, runtime, f"slow-{i}") for i in range(2)]  # each takes 0.3 s to end after SIGTERM
    stubborn = start(procs, runtime, "stubborn")
    started = time.monotonic()
    stuck = procs.stop_within({"slow-0": 5.0, "slow-1": 5.0, "stubborn": 0.1, "never-started": 1.0})
    took = time.monotonic() - started
    assert stuck == ["stubborn"]
    sent = [t for p in [*slow, stubborn] for s, t in p.signals if s == SIGTERM]
    assert len(sent) == 3 and max(sent) - min(sent) < 0.1, "a SIGTERM waited for an earlier process to end"
    assert 0.25 < took < 0.55, f"stopping took {took:.2f} s (one after another: 0.6 s and more)"
    kill_at = next(t for s, t in stubborn.signals if s == SIGKILL)
    assert kill_at - started < 0.25, "the stubborn one was killed only after the others' longer timeout"
    assert all(p.exit_status() == 0 for p in slow) and stubborn.exit_status() == -SIGKILL


def test_kill_signals_every_process_before_waiting_for_any(runtime: FakeRuntime, tmp_path: Path) -> None:
    procs = group(runtime, tmp_path)
    victims = [start(procs, runtime, f"slow-{i}") for i in range(3)]  # each takes 0.3 s to die
    started = time.monotonic()
    assert procs.kill([v.name for v in victims], timeout=5.0) == []
    took = time.monotonic() - started
    sent = [t for v in victims for s, t in v.signals if s == SIGKILL]
    assert len(sent) == 3
    assert max(sent) - min(sent) < 0.1, "a SIGKILL waited for an earlier victim to die"
    assert 0.25 < took < 0.85, f"killing three at once took {took:.2f} s (one after another: 0.9 s)"
    assert all(v.exit_status() == -SIGKILL for v in victims)


def test_kill_reports_the_processes_still_alive_at_the_deadline(runtime: FakeRuntime, tmp_path: Path) -> None:
    procs = group(runtime, tmp_path)
    procs.start(host(runtime), "slow-a", ["x"])
    assert procs.kill(["slow-a"], timeout=0.05) == ["slow-a"]


def test_wait_returns_the_processes_still_running(runtime: FakeRuntime, tmp_path: Path) -> None:
    procs = group(runtime, tmp_path)
    procs.start(host(runtime), "short", ["x"])
    procs.start(host(runtime), "long", ["x"])
    assert procs.wait(["short", "long", "never-started"], timeout=0.3) == ["long"]
    assert procs.exit_status("short") == 0 and procs.exit_status("long") is None
    assert procs.exit_status("never-started") is None


def test_log_tail_fetches_the_log_from_its_host_before_reading(tmp_path: Path) -> None:
    def host_copy_arrives(at: Host, path: Path) -> None:  # the run folder has the log only once fetched
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("starting\nconnected\nERROR broker down\n")

    runtime = FakeRuntime(on_fetch=host_copy_arrives)
    runtime.create()
    procs = group(runtime, tmp_path)
    worker = procs.start(runtime.plan.nodes[1], "worker", ["x"])
    assert not (tmp_path / "logs" / "worker.log").exists()
    assert procs.log_tail("worker", lines=2) == "connected | ERROR broker down"
    assert runtime.fetches == [(worker.host.name, tmp_path / "logs" / "worker.log")]


def test_log_tail_says_so_when_the_host_cannot_give_the_log(runtime: FakeRuntime, tmp_path: Path) -> None:
    procs = group(runtime, tmp_path)
    procs.start(host(runtime), "worker", ["x"])
    runtime.break_once("fetch")
    assert procs.log_tail("worker").startswith("(output not readable: fake fetch")
    assert procs.log_tail("worker") == "(no output)"  # the next fetch works; the host has nothing
