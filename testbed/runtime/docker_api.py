"""Talking to a Docker daemon, whoever runs it: a client, internal networks, and removing what a run made.

Used by the docker runtime, `clean` and the project's own dockerd alike.
Must never: create a network that is not internal or outside 198.19.0.0/24,
or remove a container or network whose name does not carry a project prefix.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import threading
from typing import Any

import docker
import docker.errors
import docker.types
import requests

from testbed.addressing import DOCKER_NETWORK
from testbed.errors import RuntimeFailure
from testbed.runtime.base import PREFIX_RE

DEFAULT_HOST = "unix:///var/run/docker.sock"
NETWORK_RANGE = ipaddress.IPv4Network(DOCKER_NETWORK)
NAME_RE = re.compile(r"^fl[0-9a-f]{6}(-[A-Za-z0-9_.-]+)?$")
NO_DAEMON_FIX = ("set DOCKER_HOST to a running daemon, or let faultline start its own "
                 "(install Debian's docker.io: make setup-docker, or apt-get install docker.io)")


def docker_client(host: str | None = None, timeout: float = 120.0) -> docker.DockerClient:
    """A client for `host`, else DOCKER_HOST, else the default socket; RuntimeFailure if nothing answers."""
    url = host or os.environ.get("DOCKER_HOST") or DEFAULT_HOST
    try:
        if host is None and os.environ.get("DOCKER_HOST"):
            client = docker.from_env(timeout=int(timeout))  # honours DOCKER_TLS_VERIFY / DOCKER_CERT_PATH too
        else:
            client = docker.DockerClient(base_url=url, timeout=int(timeout))
        client.ping()
    except (docker.errors.DockerException, requests.RequestException, OSError) as exc:
        raise RuntimeFailure(f"no Docker daemon answers at {url} ({one_line(exc)}): {NO_DAEMON_FIX}") from exc
    return client


def daemon_answers(host: str | None = None) -> bool:
    """True if `host` (else DOCKER_HOST, else the default socket) answers a ping."""
    try:
        docker_client(host, timeout=5.0).close()
    except RuntimeFailure:
        return False
    return True


def create_internal_network(client: docker.DockerClient, name: str,
                            subnet: str = str(NETWORK_RANGE)) -> Any:
    """An internal bridge network `name` (prefix + '-...', at most 15 characters) on `subnet` within 198.19.0.0/24.

    Its host bridge carries the same name. The bridge gets the subnet's first
    address (a link-scope route to the subnet exists while the network does);
    containers on it get no default route, and the daemon adds no NAT.
    """
    if not NAME_RE.match(name) or len(name) > 15:
        raise RuntimeFailure(f"network name {name!r}: must be a prefix (fl + 6 hex) and '-...', at most 15 characters")
    net = ipaddress.ip_network(subnet)
    if not isinstance(net, ipaddress.IPv4Network) or not net.subnet_of(NETWORK_RANGE):
        raise RuntimeFailure(f"network {name}: subnet {subnet} is not inside {NETWORK_RANGE}")
    gateway = str(next(net.hosts()))
    ipam = docker.types.IPAMConfig(pool_configs=[docker.types.IPAMPool(subnet=str(net), gateway=gateway)])
    return client.networks.create(
        name, driver="bridge", internal=True, ipam=ipam, check_duplicate=True,
        options={"com.docker.network.bridge.name": name,
                 "com.docker.network.bridge.enable_ip_masquerade": "false"},
        labels={"faultline.prefix": name[:8]})


def remove_prefixed_resources(client: docker.DockerClient, prefix: str | None, networks: bool = True) -> list[str]:
    """Remove (force) the containers and networks (with `networks`) named `prefix` or `prefix-...` (None: any
    project prefix)."""
    if prefix is not None and not PREFIX_RE.match(prefix):
        raise RuntimeFailure(f"bad prefix {prefix!r}")
    ours = re.compile(rf"^/?{re.escape(prefix) if prefix else 'fl[0-9a-f]{6}'}(-|$)")
    removed: list[str] = []
    for container in client.containers.list(all=True):
        if ours.match(container.name or ""):
            with contextlib.suppress(docker.errors.NotFound):
                container.remove(force=True, v=True)
            removed.append(f"container {container.name}")
    for network in client.networks.list() if networks else []:
        if ours.match(network.name or ""):
            with contextlib.suppress(docker.errors.NotFound):
                network.remove()
            removed.append(f"network {network.name}")
    return removed


def one_line_text(text: str) -> str:
    matched = re.search(r'msg="((?:[^"\\]|\\.)*)"', text)
    return " ".join((matched.group(1) if matched else text).split())[:300]


def one_line(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:300]


def with_timeout(call: Any, timeout: float) -> Any:
    """Run `call` in a thread; RuntimeFailure if it has not returned within `timeout` (the exec goes on)."""
    result: list[Any] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            result.append(call())
        except BaseException as exc:  # handed to the caller
            failure.append(exc)
    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise RuntimeFailure(f"no answer within {timeout:.0f} s")
    if failure:
        raise failure[0]
    return result[0]
