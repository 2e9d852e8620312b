"""The spec's client under test (`clients.confluent_kafka`): a version faultline can install, on a runtime
that can run it (testbed.dist.clients builds its venv when a run starts, not here).
Must never: build, fetch or start anything.
"""

from __future__ import annotations

from typing import Any

from harness.spec_types import fail
from testbed.dist.clients import parse_client
from testbed.errors import DistributionError
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
    refusal = kind(runtime).no_client_venvs
    if refusal is not None:
        raise fail("clients.confluent_kafka", f"the {runtime} runtime cannot run a client under test: {refusal} "
                    f"(use --runtime {' or '.join(k.name for k in KINDS if k.no_client_venvs is None)})")
    return str(version)
