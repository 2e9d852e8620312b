"""Which runtime a run uses: built by kind, the kind recorded in the run's state file.

The one place that names implementations. `clean` and `recover` build the
runtime a run was made with from its state file, so they find what it made.
Must never: build a runtime of another kind than the state file says.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable

from testbed.addressing import AddressPlan
from testbed.errors import UsageError
from testbed.runtime.base import Runtime
from testbed.state import RunState

RUNTIMES = ("netns", "docker", "ssh")
DEFAULT_RUNTIME = "netns"
# Each runtime's own default address plan: a docker network must lie in 198.19.0.0/24 (testbed.runtime.dockerd).
DEFAULT_NETWORKS = {"netns": "198.18.0.0/24", "docker": "198.19.0.0/24"}


def check_kind(kind: str) -> str:
    if kind not in RUNTIMES:
        raise UsageError(f"runtime {kind!r} does not exist (known: {', '.join(RUNTIMES)})")
    return kind


def _docker_sdk() -> bool:
    return importlib.util.find_spec("docker") is not None


def preflight(kind: str, plan: AddressPlan, kafka_version: str, inventory: str | None = None,
              known_hosts: str | None = None) -> None:
    """Refuse, before anything is created, a plan this kind of runtime cannot lay out here."""
    if check_kind(kind) == "ssh":
        from testbed.inventory import load_inventory
        from testbed.runtime.ssh import preflight as ssh_preflight

        if inventory is None:
            raise UsageError("the ssh runtime needs an inventory (--inventory FILE or cluster.inventory)")
        ssh_preflight(plan, load_inventory(inventory), known_hosts)
    elif kind == "netns":
        from testbed.runtime.netns import NetnsRuntime

        NetnsRuntime.preflight(plan)
    else:
        if not _docker_sdk():
            raise UsageError("the docker runtime needs the Python docker SDK, which is not installed: "
                             "pip install 'faultline[docker]'")
        from testbed.runtime.docker import DockerRuntime

        DockerRuntime.preflight(plan, kafka_version)


def shapes_links(kind: str) -> bool:
    """Whether this kind of runtime is a `LinkShaper` (can delay and throttle links), asked before one exists."""
    kind = check_kind(kind)
    if kind == "netns":
        from testbed.runtime.netns import NetnsRuntime as Kind
    elif kind == "ssh":
        from testbed.runtime.ssh import SshRuntime as Kind  # type: ignore[assignment]
    else:
        from testbed.runtime.docker import DockerRuntime as Kind  # type: ignore[assignment]
    return callable(getattr(Kind, "shape_links", None)) and callable(getattr(Kind, "clear_links", None))


def make_runtime(kind: str, prefix: str, plan: AddressPlan, state: RunState) -> Runtime:
    if check_kind(kind) == "ssh":
        from testbed.runtime.ssh import SshRuntime

        return SshRuntime(prefix, plan, state)
    if kind == "netns":
        from testbed.runtime.netns import NetnsRuntime

        return NetnsRuntime(prefix, plan, state)
    from testbed.runtime.docker import DockerRuntime

    return DockerRuntime(prefix, plan, state)


def runtime_of(state: RunState, plan: AddressPlan,
               make: Callable[[str, str, AddressPlan, RunState], Runtime] | None = None) -> Runtime:
    """The runtime that made the run recorded in `state` (runs from before kinds were recorded: netns), built by
    `make` (a `testbed.machine.Machine`'s) or `make_runtime`."""
    return (make or make_runtime)(str(state.data.get("runtime", DEFAULT_RUNTIME)), state.prefix, plan, state)


def clean_leftovers(prefix: str | None = None, inventory: str | None = None,
                    known_hosts: str | None = None) -> list[str]:
    """Remove what killed runs (or one run) left, on every kind of runtime; return what went.

    With an inventory: on its ssh hosts only (this machine's namespaces and containers are left alone)."""
    if inventory is not None:
        from testbed.inventory import load_inventory
        from testbed.runtime.ssh import clean_leftovers as clean_ssh

        return clean_ssh(load_inventory(inventory), known_hosts, prefix)
    from testbed.runtime.netns import clean_leftovers as clean_netns

    removed = clean_netns(prefix)
    if _docker_sdk():  # without the SDK this installation made no containers to clean
        from testbed.runtime.docker_api import clean_leftovers as clean_docker

        removed += clean_docker(prefix)
    return removed
