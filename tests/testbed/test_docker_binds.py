"""The docker runtime's power-cut plumbing without a daemon: which data directories a node container binds from
this machine (only with a daemon on it), that their copies are never fetched back, and the refusal elsewhere."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from testbed.addressing import make_plan
from testbed.errors import RuntimeFailure
from testbed.runfolder import ROLE_DATA
from testbed.state import RunState

pytest.importorskip("docker")
from testbed.runtime.docker import DockerRuntime  # noqa: E402

PLAN = make_plan("198.19.0.0/24", 3)


class NoContainers:
    def get(self, name: str) -> Any:
        raise AssertionError(f"the daemon was asked for {name}")


def runtime(tmp_path: Path, base_url: str) -> DockerRuntime:
    state = RunState.create(tmp_path, "fl00c0de", runtime="docker", settings={}, harness_pid=1)
    client = SimpleNamespace(api=SimpleNamespace(base_url=base_url), containers=NoContainers())
    return DockerRuntime("fl00c0de", PLAN, state, client=client)


def test_a_local_daemons_node_containers_bind_their_data_directories_from_the_run_folder(tmp_path: Path) -> None:
    rt = runtime(tmp_path, "http+docker://localhost")
    node, client = PLAN.node_of_az("az1"), PLAN.client_of_az("az1")
    binds = rt._binds(node)
    assert binds == {str(tmp_path / "nodes" / "az1-node" / d): {"bind": f"/faultline/run/nodes/az1-node/{d}",
                                                                 "mode": "rw"} for d in ROLE_DATA.values()}
    assert all(Path(d).is_dir() for d in binds)
    assert rt._binds(client) == {} and rt.data_dirs(client) == []
    rt.fetch(node, tmp_path / "nodes" / "az1-node" / "kafka-data")  # already here: the daemon is not asked
    rt.fetch(node, tmp_path / "nodes" / "az1-node" / "kafka-data" / "faultline-0")
    with pytest.raises(AssertionError, match="asked for"):
        rt.fetch(node, tmp_path / "nodes" / "az1-node" / "logs")  # not bound: copied back from the container


def test_a_remote_daemon_binds_nothing_and_cannot_lose_unsynced_writes(tmp_path: Path) -> None:
    rt = runtime(tmp_path, "http://10.0.0.7:2375")
    node = PLAN.node_of_az("az1")
    assert rt._binds(node) == {} and rt.data_dirs(node) == []
    dirs = [tmp_path / "nodes" / "az1-node" / d for d in ROLE_DATA.values()]
    with pytest.raises(RuntimeFailure, match="^az1-node: the docker runtime loses unsynced writes only with a daemon "
                                             "on this machine"):
        rt.keep_unsynced(node, dirs, tmp_path / "logs")
