"""`rolling-upgrade`: `rolling-restart`'s roll with each broker started on a second Kafka version.

As Kafka's upgrade notes prescribe for a ZooKeeper-mode cluster (`testbed.dist.versions.upgrade_pins`): the first
roll starts each broker on the new version with `inter.broker.protocol.version` (and, from before 2.4,
`log.message.format.version`) pinned to the old version, so that upgraded and old brokers keep talking the old
protocol; once every broker runs the new version, a second roll (`bump`, the default) starts each again with the
protocol bumped to the new version's. Between a broker's clean stop and its start its server.properties is
rendered again for the new version and its keys (`KafkaCluster.set_broker`); the ZooKeeper servers stay on the
cluster's version. Each step's `info` row names the version and protocol the broker started on and which roll it
was (`targets`: `version`, `inter_broker_protocol`, `roll`), so `versions_over_time` reads from the journal which
version each node ran at each moment (run.json's `node_versions`, the report's fault table).

Must never: change a running broker's files, or start a broker on a version the spec checks did not let through
(the harness refuses a downgrade, KRaft, and a runtime that cannot host a second version, before anything starts).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from nemesis.fault_base import FaultEnv, Injected
from nemesis.operations import RollingRestart, Running, roll_order
from testbed.dist.versions import protocol_version, upgrade_pins

if TYPE_CHECKING:
    from nemesis.fault_spec import FaultSpec
    from nemesis.targets import Resolver
    from testbed.addressing import Host
    from testbed.kafka.cluster import KafkaCluster

FAULT = "rolling-upgrade"
PROTOCOL_KEY = "inter.broker.protocol.version"


def controller_now(cluster: KafkaCluster) -> int | None:
    """The controller most answering brokers name now (None: none answers)."""
    named = Counter(v.controller for v in cluster.views().values() if v is not None and v.controller is not None)
    return named.most_common(1)[0][0] if named else None


class RollingUpgrade(RollingRestart):
    def inject(self, spec: FaultSpec, resolver: Resolver, env: FaultEnv, key: str) -> Injected:
        cluster, opts = env.cluster, spec.options
        controller, order = self.order(spec, resolver, cluster)
        old, new = cluster.settings.kafka_version, opts["to_version"]
        rolls = [(1, upgrade_pins(old))]
        if opts["bump"]:
            rolls.append((2, {PROTOCOL_KEY: protocol_version(new)}))
        self.launch(key, self.per_roll_s(cluster, opts, order) * len(rolls),
                    lambda running: self._upgrade(running, env, key, order, opts, rolls))
        targets = {"brokers": [n.broker_id for n in order], "controller": controller, "from_version": old,
                   "to_version": new, "pinned": rolls[0][1], "bumped_to": rolls[-1][1][PROTOCOL_KEY]
                   if opts["bump"] else None}
        detail = {"order": [n.name for n in order], "wait": opts["wait"], "wait_s": opts["wait_s"]}
        return Injected(key, spec.fault, targets, detail, tuple((n.name, "broker") for n in order))

    def _upgrade(self, running: Running, env: FaultEnv, key: str, order: list[Host], opts: Mapping[str, Any],
                 rolls: list[tuple[int, dict[str, str]]]) -> None:
        cluster, version = env.cluster, opts["to_version"]
        for roll, overrides in rolls:
            if roll > 1:  # the controller may have moved in the first roll: it comes at its place again
                controller = controller_now(cluster)
                order = order if controller is None else roll_order(order, controller, opts["controller_at"])

            def while_down(node: Host, roll: int = roll, overrides: dict[str, str] = overrides) -> dict[str, Any]:
                cluster.set_broker(node, version, overrides)
                return {"version": version, "roll": roll, "inter_broker_protocol": overrides[PROTOCOL_KEY]}

            if not self._roll(running, env, FAULT, key, order, opts, while_down):
                return


ROLLING_UPGRADE = RollingUpgrade()


def versions_over_time(rows: Iterable[Mapping[str, Any]], version: str, since_ns: int) -> dict[str, list[dict[str, Any]]]:
    """Each rolled node's broker versions as a list of {from_ns, version, inter_broker_protocol}, from the nemesis
    journal's rows: `version` (the cluster's) from `since_ns`, then each `rolling-upgrade` step from the moment its
    broker started again (its row's `started_ns`). The protocol is null where the broker ran its version's default.
    Nodes come from the upgrades' start rows (their `order`); empty without an upgrade."""
    rows = list(rows)
    mine = [r for r in rows if r.get("fault") == FAULT and isinstance(r.get("detail"), dict)]
    nodes = [n for r in mine if r.get("type") == "start" for n in r["detail"].get("order") or []]
    out: dict[str, list[dict[str, Any]]] = {n: [{"from_ns": since_ns, "version": version,
                                                  "inter_broker_protocol": None}] for n in dict.fromkeys(nodes)}
    steps = [r for r in mine if r.get("type") == "info" and isinstance(r.get("targets"), dict)
             and "version" in r["targets"] and isinstance(r["detail"].get("started_ns"), int)]
    for row in sorted(steps, key=lambda r: r["detail"]["started_ns"]):
        for node in row["targets"].get("nodes") or []:
            out.setdefault(node, []).append({"from_ns": row["detail"]["started_ns"],
                                             "version": row["targets"]["version"],
                                             "inter_broker_protocol": row["targets"].get("inter_broker_protocol")})
    return out
