"""Teardown on every exit path, and `clean` after a harness that was killed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from testbed.localprocs import pid_namespace
from tests.conftest import REPO, faultline
from tests.harness.leftovers import remaining

pytestmark = pytest.mark.cluster


def start_up(run_dir: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "harness", "cluster", "up", "--run-dir", str(run_dir)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_brokers_started(run_dir: Path, timeout: float = 60) -> str:
    """Wait until the harness has started every broker; return the run prefix."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = json.loads((run_dir / "state.json").read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            state = {}
        if sum(name.endswith("/broker") for name in state.get("processes", {})) == 3:
            return str(state["prefix"])
        time.sleep(0.1)
    raise AssertionError("the harness never started the brokers")


def test_sigkill_then_clean_removes_the_run_and_nothing_else(tmp_path: Path) -> None:
    bystander = f"bystander-{uuid.uuid4().hex[:6]}"
    subprocess.run(["ip", "netns", "add", bystander], check=True)
    # A process of another host that shares this kernel (an ssh test bed's container): its own pid namespace,
    # a run prefix in its environment. It is that host's, for `clean --inventory`; plain `clean` leaves it.
    elsewhere = subprocess.Popen(["unshare", "--pid", "--fork", "--kill-child",
                                  "env", f"FAULTLINE_RUN=fl{uuid.uuid4().hex[:6]}", "sleep", "600"])
    try:
        harness = start_up(tmp_path / "run")
        prefix = wait_for_brokers_started(tmp_path / "run")
        harness.send_signal(signal.SIGKILL)
        harness.wait(10)
        assert remaining(prefix), "the killed harness should have left its cluster behind"
        cleaned = faultline("clean", check=True)
        assert f"namespace {prefix}-az1-node" in cleaned.stdout
        assert remaining(prefix) == []
        assert bystander in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        assert sleeper_in_its_own_namespace(elsewhere.pid), "the other host's process was left alone"
        assert faultline("clean", check=True).stdout.strip() == "nothing to clean"
    finally:
        subprocess.run(["ip", "netns", "del", bystander], check=False)
        elsewhere.kill()  # unshare; --kill-child takes its sleep along
        elsewhere.wait(10)


def sleeper_in_its_own_namespace(unshare_pid: int) -> bool:
    """Whether the `sleep` that `unshare --pid --fork` started (pid 1 of a new pid namespace) still lives."""
    children = Path(f"/proc/{unshare_pid}/task/{unshare_pid}/children").read_text().split()
    return any(Path(f"/proc/{c}/comm").read_text().strip() == "sleep" and
               pid_namespace(c) != pid_namespace("self") for c in children)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_during_up_tears_everything_down(tmp_path: Path, signum: int) -> None:
    harness = start_up(tmp_path / "run")
    prefix = wait_for_brokers_started(tmp_path / "run")
    harness.send_signal(signum)
    _, err = harness.communicate(timeout=60)
    assert harness.returncode != 0
    assert remaining(prefix) == [], err[-2000:]
    assert "|BGQUEUE|" not in err and "%6|" not in err, "librdkafka wrote to the terminal"
    assert faultline("cluster", "status").returncode == 3  # nothing is recorded as running


def test_up_after_normal_exit_keeps_running_until_down(tmp_path: Path) -> None:
    up = faultline("cluster", "up", "--run-dir", str(tmp_path / "run"), check=True)
    prefix = json.loads((tmp_path / "run" / "state.json").read_text())["prefix"]
    try:
        assert remaining(prefix), up.stdout
        assert os.path.exists(tmp_path / "run" / "nodes" / "az1-node" / "logs" / "broker" / "server.log")
    finally:
        faultline("cluster", "down", check=True)
    assert remaining(prefix) == []
    unreadable = [p for p in (tmp_path / "run").rglob("*") if not p.is_symlink() and not p.lstat().st_mode & 0o004]
    assert unreadable == [], "down hands the run folder over: every file and folder readable by others"
