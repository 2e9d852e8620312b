"""librdkafka #4208's mechanism alone, per client version, on librdkafka's in-process mock cluster (no Kafka).

What scenarios/versions/batch-consume-skip.yaml shows on a real cluster through rebalances, here through the
application's own pause and resume (tests/scenarios/batch_pause_probe.py, run by each client under test's venv):
up to 1.9.2 a pause of partition 0 in the middle of a consume(n) call skips records of both partitions (the
batch's messages of every partition purged, their positions already advanced), 2.0.x only those of the paused
partition (2.0.0 restricted the purge to it), 2.1.0 on none (#4208: positions advanced only for what the call
returns). Installs each client's venv on first use (marker network); kept out of `make test` (marker versions).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from testbed.dist.clients import ensure_client

pytestmark = [pytest.mark.network, pytest.mark.versions]
PROBE = Path(__file__).with_name("batch_pause_probe.py")


@pytest.mark.parametrize(("client", "skipping"), [("1.9.2", {"0", "1"}), ("2.0.2", {"0"}), ("2.1.0", set())])
def test_a_pause_in_the_middle_of_a_batch_skips_records_only_before_2_1_0(client: str, skipping: set[str]) -> None:
    env = ensure_client(client)
    proc = subprocess.run([*env.python, str(PROBE)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.splitlines()[-1])
    assert result["librdkafka"] == client and result["read"] > 1000, result
    assert {p for p, n in result["skipped"].items() if n} == skipping, result
    assert not any(result["repeated"].values()), result
