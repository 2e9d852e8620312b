"""isr-expansion-lost (KAFKA-12686) on a real cluster: Kafka 2.7.2 never takes the follower back into the ISR, 3.0.2
does.

`make test-versions` (marker `versions`), not `make test`. Each configuration's expectation is in the spec (2.7.2:
the verdict unknown, writes refused; 3.0.2: settled, nothing lost); the run's exit status is 0 only when every
configuration passes (3.0.2 only when its run hit the race window: without that evidence the run is INCONCLUSIVE, exit
4, and so is this test's failure). Here the stall is also read from the verdict's reason and the leader's own log.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import REPO, run_passing

pytestmark = [pytest.mark.cluster, pytest.mark.versions]
SPEC = REPO / "scenarios" / "versions" / "isr-expansion-lost.yaml"


@pytest.mark.parametrize(("configuration", "stalls"), [("kafka-2-7-2", True), ("kafka-3-0-2", False)])
def test_an_isr_expansion_in_flight_to_a_dying_controller_is_lost_before_3_0(
        tmp_path: Path, configuration: str, stalls: bool) -> None:
    run_dir, verdict = run_passing(SPEC, tmp_path, configuration=configuration, timeout=1200)
    reason = verdict.get("reason", "")
    # The leader, broker-0, is alone in its ISR to the end: the reason names it (testbed.kafka.settle).
    assert ("faultline-0 leader 0, ISR [0] of 3 replicas" in reason) == stalls, reason
    assert (verdict["valid"] == "unknown") == stalls, verdict["valid"]
    leader_log = (run_dir / "nodes" / "az1-node" / "logs" / "broker" / "server.log").read_text()
    # 3.0.2 takes the follower back (broker-1 rejoins, then broker-2); 2.7.2 never does after the controller's death.
    taken_back = "[Partition faultline-0 broker=0] ISR updated" in leader_log  # 2.7: "from AlterIsr to", later "to"
    assert taken_back != stalls
    if not stalls:  # the fix was shown on the race, not on a run that missed it (expect.logs' precondition)
        observed = verdict["expectation"]["observed"]
        assert re.search(r"broker-0's AlterIsr in flight when the new controller's LeaderAndIsr came: [1-9]\d* line", observed), observed
