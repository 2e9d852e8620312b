"""The ssh tests' test bed (testbed/sshbed.py) on a dockerd of the project's own, started for this package."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from testbed.runtime.base import new_prefix
from testbed.runtime.dockerd import OwnDockerd, start_dockerd
from testbed.sshbed import SshTestBed, build_base_image, sshd_testbed


@pytest.fixture(scope="package")
def own_dockerd() -> Iterator[OwnDockerd]:
    if os.geteuid() != 0:
        pytest.fail("ssh tests need root (they start a dockerd and its containers)")
    daemon = start_dockerd(new_prefix())
    previous = os.environ.get("DOCKER_HOST")
    os.environ["DOCKER_HOST"] = daemon.host
    try:
        build_base_image()
        yield daemon
    finally:
        if previous is None:
            os.environ.pop("DOCKER_HOST", None)
        else:
            os.environ["DOCKER_HOST"] = previous
        daemon.stop()


@pytest.fixture(scope="package")
def testbed(own_dockerd: OwnDockerd, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshTestBed]:
    client = own_dockerd.client()
    try:
        with sshd_testbed(client, tmp_path_factory.mktemp("ssh-testbed"), fuse=True) as bed:
            yield bed
    finally:
        client.close()
