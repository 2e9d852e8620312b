"""Removing what runs left on every Docker daemon we can reach: the user's (DOCKER_HOST or the default socket)
and each dockerd of the project's own, the orphaned ones of which it stops.

It sits on both `docker_api` (talking to any daemon) and `dockerd` (the daemons the project owns), so neither
imports the other for it. Used by `clean` (`testbed/runtime/factory.py`).
Must never: remove a container or network whose name does not carry a project prefix, or stop a dockerd of
the project's own whose starter is still alive.
"""

from __future__ import annotations

import contextlib
import os

from testbed.errors import RuntimeFailure
from testbed.runtime.docker_api import DEFAULT_HOST, docker_client, remove_prefixed_resources
from testbed.runtime.dockerd import find_leftover_dockerds, orphaned


def clean_leftovers(prefix: str | None = None) -> list[str]:
    """Remove the project's containers and networks (of one run, or of any) from every daemon we can reach:
    DOCKER_HOST or the default socket, and each dockerd of the project's own."""
    owns = find_leftover_dockerds()
    hosts = [os.environ.get("DOCKER_HOST") or DEFAULT_HOST] + [own.host for own in owns]
    removed: list[str] = []
    for host in dict.fromkeys(hosts):
        try:
            client = docker_client(host, timeout=30.0)
        except RuntimeFailure:
            continue
        with contextlib.closing(client):
            removed += remove_prefixed_resources(client, prefix)
    if prefix is None:  # a dockerd of the project's own whose starter was killed goes too; a live one's stays
        for own in owns:
            if orphaned(own):
                own.stop()
                removed.append(f"dockerd {own.prefix} (pid {own.pid}), its starter gone")
    return removed
