"""Which runtime a run uses: built by kind, the kind recorded in the run's state file.

What each kind is (its implementation, its preflight) is its record in
`testbed.runtime.kinds`. `clean` and `recover` build the
runtime a run was made with from its state file, so they find what it made.
Must never: build a runtime of another kind than the state file says.
"""

from __future__ import annotations

from collections.abc import Callable

from testbed.addressing import AddressPlan
from testbed.inventory import Inventory
from testbed.runtime.base import Runtime
from testbed.runtime.kinds import DEFAULT_KIND, docker_sdk, kind
from testbed.state import RunState


def preflight(kind_name: str, plan: AddressPlan, kafka_version: str, inventory: str | None = None,
              known_hosts: str | None = None, power_cuts: bool = False, client_versions: tuple[str, ...] = ()) -> None:
    """Refuse, before anything is created, a plan this kind of runtime cannot lay out here (`power_cuts`: with
    power-offs that must drop unsynced writes; `client_versions`: the clients under test its client hosts run)."""
    kind(kind_name).preflight(plan, kafka_version, inventory, known_hosts, power_cuts, client_versions)


def make_runtime(kind_name: str, prefix: str, plan: AddressPlan, state: RunState) -> Runtime:
    runtime: Runtime = kind(kind_name).runtime_class()(prefix, plan, state)
    return runtime


def runtime_of(state: RunState, plan: AddressPlan,
               make: Callable[[str, str, AddressPlan, RunState], Runtime] | None = None) -> Runtime:
    """The runtime that made the run recorded in `state` (runs from before kinds were recorded: netns), built by
    `make` (a `testbed.machine.Machine`'s) or `make_runtime`."""
    return (make or make_runtime)(str(state.data.get("runtime", DEFAULT_KIND)), state.prefix, plan, state)


def clean_leftovers(prefix: str | None = None, inventory: str | None = None,
                    known_hosts: str | None = None) -> list[str]:
    """Remove what killed runs (or one run) left, on every kind of runtime; return what went.

    With an inventory: on its hosts only (an ssh inventory's hosts; a Docker inventory's containers, the run chains
    in them, and the runs' client containers beside them), this machine's namespaces and other containers left
    alone (the topics runs left on a cluster of the user's: testbed.kafka.existing_learn.clean_own_topics)."""
    if inventory is not None:
        from testbed.docker_inventory import load_any_inventory

        loaded = load_any_inventory(inventory)
        if isinstance(loaded, Inventory):
            from testbed.runtime.ssh import clean_leftovers as clean_ssh

            return clean_ssh(loaded, known_hosts, prefix)
        from testbed.runtime.docker_foreign import clean_leftovers as clean_yours

        return clean_yours(loaded, prefix)
    from testbed.runtime.netns import clean_leftovers as clean_netns

    removed = clean_netns(prefix)
    if docker_sdk():  # without the SDK this installation made no containers to clean
        from testbed.runtime.docker_clean import clean_leftovers as clean_docker

        removed += clean_docker(prefix)
    return removed
