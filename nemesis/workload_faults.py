"""Faults on workload processes: pause a producer (a zombie), start its replacement with the same transactional.id.

The nemesis does not start or signal workload processes itself: the harness
that started them hands it a `WorkloadControl`. `pause-workload` SIGSTOPs
the process (all its threads, librdkafka's included: it keeps its sockets
and answers nothing) and SIGCONTs it when undone. `replace-workload` starts a
second process with the first one's configuration and transactional.id under
a name of its own (`<process>-r<n>`: its own journal, values and transaction
names), as a supervisor that believes the first dead would; its
init_transactions() fences the first. The replacement runs to the end of the
run: undoing the fault changes nothing. `hold-request` arms the request-holding
proxy of a producer started with `proxy: true` (workloads/holdproxy.py): it
starts once the proxy caught the next request of its `api` (held from then
on, with whatever follows it on that connection) and is undone by forwarding
what was held, late, on the same connection.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from nemesis.spec import HOLD_APIS, FaultSpec
from nemesis.targets import Resolver
from testbed.errors import FaultError

if TYPE_CHECKING:
    from nemesis.faults import FaultEnv, Injected


class WorkloadControl(Protocol):
    """What the harness lets the nemesis do to its workload processes; each raises FaultError when it cannot."""

    def pause(self, process: str) -> int:
        """SIGSTOP the running `process` and wait until it is stopped; its pid."""

    def resume(self, process: str) -> None:
        """SIGCONT it (nothing if it is not running) and wait until it runs."""

    def replace(self, process: str) -> str:
        """Start a process with `process`'s configuration and transactional.id; the new process's name."""

    def hold(self, process: str, kind: dict[str, Any]) -> dict[str, Any]:
        """Arm `process`'s proxy and wait until it holds a request of `kind` (`api_key`, `committed`): what it
        caught."""

    def release(self, process: str, before: dict[str, Any] | None = None) -> dict[str, Any]:
        """Forward what `process`'s proxy holds (with `before`: just before its next request of that kind), and
        wait until it did: when."""


class WorkloadFault:
    """pause-workload, replace-workload and hold-request."""

    def inject(self, spec: FaultSpec, resolver: Resolver, env: FaultEnv, key: str) -> Injected:
        from nemesis.faults import Injected

        control = _control(env, spec.fault)
        process = spec.targets[0]
        if spec.fault == "pause-workload":
            pid = control.pause(process)
            return Injected(key, spec.fault, {"process": process}, {"pid": pid})
        if spec.fault == "hold-request":
            caught = control.hold(process, _kind(spec.api))
            before = _kind(spec.release_before) if spec.release_before else None
            return Injected(key, spec.fault, {"process": process, "api": spec.api},
                            {**caught, "release_before": before})
        replacement = control.replace(process)
        return Injected(key, spec.fault, {"process": process, "replacement": replacement})

    def undo(self, injected: Injected, env: FaultEnv) -> None:
        if injected.fault == "pause-workload":
            _control(env, injected.fault).resume(injected.targets["process"])
        elif injected.fault == "hold-request":
            _control(env, injected.fault).release(injected.targets["process"], injected.detail.get("release_before"))


def _kind(api: str) -> dict[str, Any]:
    api_key, committed = HOLD_APIS[api]
    return {"api_key": api_key, "committed": committed}


def _control(env: Any, fault: str) -> WorkloadControl:
    control: WorkloadControl | None = env.workloads
    if control is None:
        raise FaultError(f"{fault} acts on the run's workload processes, and this nemesis was given none")
    return control


WORKLOAD = WorkloadFault()
