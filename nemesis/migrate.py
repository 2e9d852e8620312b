"""`zk-to-kraft`: a ZooKeeper cluster migrated to KRaft under load (KIP-866, Kafka 3.4 to 3.9), as one operation.

The phases of testbed.kafka.migration, in turn, each journaled: `controllers` (a KRaft controller per node,
formatted with ZooKeeper's cluster id and started in migration mode; an `info` row once the quorum has an
active controller), `migrating` (`rolling-restart`'s roll, each broker started again in ZooKeeper mode with the
migration keys; a row per broker), `migrated` (a row once the active controller's server.log says the metadata
was migrated: bounded by `wait_s`, past which the operation stops there and says so), `kraft` (a second roll,
each broker started as a KRaft broker; a row per broker) and `finalized` (each controller restarted without the
migration keys, the active one last, the quorum waited for after each; a row per controller). Every row names
the phase and, for a node, what its broker and controller run from then on (`broker_mode`: `zookeeper`,
`migrating`, `kraft`; `controller_mode`: `migrating`, `kraft`), which `modes_over_time` reads back for run.json's
`node_modes`. The version stays the cluster's (the notes advise against upgrading during a migration).

Must never: start a phase before the previous one is done, or leave a broker or controller it stopped down.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from nemesis.fault_base import FaultEnv, Injected
from nemesis.faults import GRACEFUL_STOP_S
from nemesis.operations import POLL_S, RollingRestart, Running
from testbed.errors import ClusterError
from testbed.kafka import kraft, migration

if TYPE_CHECKING:
    from nemesis.fault_spec import FaultSpec
    from nemesis.targets import Resolver
    from testbed.addressing import Host
    from testbed.kafka.cluster import KafkaCluster

FAULT = "zk-to-kraft"
PHASES = ("controllers", "migrating", "migrated", "kraft", "finalized")


class ZkToKraft(RollingRestart):
    def inject(self, spec: FaultSpec, resolver: Resolver, env: FaultEnv, key: str) -> Injected:
        cluster, opts = env.cluster, spec.options
        controller, order = self.order(spec, resolver, cluster)
        quorum_s = GRACEFUL_STOP_S + opts["wait_s"]  # a controller's restart, or the first quorum, or the migration
        bound = 2 * self.per_roll_s(cluster, opts, order) + (2 + len(order)) * quorum_s
        self.launch(key, bound, lambda running: self._migrate(running, env, key, order, opts))
        targets = {"brokers": [n.broker_id for n in order], "controller": controller,
                   "version": cluster.settings.kafka_version, "phases": list(PHASES)}
        detail = {"order": [n.name for n in order], "wait": opts["wait"], "wait_s": opts["wait_s"]}
        return Injected(key, spec.fault, targets, detail, tuple((n.name, "broker") for n in order))

    def _migrate(self, running: Running, env: FaultEnv, key: str, order: list[Host], opts: Mapping[str, Any]) -> None:
        cluster, version = env.cluster, env.cluster.settings.kafka_version
        began = time.time_ns()
        active = migration.start_controllers(cluster, opts["wait_s"])
        self._phase(env, key, "controllers", began, cluster.nodes, {"controller_mode": "migrating"},
                    {"active_controller": active})
        keys = migration.migrating_broker_keys(cluster.plan, cluster.settings, version)

        def to_migrating(node: Host) -> dict[str, Any]:
            cluster.set_broker(node, version, keys)
            return {"phase": "migrating", "broker_mode": "migrating"}

        began = time.time_ns()
        cluster.migration_phase = "migrating"
        if not self._roll(running, env, FAULT, key, order, opts, to_migrating):
            return
        where = self._wait_migrated(running, cluster, opts["wait_s"])
        if where is None:
            self._phase(env, key, "migrated", began, [], {}, {
                "aborted": f"no controller's server.log said {migration.MIGRATED_LINE!r} within {opts['wait_s']:g} s "
                           f"of the last broker's start"})
            return
        cluster.migration_phase = "migrated"
        self._phase(env, key, "migrated", began, [], {}, {"controller_node": where})

        def to_kraft(node: Host) -> dict[str, Any]:
            cluster.set_broker(node, version, {}, kraft=True)
            return {"phase": "kraft", "broker_mode": "kraft"}

        cluster.migration_phase = "kraft"
        if not self._roll(running, env, FAULT, key, order, opts, to_kraft):
            return
        cluster.migration_phase = "finalized"
        self._finalize(running, env, key, opts["wait_s"])

    @staticmethod
    def _wait_migrated(running: Running, cluster: KafkaCluster, wait_s: float) -> str | None:
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and not running.cancel.is_set():
            where = migration.migrated(cluster)
            if where is not None:
                return where
            running.sleep(POLL_S)
        return None

    def _finalize(self, running: Running, env: FaultEnv, key: str, wait_s: float) -> None:
        """Each controller restarted without the migration keys, the active one last, the quorum whole after each."""
        cluster = env.cluster
        active = kraft.active_controller(cluster.settings, kraft.quorum_views(cluster))
        for node in sorted(cluster.nodes, key=lambda n: n.broker_id == active):
            if running.cancel.is_set():
                return
            began = time.time_ns()
            cluster.stop(node, "controller", GRACEFUL_STOP_S)
            try:
                migration.write_controller_config(cluster, node, migrating=False)
            finally:
                if cluster.process(node, "controller") is None:
                    cluster.start(node, "controller")
            try:
                leader = migration.wait_rejoined(cluster, node, wait_s, POLL_S)
            except ClusterError as exc:
                self._phase(env, key, "finalized", began, [node], {"controller_mode": "kraft"},
                            {"aborted": str(exc)})
                return
            self._phase(env, key, "finalized", began, [node], {"controller_mode": "kraft"},
                        {"active_controller": leader})

    @staticmethod
    def _phase(env: FaultEnv, key: str, phase: str, began_ns: int, nodes: Iterable[Host], modes: dict[str, str],
               detail: dict[str, Any]) -> None:
        """One phase's `info` row (`nodes`: the nodes whose processes it changed, and what they run now)."""
        if env.journal is not None:
            env.journal.write("info", FAULT, {"phase": phase, "nodes": [n.name for n in nodes], **modes},
                              {"name": key, "began_ns": began_ns, "started_ns": time.time_ns(), **detail})


ZK_TO_KRAFT = ZkToKraft()


def modes_over_time(rows: Iterable[Mapping[str, Any]], since_ns: int) -> dict[str, list[dict[str, Any]]]:
    """Each migrated node's {from_ns, broker, controller} (its broker's mode, its controller's or None) from the
    nemesis journal's `zk-to-kraft` rows: ZooKeeper mode from `since_ns`, then each row that changed the node, from
    its `started_ns`. Empty without a migration."""
    rows = [r for r in rows if r.get("fault") == FAULT and isinstance(r.get("detail"), dict)
            and isinstance(r.get("targets"), dict)]
    nodes = [n for r in rows if r.get("type") == "start" for n in r["detail"].get("order") or []]
    out: dict[str, list[dict[str, Any]]] = {n: [{"from_ns": since_ns, "broker": "zookeeper", "controller": None}]
                                            for n in dict.fromkeys(nodes)}
    steps = [r for r in rows if r.get("type") == "info" and isinstance(r["detail"].get("started_ns"), int)
             and ("broker_mode" in r["targets"] or "controller_mode" in r["targets"])]
    for row in sorted(steps, key=lambda r: r["detail"]["started_ns"]):
        for node in row["targets"].get("nodes") or []:
            now = dict(out.setdefault(node, [{"from_ns": since_ns, "broker": "zookeeper", "controller": None}])[-1])
            now["from_ns"] = row["detail"]["started_ns"]
            now["broker"] = row["targets"].get("broker_mode", now["broker"])
            now["controller"] = row["targets"].get("controller_mode", now["controller"])
            out[node].append(now)
    return out
