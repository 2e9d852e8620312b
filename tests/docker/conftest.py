"""The docker tests' daemon: one the project owns, started for this package and stopped after it.

The images are built into it first when missing or built from other code
(`compose/build_images.py`, what `make docker-images` runs; a few seconds when
nothing changed, a few minutes on a machine that never built them). The
machine's own iptables and forwarding must be the same afterwards.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed.dist.kafka import DEFAULT_VERSION
from testbed.runtime.base import new_prefix
from testbed.runtime.dockerd import OwnDockerd, start_dockerd
from tests.conftest import REPO


def machine_network() -> dict[str, str]:
    """The machine's own filter/nat rules (without counters) and IPv4 forwarding."""
    saved = subprocess.run(["iptables-save"], capture_output=True, text=True).stdout
    rules = "\n".join(line.split(" [", 1)[0] for line in saved.splitlines() if not line.startswith("#"))
    return {"iptables": rules, "ip_forward": Path("/proc/sys/net/ipv4/ip_forward").read_text().strip()}


@pytest.fixture(scope="package")
def machine_before() -> dict[str, str]:
    return machine_network()


@pytest.fixture(scope="package", autouse=True)
def own_dockerd(machine_before: dict[str, str]) -> Iterator[OwnDockerd]:
    if os.geteuid() != 0:
        pytest.fail("docker tests need root (they start a dockerd)")
    daemon = start_dockerd(new_prefix())
    previous = os.environ.get("DOCKER_HOST")
    os.environ["DOCKER_HOST"] = daemon.host
    try:
        built = subprocess.run([sys.executable, "compose/build_images.py", "--kafka-version", DEFAULT_VERSION],
                               cwd=REPO, capture_output=True, text=True, timeout=1200)
        assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
        yield daemon
    finally:
        if previous is None:
            os.environ.pop("DOCKER_HOST", None)
        else:
            os.environ["DOCKER_HOST"] = previous
        daemon.stop()
