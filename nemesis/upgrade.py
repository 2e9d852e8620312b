"""`rolling-upgrade` and `rolling-downgrade`: `rolling-restart`'s roll with each process started on another Kafka version.

ZooKeeper mode, as Kafka's upgrade notes prescribe (`testbed.dist.versions.upgrade_pins`): the first roll starts each
broker on the new version with `inter.broker.protocol.version` (and, from before 2.4, `log.message.format.version`)
pinned to the old version, so that upgraded and old brokers keep talking the old protocol; once every broker runs the
new version, a second roll (`bump`, the default) starts each again with the protocol bumped to the new version's. The
ZooKeeper servers stay on the cluster's version.
KRaft, as 3.9's notes ("Upgrading KRaft-based clusters") and Kafka's own kraft upgrade system test do it: a roll of
the controllers (the active one last), then a roll of the brokers, then, with `bump`, the finalized `metadata.version`
raised to the new release's level (`kafka-features upgrade`, a separate step: until then every node speaks the old
level, so a downgrade stays open). Combined KRaft nodes have one roll.
`rolling-downgrade` goes the other way: ZooKeeper mode, each broker started on the older version with the protocol
(and format) that is in force kept, which Kafka allows only while they are pinned at or below the older version;
KRaft, the finalized metadata.version first lowered to the older release's level where it is above it (a safe
downgrade only, `testbed.dist.metadata_versions`) and every metadata log then waited for to hold a snapshot past the
lowering (`testbed.kafka.snapshots`: an older release replays the log after its newest snapshot, and would read the
raised level there), then the brokers, then the controllers. The harness refuses what
the notes forbid before anything starts (`harness.spec_checks.check_upgrades`).
Between a process's clean stop and its start its configuration is rendered again for its version
(`KafkaCluster.set_broker`, `set_controller`). Each step's `info` row names the version (and protocol) the process
started on, its role and which roll it was (`targets`: `version`, `inter_broker_protocol`, `role`, `roll`); a
metadata.version change is its own `info` row (`metadata_version`, `finalized`), so `versions_over_time` reads from
the journal which version each process ran at each moment (run.json's `node_versions`, the report's versions lane).

Must never: change a running process's files, or start one on a version the spec checks did not let through; ask
Kafka for an unsafe metadata.version downgrade.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nemesis.fault_base import FaultEnv, Injected
from nemesis.operations import RollingRestart, Running, roll_order
from testbed.dist.metadata_versions import named, release_level
from testbed.dist.versions import FORMAT_KEY, PROTOCOL_KEY, protocol_version, upgrade_pins
from testbed.errors import ClusterError
from testbed.kafka.features import TOOL_TIMEOUT_S, finalized_metadata_version, set_metadata_version
from testbed.kafka.snapshots import high_watermark, wait_snapshots_past

if TYPE_CHECKING:
    from nemesis.fault_spec import FaultSpec
    from nemesis.targets import Resolver
    from testbed.addressing import Host
    from testbed.kafka.cluster import KafkaCluster, NodeRole

FAULT = "rolling-upgrade"
DOWNGRADE = "rolling-downgrade"
SNAPSHOT_WAIT_S = 60.0  # for every metadata log's snapshot past a lowering (they come every 5 s)


def controller_now(cluster: KafkaCluster) -> int | None:
    """The controller most answering brokers name now (None: none answers)."""
    named = Counter(v.controller for v in cluster.views().values() if v is not None and v.controller is not None)
    return named.most_common(1)[0][0] if named else None


@dataclass(frozen=True)
class Roll:
    """One roll of a version change: every node's `role` process started on the new version with `overrides`."""

    number: int
    role: NodeRole
    overrides: Mapping[str, str]


def pins_in_force(cluster: KafkaCluster, node: Host) -> dict[str, str]:
    """The protocol (and format) `node`'s broker runs with now: its server.properties' pins, or its version's own."""
    text = cluster.node_folder(node).config("broker").read_text()
    props = dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#"))
    pins = {PROTOCOL_KEY: props.get(PROTOCOL_KEY, protocol_version(cluster.broker_version(node)))}
    if FORMAT_KEY in props:
        pins[FORMAT_KEY] = props[FORMAT_KEY]
    return pins


def plan(cluster: KafkaCluster, node: Host, new: str, opts: Mapping[str, Any], down: bool) -> list[Roll]:
    """The rolls of a change from `node`'s broker version to `new` (see the module docstring)."""
    if not cluster.settings.kraft:
        if down:
            return [Roll(1, "broker", pins_in_force(cluster, node))]
        rolls = [Roll(1, "broker", upgrade_pins(cluster.broker_version(node)))]
        return rolls + [Roll(2, "broker", {PROTOCOL_KEY: protocol_version(new)})] if opts["bump"] else rolls
    roles: list[NodeRole] = ["controller", "broker"] if "controller" in cluster.roles else ["broker"]
    return [Roll(i + 1, role, {}) for i, role in enumerate(reversed(roles) if down else roles)]


class RollingUpgrade(RollingRestart):
    """A roll onto `to_version`; `down` (rolling-downgrade) onto an older one."""

    def __init__(self, fault: str) -> None:
        super().__init__()
        self.fault, self.down = fault, fault == DOWNGRADE

    def inject(self, spec: FaultSpec, resolver: Resolver, env: FaultEnv, key: str) -> Injected:
        cluster, opts = env.cluster, spec.options
        controller, order = self.order(spec, resolver, cluster)
        old, new = cluster.broker_version(order[0]), opts["to_version"]
        rolls = plan(cluster, order[0], new, opts, self.down)
        metadata = cluster.settings.kraft and (self.down or opts["bump"])
        self.launch(key, self.per_roll_s(cluster, opts, order) * len(rolls)
                    + (3 * TOOL_TIMEOUT_S + SNAPSHOT_WAIT_S * self.down) * metadata,
                    lambda running: self._change(running, env, key, order, opts, rolls))
        targets: dict[str, Any] = {"brokers": [n.broker_id for n in order], "controller": controller,
                                   "from_version": old, "to_version": new, "down": self.down}
        if cluster.settings.kraft:
            targets["metadata_version"] = release_level(new).name if metadata else None
        else:
            targets["pinned"] = dict(rolls[0].overrides)
            targets["bumped_to"] = rolls[-1].overrides[PROTOCOL_KEY] if len(rolls) > 1 else None
        detail = {"order": [n.name for n in order], "roles": [r.role for r in rolls], "wait": opts["wait"],
                  "wait_s": opts["wait_s"]}
        return Injected(key, spec.fault, targets, detail, tuple(dict.fromkeys((n.name, r.role) for r in rolls for n in order)))

    def _change(self, running: Running, env: FaultEnv, key: str, order: list[Host], opts: Mapping[str, Any],
                rolls: list[Roll]) -> None:
        cluster, version = env.cluster, opts["to_version"]
        kraft = cluster.settings.kraft
        if kraft and self.down:  # the older release cannot run above its own level: lowered first
            self._metadata(env, key, order[-1], version)
        for roll in rolls:
            if roll.number > 1:  # the controller may have moved in the first roll: it comes at its place again
                controller = controller_now(cluster)
                order = order if controller is None else roll_order(order, controller, opts["controller_at"])

            def while_down(node: Host, roll: Roll = roll) -> dict[str, Any]:
                if roll.role == "controller":
                    cluster.set_controller(node, version)
                else:
                    cluster.set_broker(node, version, dict(roll.overrides))
                return {"version": version, "roll": roll.number, "role": roll.role,
                        "inter_broker_protocol": roll.overrides.get(PROTOCOL_KEY)}

            if not self._roll(running, env, self.fault, key, order, opts, while_down, roll.role):
                return
        if kraft and not self.down and opts["bump"] and not running.cancel.is_set():
            self._metadata(env, key, order[-1], version)

    def _metadata(self, env: FaultEnv, key: str, node: Host, version: str) -> None:
        """Set the finalized metadata.version to `version`'s release level (raise it, or lower it where above),
        journaled as one `info` row with the level the cluster names afterwards; ClusterError if Kafka refuses or
        the cluster then names another level."""
        cluster, want = env.cluster, release_level(version)
        before = finalized_metadata_version(cluster, node)
        asked = time.time_ns()
        now = named(before) if before is not None else None
        low_enough = self.down and now is not None and now.level <= want.level  # nothing to lower
        finalized = before if low_enough else set_metadata_version(cluster, node, want.level, downgrade=self.down)
        lowering = self.down and not low_enough
        reached = named(finalized) if finalized is not None else None
        done, snapshots = time.time_ns(), {}
        if lowering and reached is not None and reached.level <= want.level:
            snapshots = self._snapshots(cluster)  # before any process starts on the older release
        if env.journal is not None:
            env.journal.write("info", self.fault, {"metadata_version": want.name, "level": want.level,
                                                   "down": self.down, "nodes": [node.name]},
                              {"name": key, "before": before, "finalized": finalized, "asked_ns": asked,
                               "done_ns": done, **snapshots})
        if reached is None or (reached.level > want.level if self.down else reached.level != want.level):
            raise ClusterError(f"metadata.version is {finalized} after asking Kafka for {want.name} "
                               f"(feature level {want.level})")

    @staticmethod
    def _snapshots(cluster: KafkaCluster) -> dict[str, Any]:
        """Wait until every metadata log holds a snapshot past the lowering (testbed.kafka.snapshots): the journal's
        `snapshot_past` (the high watermark then), `snapshots` (each log's newest) and `snapshot_wait_s`."""
        started = time.monotonic()
        past = high_watermark(cluster)
        if past is None:
            raise ClusterError("no active KRaft controller answers DescribeQuorum after lowering metadata.version")
        found = wait_snapshots_past(cluster, past, SNAPSHOT_WAIT_S)
        return {"snapshot_past": past, "snapshots": found, "snapshot_wait_s": round(time.monotonic() - started, 3)}


ROLLING_UPGRADE = RollingUpgrade(FAULT)
ROLLING_DOWNGRADE = RollingUpgrade(DOWNGRADE)


def versions_over_time(rows: Iterable[Mapping[str, Any]], version: str, since_ns: int) -> dict[str, list[dict[str, Any]]]:
    """Each rolled process's versions as a list of {from_ns, version, inter_broker_protocol}, from the nemesis
    journal's rows: `version` (the cluster's) from `since_ns`, then each `rolling-upgrade` or `rolling-downgrade` step
    from the moment its process started again (its row's `started_ns`). A broker is named by its node, a KRaft
    controller as `<node>/controller`. The protocol is null where the broker ran its version's default (and on
    KRaft). Processes come from the operations' start rows (their `order` and `roles`); empty without one."""
    rows = [r for r in rows if r.get("fault") in (FAULT, DOWNGRADE) and isinstance(r.get("detail"), dict)]
    lanes = [_lane(n, role) for r in rows if r.get("type") == "start" for role in r["detail"].get("roles") or
             ["broker"] for n in r["detail"].get("order") or []]
    out: dict[str, list[dict[str, Any]]] = {lane: [{"from_ns": since_ns, "version": version,
                                                    "inter_broker_protocol": None}] for lane in dict.fromkeys(lanes)}
    steps = [r for r in rows if r.get("type") == "info" and isinstance(r.get("targets"), dict)
             and "version" in r["targets"] and isinstance(r["detail"].get("started_ns"), int)]
    for row in sorted(steps, key=lambda r: r["detail"]["started_ns"]):
        for node in row["targets"].get("nodes") or []:
            out.setdefault(_lane(node, row["targets"].get("role", "broker")), []).append(
                {"from_ns": row["detail"]["started_ns"], "version": row["targets"]["version"],
                 "inter_broker_protocol": row["targets"].get("inter_broker_protocol")})
    return out


def _lane(node: str, role: str) -> str:
    return node if role == "broker" else f"{node}/{role}"
