"""Applying partitions: every host's fault rules installed at once, one thread per host.

The rules come from `nemesis.shapes.firewall_rules`; a runtime that is
`Firewalled` installs one host's rules atomically (on the netns runtime: one
nftables transaction through the host's long-lived iptables-restore, a few
milliseconds). Here the hosts are done in parallel, so a partition takes
effect on every host within about one host's install time. `heal` empties
every host's fault rules the same way; `reset` also removes the fault chains
and their hooks (the end-of-run sweep).

`Firewall` keeps the cuts that are active (several partition faults may
overlap) and, on every change, recomputes each host's rules from all of them
and rewrites only the hosts whose rules changed. Must never: write a rule
outside a host of the plan (the control plane has none to write).
"""
from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from nemesis.shapes import Grudge, Scope, firewall_rules
from testbed.addressing import AddressPlan, Host
from testbed.errors import FaultError, HarnessError
from testbed.runtime.base import Firewalled


class FirewalledRuntime(Firewalled, Protocol):
    """A runtime with a plan whose hosts each have a firewall."""

    plan: AddressPlan


def set_rules(runtime: FirewalledRuntime, rules: Mapping[str, str]) -> None:
    """Make each named host's fault rules exactly its text (empty: none), all hosts in parallel.

    Returns once every host is done. FaultError naming every host that failed
    (the others keep their new rules: the caller decides whether to heal).
    """
    _on_hosts(runtime, list(rules), lambda host: runtime.set_firewall(host, rules[host.name]))


def apply_grudge(runtime: FirewalledRuntime, grudge: Grudge, scope: Scope = "all") -> dict[str, str]:
    """Make the firewall of every host say exactly `grudge` in `scope`; return the rules per host."""
    rules = firewall_rules(runtime.plan, [(grudge, scope)])
    set_rules(runtime, rules)
    return rules


def heal(runtime: FirewalledRuntime) -> None:
    """Empty every host's fault rules, in parallel; idempotent. The (empty) fault chains stay hooked in."""
    set_rules(runtime, {h.name: "" for h in runtime.plan.hosts})


def reset(runtime: FirewalledRuntime) -> None:
    """Remove every trace of faults from every host's firewall, chains and hooks included; idempotent."""
    _on_hosts(runtime, [h.name for h in runtime.plan.hosts], runtime.clear_firewall)


def _on_hosts(runtime: FirewalledRuntime, names: list[str], action: Callable[[Host], None]) -> None:
    if not names:
        return
    failures: dict[str, BaseException] = {}
    with ThreadPoolExecutor(max_workers=len(names), thread_name_prefix="firewall") as pool:
        futures = {name: pool.submit(action, runtime.plan.host(name)) for name in names}
        for name, future in futures.items():
            exc = future.exception()
            if exc is not None:
                failures[name] = exc
    if failures:
        first = next(iter(failures.values()))
        detail = "; ".join(f"{name}: {exc}" for name, exc in sorted(failures.items()))
        if isinstance(first, HarnessError | OSError):
            raise FaultError(f"firewall rules failed on {len(failures)} host(s): {detail}") from first
        raise first


class Firewall:
    """The active cuts of one nemesis and the rules they put on each host."""

    def __init__(self, runtime: FirewalledRuntime) -> None:
        self.runtime = runtime
        self._cuts: dict[str, tuple[Grudge, Scope]] = {}
        self._installed: dict[str, str] = {}
        self._lock = threading.Lock()

    @property
    def cuts(self) -> dict[str, tuple[Grudge, Scope]]:
        return dict(self._cuts)

    def add(self, key: str, grudge: Grudge, scope: Scope) -> list[str]:
        """Add one cut; rewrite the hosts it changes; return their names."""
        with self._lock:
            if key in self._cuts:
                raise FaultError(f"cut {key} is already active")
            self._cuts[key] = (grudge, scope)
            try:
                return self._sync()
            except BaseException:
                self._cuts.pop(key)
                with contextlib.suppress(Exception):
                    self._sync()  # best effort back to the other cuts' rules; heal-all is the safety net
                raise

    def remove(self, key: str) -> list[str]:
        """Remove one cut (idempotent); rewrite the hosts that change; return their names."""
        with self._lock:
            if self._cuts.pop(key, None) is None:
                return []
            return self._sync()

    def prepare(self) -> None:
        """Install empty fault chains on every host not yet done, so the first cut takes the fast path."""
        with self._lock:
            fresh = [h.name for h in self.runtime.plan.hosts if h.name not in self._installed]
            set_rules(self.runtime, {name: "" for name in fresh})
            self._installed.update({name: "" for name in fresh})

    def clear(self) -> None:
        """Forget every cut and remove every fault rule, chain and hook, whatever this object believes."""
        with self._lock:
            self._cuts.clear()
            self._installed = {}
            reset(self.runtime)

    def _sync(self) -> list[str]:
        wanted = firewall_rules(self.runtime.plan, self._cuts.values())
        changed = {h: r for h, r in wanted.items() if r != self._installed.get(h)}
        try:
            set_rules(self.runtime, changed)
        except BaseException:
            # Some hosts may hold the new rules, some the old: believe nothing, so the next change rewrites all.
            self._installed = {h: "?" for h in wanted}
            raise
        self._installed = wanted
        return sorted(changed)
