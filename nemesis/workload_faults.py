"""Faults on workload processes: pause one (a zombie), replace a transactional producer, roll one onto a new client.

The nemesis does not start or signal workload processes itself: the harness
that started them hands it a `WorkloadControl`. `pause-workload` SIGSTOPs
the process (all its threads, librdkafka's included: it keeps its sockets
and answers nothing) and SIGCONTs it when undone. `replace-workload` starts a
second process with the first one's configuration and transactional.id under
a name of its own (`<process>-r<n>`: its own journal, values and transaction
names), as a supervisor that believes the first dead would; its
init_transactions() fences the first. The replacement runs to the end of the
run: undoing the fault changes nothing. `upgrade-client` stops a producer or a
consumer cleanly (SIGTERM: a producer flushes, a group member leaves its group)
and starts its configuration again as `<process>-u<n>` on another
confluent-kafka (a venv the harness made before the run), as an application
rolled onto a new client is; it too runs to the end. `hold-request` arms the request-holding
proxy of a producer started with `proxy: true` (workloads/holdproxy.py): it
starts once the proxy caught the next request of its `api` (held from then
on, with whatever follows it on that connection) and is undone by forwarding
what was held, late, on the same connection.

Must never: start or signal a workload process itself, or act on one when it was given no `WorkloadControl`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from nemesis.fault_base import FaultEnv, Injected, WorkloadControl
from nemesis.fault_spec import HOLD_APIS
from testbed.dist.clients import parse_client
from testbed.errors import DistributionError, FaultError, SpecError

if TYPE_CHECKING:
    from nemesis.fault_spec import FaultSpec
    from nemesis.targets import Resolver


class PauseWorkload:
    """pause-workload: SIGSTOP the process; undone by SIGCONT."""

    def inject(self, spec: FaultSpec, resolver: Resolver, env: FaultEnv, key: str) -> Injected:
        process = spec.targets[0]
        pid = _control(env, spec.fault).pause(process)
        return Injected(key, spec.fault, {"process": process}, {"pid": pid})

    def undo(self, injected: Injected, env: FaultEnv) -> None:
        _control(env, injected.fault).resume(injected.targets["process"])


class HoldRequest:
    """hold-request: the process's proxy holds its next request of the spec's `api`; undone by forwarding it."""

    def inject(self, spec: FaultSpec, resolver: Resolver, env: FaultEnv, key: str) -> Injected:
        process = spec.targets[0]
        caught = _control(env, spec.fault).hold(process, _kind(spec.api))
        before = _kind(spec.release_before) if spec.release_before else None
        return Injected(key, spec.fault, {"process": process, "api": spec.api}, {**caught, "release_before": before})

    def undo(self, injected: Injected, env: FaultEnv) -> None:
        _control(env, injected.fault).release(injected.targets["process"], injected.detail.get("release_before"))


class ReplaceWorkload:
    """replace-workload: start the process's replacement, which fences it; undo changes nothing."""

    def inject(self, spec: FaultSpec, resolver: Resolver, env: FaultEnv, key: str) -> Injected:
        process = spec.targets[0]
        replacement = _control(env, spec.fault).replace(process)
        return Injected(key, spec.fault, {"process": process, "replacement": replacement})

    def undo(self, injected: Injected, env: FaultEnv) -> None:
        """Nothing to undo: the replacement runs to the end of the run."""


def parse_client_upgrade(path: str, raw: Mapping[str, Any]) -> dict[str, Any]:
    """`upgrade-client`'s `to_version`: a confluent-kafka version faultline can install (1.9.0 on)."""
    version = raw["to_version"]
    try:
        parse_client(version)
    except DistributionError as exc:
        raise SpecError(f"{path}.to_version: {str(exc).removeprefix(f'confluent_kafka {version}: ')}") from None
    return {"to_version": str(version)}


class UpgradeClient:
    """upgrade-client: stop the process cleanly and start it again on another confluent-kafka; undo changes nothing."""

    def inject(self, spec: FaultSpec, resolver: Resolver, env: FaultEnv, key: str) -> Injected:
        process, version = spec.targets[0], spec.options["to_version"]
        done = _control(env, spec.fault).upgrade(process, version)
        targets = {"process": process, "replacement": done.pop("replacement"), "to_version": version}
        return Injected(key, spec.fault, targets, done)

    def undo(self, injected: Injected, env: FaultEnv) -> None:
        """Nothing to undo: the upgraded process runs to the end of the run."""


def _kind(api: str) -> dict[str, Any]:
    api_key, committed = HOLD_APIS[api]
    return {"api_key": api_key, "committed": committed}


def _control(env: FaultEnv, fault: str) -> WorkloadControl:
    control = env.workloads
    if control is None:
        raise FaultError(f"{fault} acts on the run's workload processes, and this nemesis was given none")
    return control
