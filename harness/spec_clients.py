"""The spec's client under test (`clients.confluent_kafka`) and the clients `upgrade-client` rolls a process onto:
versions faultline can install (testbed.dist.clients builds their venvs when a run starts, not here; every runtime
runs them: netns where they are, docker and docker-existing put into faultline's client containers, ssh made on
each client host).
Must never: build, fetch or start anything.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from harness.spec_types import fail
from nemesis.schedule import Schedule
from testbed.dist.clients import parse_client
from testbed.errors import DistributionError
from testbed.kafka.config import ClusterSettings


def parse_client_under_test(raw: dict[str, Any] | None) -> str | None:
    """`clients.confluent_kafka`: a version faultline can install."""
    version = (raw or {}).get("confluent_kafka")
    if version is None:
        return None
    try:
        parse_client(version)
    except DistributionError as exc:
        raise fail("clients.confluent_kafka", str(exc).removeprefix(f"confluent_kafka {version}: ")) from None
    return str(version)


def clients_of(raw: dict[str, Any] | None, schedule: Schedule, cluster: ClusterSettings
               ) -> tuple[ClusterSettings, str | None]:
    """The client under test and the `upgrade-client` targets; the cluster's settings naming them all
    (`client_versions`: what a runtime whose client hosts make their own venvs prepares)."""
    client = parse_client_under_test(raw)
    versions = tuple(dict.fromkeys([*([client] if client else []), *client_upgrades(schedule)]))
    return (dataclasses.replace(cluster, client_versions=versions) if versions else cluster), client


UPGRADE_CLIENT = "upgrade-client"


def client_upgrades(schedule: Schedule) -> list[str]:
    """The confluent-kafka versions the schedule's `upgrade-client` faults roll processes onto, each once."""
    return list(dict.fromkeys(f.options["to_version"] for _, f in schedule.faults() if f.fault == UPGRADE_CLIENT))

