"""KRaft's `metadata.version` feature: its levels, each release's own, and which downgrades Kafka lets through.

A KRaft cluster's brokers and controllers speak the features the finalized `metadata.version` level allows; a
rolling upgrade leaves it where it was (the old release's level) until an operator bumps it once every node runs the
new release (3.9's upgrade notes, "Upgrading KRaft-based clusters": roll the nodes, then `bin/kafka-features.sh
upgrade --metadata 3.9`; a separate step). A node cannot run below the finalized level: a rolling downgrade onto a
release must first lower the level to that release's, and Kafka's controller lowers it only when no level between
the two changed the metadata's form (`FeatureControlManager.updateMetadataVersion`: a "safe" downgrade when
`MetadataVersion.checkIfMetadataChanged` is false, else "Refusing to perform the requested downgrade because it might
delete metadata information"; `--unsafe` is "not supported in this version", 3.9 and 4.1 alike).

Confirmed from the jars in faultline's cache (kafka-server-common's `MetadataVersion.values()` with `featureLevel`,
`version`, `didMetadataChange`, and `LATEST_PRODUCTION`, run through jshell; the controller's words from
kafka-metadata's FeatureControlManager bytecode): 3.7.2's newest production level is 3.7-IV4 (19), 3.9.1's 3.9-IV0
(21), 4.1.1's 4.1-IV1 (27); 3.9.1's `checkIfMetadataChanged(3.9-IV0, 3.7-IV4)` is false (a safe downgrade) and
`(3.9-IV0, 3.6-IV2)` true. The `changed` flags are 4.1.1's table; older jars flag some then-unreleased levels
differently (3.7.2's calls 3.8-IV0 changed, 3.9.1's calls 4.0-IV0 changed): a downgrade is decided by the newer
release's controller, whose table this is for every released level from 3.9 on. Each release's own level is the
newest IV of its major.minor (the rule LATEST_PRODUCTION follows in 3.7.2, 3.9.1 and 4.1.1).
Must never: fetch, start or write anything (pure data and lookups).
"""

from __future__ import annotations

from dataclasses import dataclass

from testbed.dist.versions import KRAFT_SINCE, parse
from testbed.errors import DistributionError


@dataclass(frozen=True)
class Level:
    """One `metadata.version` level: its feature level, its name and whether it changed the metadata's form."""

    level: int
    name: str  # "3.9-IV0"
    changed: bool

    @property
    def release(self) -> tuple[int, int]:
        major, minor = self.name.split("-")[0].split(".")
        return int(major), int(minor)


# 4.1.1's MetadataVersion from 3.3-IV3 (the lowest a 4.x node runs; every KRaft release faultline runs formats at its
# own level, 3.3-IV3 or later) to 4.1-IV1; 4.2's levels are not production in 4.1.1.
LEVELS: tuple[Level, ...] = tuple(Level(n, name, changed) for n, name, changed in (
    (7, "3.3-IV3", True), (8, "3.4-IV0", True), (9, "3.5-IV0", False), (10, "3.5-IV1", False),
    (11, "3.5-IV2", True), (12, "3.6-IV0", False), (13, "3.6-IV1", True), (14, "3.6-IV2", True),
    (15, "3.7-IV0", True), (16, "3.7-IV1", False), (17, "3.7-IV2", True), (18, "3.7-IV3", False),
    (19, "3.7-IV4", False), (20, "3.8-IV0", False), (21, "3.9-IV0", False), (22, "4.0-IV0", False),
    (23, "4.0-IV1", True), (24, "4.0-IV2", False), (25, "4.0-IV3", False), (26, "4.1-IV0", False),
    (27, "4.1-IV1", False)))


def release_level(version: str) -> Level:
    """The `metadata.version` a KRaft node of Kafka `version` is formatted at and bumps to: its release's newest
    level; DistributionError (one line) for a version without KRaft or newer than the table."""
    parts = parse(version)
    if parts < KRAFT_SINCE:
        raise DistributionError(f"Kafka {version} has no KRaft metadata.version (KRaft from 3.3)")
    mine = [lv for lv in LEVELS if lv.release == parts[:2]]
    if not mine:
        raise DistributionError(f"Kafka {version}: faultline does not know its metadata.version levels (the table "
                                f"ends at {LEVELS[-1].name})")
    return mine[-1]


def named(name: str) -> Level | None:
    """The level called `name` ("3.9-IV0"), None if the table has none by that name."""
    return next((lv for lv in LEVELS if lv.name == name), None)


def downgrade_problem(high: Level, low: Level) -> str | None:
    """Why Kafka's controller refuses to lower metadata.version from `high` to `low`, in a few words; None when it
    lets the downgrade through (no level above `low` up to `high` changed the metadata's form)."""
    changing = [lv.name for lv in LEVELS if low.level < lv.level <= high.level and lv.changed]
    if not changing:
        return None
    return (f"metadata.version {high.name} cannot be lowered to {low.name}: {', '.join(changing)} changed the "
            f"metadata's form and Kafka refuses that downgrade (\"it might delete metadata information\"; an unsafe "
            f"downgrade is not supported)")
