"""`remove-controller` and `add-controller`: a dynamic KRaft quorum's voters changed as an operator does (KIP-853).

Only on a cluster whose quorum is dynamic (`cluster.kraft_quorum: dynamic`, Kafka 3.9 on, separate controllers;
the harness refuses the rest before anything starts). Each is an operation (`nemesis.operations`): its start
resolves the target and checks it against the quorum's voters now, then its steps run in their own thread while
the schedule goes on, each journaled as an `info` row; its stop waits for them.

- `remove-controller`: the target node's controller (`target: controller` is the active one) is removed from
  the voters: RemoveRaftVoter (its id and directory id, from DescribeQuorum v2) sent to the active controller,
  again while it moves or is busy, then a wait until a leader's voter set no longer holds it (a removed leader
  resigns once the new set is committed: "Leader is not in the committed voter set", and the rest elect one).
  `shutdown` says when its process is stopped (SIGTERM): `after` the removal (the default), `before` it (what
  Kafka 3.9's docs advise until KIP-996's pre-vote), or `none` (it runs on, no longer a voter).
- `add-controller`: the target node's controller (default: the one node whose controller is not a voter) joins
  as a new replica: its process stopped if it runs, its metadata directory emptied and formatted afresh
  (`--no-initial-controllers`: a new directory id, the cluster's id kept), started as an observer, and once it has
  fetched up to the leader's high watermark, AddRaftVoter sent to the active controller; then a wait until the
  voter set holds it.

The rows carry the voter set before and after (each voter's id and directory id, the leader and its epoch).
Must never: remove the last voter or add one that is a voter already (refused at the start, before any change),
touch a broker, or empty a directory other than the target controller's metadata directory.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from nemesis.fault_base import FaultEnv, Injected
from nemesis.faults import GRACEFUL_STOP_S
from nemesis.operations import Operation, Running
from testbed.errors import ClusterError, FaultError, RuntimeFailure
from testbed.kafka import config as kcfg
from testbed.kafka import voters_wire as wire
from testbed.kafka.kraft import format_process

if TYPE_CHECKING:
    from nemesis.fault_spec import FaultSpec
    from nemesis.targets import Resolver
    from testbed.addressing import Host
    from testbed.kafka.cluster import KafkaCluster, NodeRole

ROLE: NodeRole = "controller"
SHUTDOWNS = ("after", "before", "none")
ASK_S = 30.0  # how long a change is asked for again while the leader moves or finishes the previous change
POLL_S = 0.5
META = "meta.properties"


def leader_voters(cluster: KafkaCluster) -> wire.VoterSet | None:
    """The voter set as the leader of the newest epoch says it (DescribeQuorum v2 to each controller)."""
    found = []
    for node in cluster.nodes:
        try:
            view = wire.describe_voters(node.address, kcfg.CONTROLLER_PORT, 2.0)
        except (OSError, ConnectionError, ValueError):
            continue
        if view.leading:
            found.append(view)
    return max(found, key=lambda v: v.leader_epoch or 0) if found else None


def voters_now(cluster: KafkaCluster, fault: str) -> wire.VoterSet:
    voters = leader_voters(cluster)
    if voters is None:
        raise FaultError(f"{fault}: no KRaft controller answers DescribeQuorum as the leader")
    return voters


def meta_properties(cluster: KafkaCluster, node: Host) -> dict[str, str]:
    """The node's controller's meta.properties (cluster.id, node.id, directory.id)."""
    path = cluster.runtime.host_path(node, cluster.node_folder(node).data(ROLE) / META)
    try:
        done = cluster.runtime.execute(node, ["cat", path], timeout=10.0)
    except RuntimeFailure as exc:
        raise FaultError(f"reading {node.name}'s controller {META}: {exc}") from exc
    return dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line and not line.startswith("#"))


def _change(cluster: KafkaCluster, fault: str, ask: Callable[[str], tuple[int, str | None]],
            done: Callable[[wire.VoterSet], bool]) -> dict[str, Any]:
    """Send a voter change to the leader (`ask(address)`) until it is taken or `done` holds of the voter set; the
    leader's answer. FaultError when refused for good or not taken within ASK_S."""
    deadline, last = time.monotonic() + ASK_S, "no leader"
    while time.monotonic() < deadline:
        voters = leader_voters(cluster)
        if voters is not None and done(voters):
            return {"answer": "already done", "asked_of": voters.leader_id}
        if voters is not None and voters.leader_id is not None:
            leader = cluster.node(kcfg.broker_of_controller(cluster.settings, voters.leader_id))
            try:
                code, message = ask(leader.address)
            except (OSError, ConnectionError, ValueError) as exc:
                last = str(exc) or type(exc).__name__
            else:
                if code == 0:
                    return {"answer": "NONE", "asked_of": voters.leader_id, "asked_ns": time.time_ns()}
                last = f"{wire.error_name(code)}{f' ({message})' if message else ''}"
                if code not in wire.RETRIABLE:
                    raise FaultError(f"{fault}: refused by the active controller {voters.leader_id}: {last}")
        time.sleep(POLL_S)
    raise FaultError(f"{fault}: not taken within {ASK_S:.0f} s: {last}")


def _wait_voters(running: Running, cluster: KafkaCluster, wait_s: float,
                 ok: Callable[[wire.VoterSet], bool]) -> wire.VoterSet | None:
    """The first leader's voter set `ok` holds of, within wait_s (None: not within it, or cancelled)."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        voters = leader_voters(cluster)
        if voters is not None and ok(voters):
            return voters
        if not running.sleep(POLL_S):
            return None
    return None


class MembershipChange(Operation):
    """What both faults share: the target's controller, the voter set at the start, journaled steps."""

    @staticmethod
    def note(env: FaultEnv, fault: str, key: str, node: Host, node_id: int, detail: dict[str, Any]) -> None:
        if env.journal is not None:
            env.journal.write("info", fault, {"nodes": [node.name], "controller": node_id},
                              {"name": key, **detail})


class RemoveController(MembershipChange):
    def inject(self, spec: FaultSpec, resolver: Resolver, env: FaultEnv, key: str) -> Injected:
        cluster, opts = env.cluster, spec.options
        node = resolver.node(spec.targets[0] if spec.targets else "controller")
        node_id = kcfg.controller_id(cluster.settings, node.broker_id)
        before = voters_now(cluster, spec.fault)
        voter = before.voter(node_id)
        if voter is None:
            raise FaultError(f"{spec.fault}: {node.name}'s controller (node {node_id}) is not a voter "
                             f"(voters {[r.node_id for r in before.voters]})")
        if len(before.voters) == 1:
            raise FaultError(f"{spec.fault}: {node.name}'s controller is the last voter; a quorum cannot lose it")
        self.launch(key, opts["wait_s"] + ASK_S + GRACEFUL_STOP_S,
                    lambda running: self._remove(running, env, spec.fault, key, node, voter, opts))
        targets = {"nodes": [node.name], "controller": node_id, "directory_id": voter.directory_id,
                   "was_leader": before.leader_id == node_id}
        return Injected(key, spec.fault, targets, {"voters_before": before.to_json(), "shutdown": opts["shutdown"]})

    def _remove(self, running: Running, env: FaultEnv, fault: str, key: str, node: Host, voter: wire.Replica,
                opts: Mapping[str, Any]) -> None:
        cluster, node_id = env.cluster, voter.node_id
        if opts["shutdown"] == "before":
            cluster.stop(node, ROLE, GRACEFUL_STOP_S)
            self.note(env, fault, key, node, node_id, {"step": "stopped", "stopped_ns": time.time_ns()})
        asked = _change(cluster, fault, lambda a: wire.remove_voter(a, kcfg.CONTROLLER_PORT, node_id,
                                                                    voter.directory_id),
                        lambda v: v.voter(node_id) is None)
        self.note(env, fault, key, node, node_id, {"step": "asked", **asked})
        after = _wait_voters(running, cluster, opts["wait_s"],
                             lambda v: v.voter(node_id) is None and v.leader_id != node_id)
        self.note(env, fault, key, node, node_id, {"step": "removed", "done_ns": time.time_ns(),
                                                   "voters_after": None if after is None else after.to_json()})
        if opts["shutdown"] == "after":
            cluster.stop(node, ROLE, GRACEFUL_STOP_S)
            self.note(env, fault, key, node, node_id, {"step": "stopped", "stopped_ns": time.time_ns()})
        if after is None and not running.cancel.is_set():
            raise FaultError(f"{fault}: controller {node_id} still a voter (or still leading) "
                             f"{opts['wait_s']:g} s after its removal was taken")


class AddController(MembershipChange):
    def inject(self, spec: FaultSpec, resolver: Resolver, env: FaultEnv, key: str) -> Injected:
        cluster, opts = env.cluster, spec.options
        before = voters_now(cluster, spec.fault)
        if spec.targets:
            node = resolver.node(spec.targets[0])
        else:
            outside = [n for n in cluster.nodes
                       if before.voter(kcfg.controller_id(cluster.settings, n.broker_id)) is None]
            if len(outside) != 1:
                raise FaultError(f"{spec.fault}: no target, and {len(outside)} nodes' controllers are not voters "
                                 f"(name one with target)")
            node = outside[0]
        node_id = kcfg.controller_id(cluster.settings, node.broker_id)
        if before.voter(node_id) is not None:
            raise FaultError(f"{spec.fault}: {node.name}'s controller (node {node_id}) is a voter already")
        self.launch(key, opts["wait_s"] + ASK_S + 3 * GRACEFUL_STOP_S,
                    lambda running: self._add(running, env, spec.fault, key, node, node_id, opts))
        return Injected(key, spec.fault, {"nodes": [node.name], "controller": node_id},
                        {"voters_before": before.to_json()})

    def _add(self, running: Running, env: FaultEnv, fault: str, key: str, node: Host, node_id: int,
             opts: Mapping[str, Any]) -> None:
        cluster = env.cluster
        directory = self._fresh(cluster, node)
        cluster.start(node, ROLE)
        self.note(env, fault, key, node, node_id, {"step": "observer", "directory_id": directory,
                                                   "started_ns": time.time_ns()})
        caught = _wait_voters(running, cluster, opts["wait_s"], lambda v: _caught_up(v, node_id, directory))
        if caught is None:
            if running.cancel.is_set():
                return
            raise FaultError(f"{fault}: controller {node_id} (directory {directory}) did not catch up as an "
                             f"observer within {opts['wait_s']:g} s")
        seen = caught.observer(node_id, directory)
        self.note(env, fault, key, node, node_id, {"step": "caught-up", "caught_up_ns": time.time_ns(),
                                                   "observer": None if seen is None else seen.to_json()})
        endpoint = (node.address, kcfg.CONTROLLER_PORT)
        asked = _change(cluster, fault, lambda a: wire.add_voter(a, kcfg.CONTROLLER_PORT, node_id, directory,
                                                                 endpoint),
                        lambda v: _is_voter(v, node_id, directory))
        self.note(env, fault, key, node, node_id, {"step": "asked", **asked})
        after = _wait_voters(running, cluster, opts["wait_s"], lambda v: _is_voter(v, node_id, directory))
        self.note(env, fault, key, node, node_id, {"step": "added", "done_ns": time.time_ns(),
                                                   "voters_after": None if after is None else after.to_json()})
        if after is None and not running.cancel.is_set():
            raise FaultError(f"{fault}: controller {node_id} not a voter {opts['wait_s']:g} s after it was asked")

    @staticmethod
    def _fresh(cluster: KafkaCluster, node: Host) -> str:
        """Stop the node's controller, empty its metadata directory and format it as a new replica of the same
        cluster; its new directory id."""
        cluster_id = meta_properties(cluster, node).get("cluster.id")
        if not cluster_id:
            raise FaultError(f"{node.name}'s controller {META} names no cluster.id")
        cluster.stop(node, ROLE, GRACEFUL_STOP_S)
        data = cluster.runtime.host_path(node, cluster.node_folder(node).data(ROLE))
        try:
            cluster.runtime.execute(node, ["find", data, "-mindepth", "1", "-delete"], timeout=60.0)
            format_process(cluster, node, ROLE, cluster_id, ["--no-initial-controllers"])
        except (RuntimeFailure, ClusterError) as exc:
            raise FaultError(f"formatting {node.name}'s controller afresh: {exc}") from exc
        directory = meta_properties(cluster, node).get("directory.id")
        if not directory:
            raise FaultError(f"{node.name}'s freshly formatted controller has no directory.id")
        return directory


def _is_voter(voters: wire.VoterSet, node_id: int, directory: str) -> bool:
    voter = voters.voter(node_id)
    return voter is not None and voter.directory_id == directory


def _caught_up(voters: wire.VoterSet, node_id: int, directory: str) -> bool:
    """The observer (node_id, directory) has fetched up to the leader's high watermark."""
    seen = voters.observer(node_id, directory)
    return seen is not None and voters.high_watermark is not None and seen.log_end_offset >= voters.high_watermark


REMOVE_CONTROLLER = RemoveController()
ADD_CONTROLLER = AddController()
