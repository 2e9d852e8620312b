"""Applying partitions: every host's fault rules installed at once, one thread per host.

The rules come from `nemesis.shapes.firewall_rules`; a runtime that is
`Firewalled` installs one host's rules atomically (on the netns runtime: one
nftables transaction through the host's long-lived iptables-restore, a few
milliseconds). Here the hosts are done in parallel, so a partition takes
effect on every host within about one host's install time. `heal` empties
every host's fault rules the same way; `reset` also removes the fault chains
and their hooks (the end-of-run sweep).

`Firewall` keeps the cuts and degraded links that are active (several faults
may overlap) and, on every change, recomputes each host's rules (and, for
links, each host's `LinkShaping`, from their union: `nemesis.links`) and
rewrites only the hosts that changed. Shaping goes first, so a delay queue is
held before a rule sends packets to it. Must never: write a rule outside a
host of the plan (the control plane has none to write).
"""
from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from nemesis.links import Degraded, link_rules, link_shaping, needs_shaper, union
from nemesis.shapes import Grudge, Scope, firewall_rules
from testbed.addressing import AddressPlan, Host
from testbed.errors import FaultError, HarnessError
from testbed.runtime.base import Firewalled, LinkShaper, LinkShaping


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
    """Remove every trace of faults from every host's firewall, chains and hooks included, and every link's
    rate and delay; idempotent."""
    names = [h.name for h in runtime.plan.hosts]
    _on_hosts(runtime, names, runtime.clear_firewall)
    if isinstance(runtime, LinkShaper):
        _on_hosts(runtime, names, runtime.clear_links)


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
            raise FaultError(f"firewall rules or link shaping failed on {len(failures)} host(s): {detail}") from first
        raise first


class Firewall:
    """The active cuts of one nemesis and the rules they put on each host."""

    def __init__(self, runtime: FirewalledRuntime) -> None:
        self.runtime = runtime
        self._cuts: dict[str, tuple[Grudge, Scope]] = {}
        self._links: dict[str, Degraded] = {}
        self._installed: dict[str, str] = {}
        self._shaped: dict[str, LinkShaping | None] = {}  # None: unknown (a failed change), rewrite it
        self._lock = threading.Lock()

    @property
    def cuts(self) -> dict[str, tuple[Grudge, Scope]]:
        return dict(self._cuts)

    def add(self, key: str, grudge: Grudge, scope: Scope) -> list[str]:
        """Add one cut; rewrite the hosts it changes; return their names."""
        with self._lock:
            self._refuse_taken(key)
            self._cuts[key] = (grudge, scope)
            return self._sync_or_back(key)

    def add_links(self, key: str, links: Degraded) -> list[str]:
        """Add one degraded-link map; rewrite and reshape the hosts it changes; return their names.

        FaultError, changing nothing, if it needs delays or rates and the runtime cannot shape links."""
        with self._lock:
            self._refuse_taken(key)
            if needs_shaper(links.values()) and not isinstance(self.runtime, LinkShaper):
                raise FaultError(f"the {getattr(self.runtime, 'kind', '?')} runtime cannot delay or throttle links")
            self._links[key] = links
            return self._sync_or_back(key)

    def _refuse_taken(self, key: str) -> None:
        if key in self._cuts or key in self._links:
            raise FaultError(f"cut {key} is already active")

    def _sync_or_back(self, key: str) -> list[str]:
        try:
            return self._sync()
        except BaseException:
            self._cuts.pop(key, None)
            self._links.pop(key, None)
            with contextlib.suppress(Exception):
                self._sync()  # best effort back to the other faults' rules; heal-all is the safety net
            raise

    def remove(self, key: str) -> list[str]:
        """Remove one cut or degraded-link map (idempotent); rewrite the hosts that change; return their names."""
        with self._lock:
            if self._cuts.pop(key, None) is None and self._links.pop(key, None) is None:
                return []
            return self._sync()

    def prepare(self) -> None:
        """Install empty fault chains on every host not yet done, so the first cut takes the fast path."""
        with self._lock:
            fresh = [h.name for h in self.runtime.plan.hosts if h.name not in self._installed]
            set_rules(self.runtime, {name: "" for name in fresh})
            self._installed.update({name: "" for name in fresh})

    def restore(self, host: Host) -> None:
        """Give `host`, back from a power cut, the shaping and fault rules the active faults put on it (a restarted
        container has a fresh network namespace; a power cut ends a host's delay process): its links first."""
        with self._lock:
            plan = self.runtime.plan
            merged = union(*self._links.values())
            shaping = link_shaping(plan, merged).get(host.name, LinkShaping()) if self._links else LinkShaping()
            rules = firewall_rules(plan, self._cuts.values())[host.name] + link_rules(plan, merged)[host.name]
            runtime = self.runtime
            if isinstance(runtime, LinkShaper) and (self._links or host.name in self._shaped):
                runtime.clear_links(host)
                if not shaping.empty:
                    runtime.shape_links(host, shaping)
                self._shaped.pop(host.name, None)
                if not shaping.empty:
                    self._shaped[host.name] = shaping
            if host.name in self._installed or rules:
                runtime.set_firewall(host, rules)
                self._installed[host.name] = rules

    def clear(self) -> None:
        """Forget every cut and remove every fault rule, chain and hook, whatever this object believes."""
        with self._lock:
            self._cuts.clear()
            self._links.clear()
            self._installed = {}
            self._shaped = {}
            reset(self.runtime)

    def _sync(self) -> list[str]:
        plan = self.runtime.plan
        merged = union(*self._links.values())
        reshaped = self._reshape(link_shaping(plan, merged)) if self._links or self._shaped else []
        extra = link_rules(plan, merged)
        wanted = {h: r + extra[h] for h, r in firewall_rules(plan, self._cuts.values()).items()}
        changed = {h: r for h, r in wanted.items() if r != self._installed.get(h)}
        try:
            set_rules(self.runtime, changed)
        except BaseException:
            # Some hosts may hold the new rules, some the old: believe nothing, so the next change rewrites all.
            self._installed = {h: "?" for h in wanted}
            raise
        self._installed = wanted
        return sorted(set(changed) | set(reshaped))

    def _reshape(self, wanted: dict[str, LinkShaping]) -> list[str]:
        """Give each host whose shaping changes its new shaping, in parallel; return their names."""
        changed = {h: s for h, s in wanted.items() if s != self._shaped.get(h, LinkShaping())}
        if not changed:
            return []
        runtime = self.runtime
        if not isinstance(runtime, LinkShaper):
            raise FaultError(f"the {getattr(runtime, 'kind', '?')} runtime cannot delay or throttle links")
        try:
            _on_hosts(runtime, list(changed), lambda host: runtime.shape_links(host, changed[host.name]))
        except BaseException:
            self._shaped = {h: None for h in wanted}
            raise
        self._shaped = {h: s for h, s in wanted.items() if not s.empty}
        return sorted(changed)
