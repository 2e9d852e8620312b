"""On docker: a node powered off and on during a partition comes back partitioned (its restarted container has
a fresh network namespace; the nemesis gives it the rules again before its processes start), and the power cut
dropped what it had not fsynced (its data directories on unsyncfs, mounted on this machine and bound in)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nemesis.nemesis import Nemesis
from testbed.kafka.config import ClusterSettings
from testbed.lifecycle import provision
from testbed.runtime import unsynced
from tests.nemesis.power_cycle import assert_partition_survives_power_cycle

pytestmark = [pytest.mark.docker, pytest.mark.catalogue]  # `make test-docker`, not `make test` (~45 s)


@pytest.fixture
def nemesis(tmp_path: Path) -> Iterator[Nemesis]:
    settings = ClusterSettings(runtime="docker", network="198.19.0.0/25")
    with provision(settings, tmp_path / "run") as (cluster, runtime):
        mounts = [s for s in unsynced.mounted().values() if s.startswith(runtime.prefix)]
        assert len(mounts) == 2 * len(cluster.nodes), mounts  # each node's ZooKeeper and Kafka data
        nem = Nemesis(cluster, runtime, tmp_path / "nemesis.jsonl", seed=42)
        try:
            yield nem
        finally:
            nem.heal_all()
            nem.close()
    assert not [s for s in unsynced.mounted().values() if s.startswith(runtime.prefix)]


def test_a_node_powered_off_and_on_during_a_partition_comes_back_partitioned(nemesis: Nemesis) -> None:
    assert_partition_survives_power_cycle(nemesis, lose_unsynced=True)
