"""Bringing a whole cluster up and down, with teardown registered the moment each step succeeds.

`provision` is the one way a cluster comes to exist: it refuses a second
cluster, validates everything that can be validated before touching the
machine, and leaves nothing behind if any step fails or a signal arrives.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

from testbed.addressing import AddressPlan
from testbed.docker_inventory import load_any_inventory
from testbed.errors import UsageError
from testbed.kafka.cluster import KafkaCluster
from testbed.kafka.config import ClusterSettings
from testbed.machine import REAL, Machine
from testbed.paths import RESULTS_DIR
from testbed.runfolder import RunFolder
from testbed.runtime.base import Runtime, new_prefix
from testbed.runtime.factory import runtime_of
from testbed.runtime.kinds import kind
from testbed.state import RunState, claim_active, read_active, refuse_if_busy, release_active

log = logging.getLogger("faultline")


def timestamp() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")[:-4] + "Z"


ROOT_NEEDED = ("faultline must run as root (it creates network namespaces and iptables rules): run it with sudo, "
               "e.g. sudo .venv/bin/python -m harness run SPEC; show, report, list, compose, campaign --plan, "
               "campaign merge and python -m checkers need no root")


def require_root() -> None:
    """UsageError unless this process is root: only the commands that make or touch a cluster call it."""
    if os.geteuid() != 0:
        raise UsageError(ROOT_NEEDED)


def hosts_exist(run_dir: Path, machine: Machine = REAL) -> bool:
    """Whether any host of the run recorded in `run_dir` is still there."""
    try:
        _, runtime = cluster_from_state(run_dir, machine)
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return runtime.exists()


def live_active_cluster(machine: Machine = REAL) -> dict[str, Any] | None:
    """The recorded cluster if its hosts still exist; a stale record counts as none."""
    current = read_active(machine.active_file)
    if current is None:
        return None
    return current if hosts_exist(Path(current["run_dir"]), machine) else None


class TerminationRequested(BaseException):
    """SIGTERM turned into an exception so every ExitStack unwinds, as it does for SIGINT."""


@contextlib.contextmanager
def terminate_on_sigterm() -> Iterator[None]:
    def handler(signum: int, frame: FrameType | None) -> None:
        raise TerminationRequested(f"signal {signum}")
    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def cluster_from_state(run_dir: Path, machine: Machine = REAL) -> tuple[KafkaCluster, Runtime]:
    """The cluster and runtime recorded in a run folder's state file, as the harness that made them saw them."""
    state = RunState.load(run_dir)
    settings = settings_from_json(state.data["settings"])
    plan = plan_of(settings)
    runtime = runtime_of(state, plan, machine.make_runtime)
    return machine.make_cluster(runtime, settings, RunFolder(run_dir)), runtime


def settings_from_json(data: dict[str, Any]) -> ClusterSettings:
    fields = dict(data)
    if fields.get("replica_assignment") is not None:
        fields["replica_assignment"] = tuple(tuple(r) for r in fields["replica_assignment"])
    fields["extra_topics"] = tuple(fields.get("extra_topics") or ())
    fields["upgrade_versions"] = tuple(fields.get("upgrade_versions") or ())
    fields["client_versions"] = tuple(fields.get("client_versions") or ())
    return ClusterSettings(**fields)


def plan_of(settings: ClusterSettings) -> AddressPlan:
    """The hosts' addresses: the inventory's (a kind that needs one: ssh), else laid out on the settings' network."""
    return kind(settings.runtime).address_plan(settings.network, settings.nodes, settings.inventory)


def check_can_provision(settings: ClusterSettings, machine: Machine = REAL) -> AddressPlan:
    """Everything that can be known before a cluster is made: the machine is free, the address plan fits the
    runtime's hosts, the runtime is reachable with what it needs, the Kafka version is there. Changes nothing."""
    plan = plan_of(settings)
    if settings.inventory is not None and load_any_inventory(settings.inventory).provision != settings.provision:
        raise UsageError(f"inventory {settings.inventory}: it says provision: "
                         f"{str(not settings.provision).lower()}, but the run was set up for "
                         f"{'a cluster of yours' if not settings.provision else 'a cluster faultline makes'}")
    refuse_if_busy(live_active_cluster(machine))
    for version in (settings.kafka_version, *settings.upgrade_versions):  # a rolling upgrade's too
        machine.ensure_kafka(version)
    machine.preflight(settings.runtime, plan, settings.kafka_version, settings.inventory, settings.known_hosts,
                      power_cuts=settings.lose_unsynced_writes and settings.power_offs,
                      client_versions=settings.client_versions)
    return plan


@contextlib.contextmanager
def provision(settings: ClusterSettings, run_dir: Path | None, keep: bool = False, machine: Machine = REAL,
              prefix: str | None = None) -> Iterator[tuple[KafkaCluster, Runtime]]:
    """Yield a ready cluster, made on `machine` (with `settings.provision` false: a cluster of the user's, learned,
    its run's topic made); tear it down on the way out unless `keep` (then the caller owns it). `prefix`: the run's
    (default: a new one).

    Raises before changing anything for: a busy machine, a bad address plan, an
    unavailable Kafka version.
    """
    plan = check_can_provision(settings, machine)
    prefix = prefix or new_prefix()
    run_dir = run_dir or RESULTS_DIR / "cluster" / timestamp()
    run_dir.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as undo, terminate_on_sigterm():
        teardown: dict[str, float] = {}  # when the teardown began: logged with its seconds once it is over
        undo.callback(_log_teardown, prefix, teardown)
        state = RunState.create(run_dir, prefix, runtime=settings.runtime, settings=settings.to_json(),
                                harness_pid=os.getpid())
        claim_active(run_dir, prefix, machine.active_file)
        undo.callback(release_active, prefix, machine.active_file)
        runtime = machine.make_runtime(settings.runtime, prefix, plan, state)
        undo.callback(runtime.destroy)
        started = time.monotonic()
        runtime.create()
        hosts_s = time.monotonic() - started
        cluster = machine.make_cluster(runtime, settings, RunFolder(run_dir))
        undo.callback(cluster.remove_own)  # after collect: a cluster of the user's loses the run's topic
        undo.callback(cluster.collect)  # before the hosts go (the stack unwinds last in, first out)
        undo.callback(lambda: teardown.setdefault("began", time.monotonic()))
        cluster.bring_up()
        steps = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in
                          {"hosts": hosts_s, **cluster.bring_up_steps}.items())
        log.info("cluster %s ready in %.1f s (%s; run dir %s)", prefix, time.monotonic() - started, steps, run_dir)
        if keep:
            undo.pop_all()
        yield cluster, runtime


def _log_teardown(prefix: str, teardown: dict[str, float]) -> None:
    if "began" in teardown:
        log.info("cluster %s torn down in %.1f s", prefix, time.monotonic() - teardown["began"])


def tear_down(cluster: KafkaCluster, machine: Machine = REAL) -> None:
    """Remove a cluster (its logs and data fetched first, with the runtime that ran it) and release the machine."""
    started = time.monotonic()
    cluster.collect()
    cluster.remove_own()
    collected = time.monotonic()
    cluster.runtime.destroy()
    release_active(cluster.runtime.prefix, machine.active_file)
    log.info("cluster %s torn down in %.1f s (collect %.1f s, destroy %.1f s)", cluster.runtime.prefix,
             time.monotonic() - started, collected - started, time.monotonic() - collected)
