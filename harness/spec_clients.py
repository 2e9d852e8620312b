"""The spec's client under test (`clients.confluent_kafka`) and the clients `upgrade-client` rolls a process onto:
versions faultline can install, on a runtime that can run them (testbed.dist.clients builds their venvs when a run
starts, not here).
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
from testbed.runtime.kinds import KINDS, kind


def parse_client_under_test(raw: dict[str, Any] | None, runtime: str) -> str | None:
    """`clients.confluent_kafka`: a version faultline can install, on a runtime whose clients can run it."""
    version = (raw or {}).get("confluent_kafka")
    if version is None:
        return None
    try:
        parse_client(version)
    except DistributionError as exc:
        raise fail("clients.confluent_kafka", str(exc).removeprefix(f"confluent_kafka {version}: ")) from None
    refusal = venv_refusal(runtime)
    if refusal is not None:
        raise fail("clients.confluent_kafka", f"the {runtime} runtime cannot run a client under test: {refusal}")
    return str(version)


def clients_of(raw: dict[str, Any] | None, schedule: Schedule, cluster: ClusterSettings
               ) -> tuple[ClusterSettings, str | None]:
    """The client under test and the `upgrade-client` targets, checked against the runtime; the cluster's settings
    naming them all (`client_versions`: what a runtime whose client hosts make their own venvs prepares)."""
    client = parse_client_under_test(raw, cluster.runtime)
    check_client_upgrades(schedule, cluster.runtime)
    versions = tuple(dict.fromkeys([*([client] if client else []), *client_upgrades(schedule)]))
    return (dataclasses.replace(cluster, client_versions=versions) if versions else cluster), client


def venv_refusal(runtime: str) -> str | None:
    """Why `runtime` cannot run a client venv and which runtimes can, or None when it can."""
    refusal = kind(runtime).no_client_venvs
    return None if refusal is None else \
        f"{refusal} (use --runtime {' or '.join(k.name for k in KINDS if k.no_client_venvs is None)})"


UPGRADE_CLIENT = "upgrade-client"


def client_upgrades(schedule: Schedule) -> list[str]:
    """The confluent-kafka versions the schedule's `upgrade-client` faults roll processes onto, each once."""
    return list(dict.fromkeys(f.options["to_version"] for _, f in schedule.faults() if f.fault == UPGRADE_CLIENT))


def check_client_upgrades(schedule: Schedule, runtime: str) -> None:
    """SpecError naming the fault when an `upgrade-client` runs on a runtime that cannot run a client venv."""
    refusal = venv_refusal(runtime)
    for i, fault in schedule.faults():
        if fault.fault == UPGRADE_CLIENT and refusal is not None:
            raise fail(f"nemesis[{i}].fault", f"upgrade-client: the {runtime} runtime cannot run another client: "
                       f"{refusal}")
