"""The client under test on the ssh runtime: a venv of each confluent-kafka version made on each client host.

A client host is another machine: a venv made here (pyenv's Python, testbed.dist.clients) would run there only with
that Python at the same path on a compatible glibc. So each host makes its own, with its own python3, from the wheel
downloaded here for its Python and glibc (`ssh_install.ensure_client_venv_on`, cached on the host between runs like
the harness's venv). The versions are the run's settings' `client_versions` (the client under test and the
`upgrade-client` targets); each client host makes them at bring-up, before any workload starts, and what each venv
reports of itself (confluent_kafka, librdkafka, python) goes into state.json's `client_venvs` (run.json's
`versions.client_under_test` is read from there). The ssh preflight has already refused a version with no wheel for
a host's Python (`no_wheel_problem`); a host whose Python changed since fails the bring-up in one line.
Must never: run a client venv made on this machine on a host, or write outside the inventory root's cache.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Protocol

from testbed.addressing import Host
from testbed.dist.clients import ClientEnv
from testbed.errors import DistributionError
from testbed.inventory import Inventory
from testbed.runtime.ssh_conn import SshConnection
from testbed.runtime.ssh_install import ensure_client_venv_on, host_facts
from testbed.state import RunState
from testbed.wheelhouse import client_wheels


class _SshHosts(Protocol):
    """What of SshRuntime this needs: its connections, lock, inventory root, run root and state."""

    _lock: threading.Lock
    _client_venvs: dict[tuple[str, str], tuple[str, dict[str, str]]]
    state: RunState
    inventory: Inventory

    def conn(self, host: Host) -> SshConnection: ...

    @property
    def run_root(self) -> str: ...


def no_wheel_problem(conn: SshConnection, versions: Iterable[str]) -> str | None:
    """Why the host cannot make a venv of one of `versions` (no wheel for its Python and glibc, naming the first
    version that has one); None when it can. Reads the host's facts only; the wheels land in this machine's cache."""
    versions = list(versions)
    if not versions:
        return None
    facts = host_facts(conn)
    for version in versions:
        try:
            client_wheels(facts, version)
        except DistributionError as exc:
            return f"clients.{exc}"  # clients.confluent_kafka X: no wheel for ... (the first version that has one ...)
    return None


class SshClientVenvs:
    """SshRuntime's `CarriesClientVenvs` (testbed.runtime.base): each client host makes the run's client venvs."""

    def _make_client_venvs(self: _SshHosts, host: Host) -> None:
        """At bring-up, on a client host: a venv of each of the run's client versions (made unless cached)."""
        for version in self.state.data.get("settings", {}).get("client_versions") or ():
            made = ensure_client_venv_on(self.conn(host), self.inventory.root, version)
            with self._lock:
                self._client_venvs[(host.name, version)] = made

    def client_venvs_made(self: _SshHosts) -> dict[str, dict[str, dict[str, str]]]:
        """What each client venv reported, by version, then host (state.json's `client_venvs`)."""
        with self._lock:
            out: dict[str, dict[str, dict[str, str]]] = {}
            for (host, version), (_, versions) in sorted(self._client_venvs.items()):
                out.setdefault(version, {})[host] = versions
            return out

    def client_python(self: _SshHosts, host: Host, env: ClientEnv) -> tuple[str, ...]:
        """The argv prefix running this run's code on `host` with the host's venv of `env`'s version."""
        python, _ = _venv_of(self, host, env.version)
        return ("env", f"PYTHONPATH={self.run_root}/src", python)

    def client_report(self: _SshHosts, host: Host, env: ClientEnv) -> dict[str, str]:
        """What the host's venv of `env`'s version reports of itself (confluent_kafka, librdkafka, python)."""
        return _venv_of(self, host, env.version)[1]


def _venv_of(runtime: _SshHosts, host: Host, version: str) -> tuple[str, dict[str, str]]:
    with runtime._lock:
        made = runtime._client_venvs.get((host.name, version))
    if made is None:  # a harness taking over a run (`recover`): the host's cached venv
        made = ensure_client_venv_on(runtime.conn(host), runtime.inventory.root, version)
        with runtime._lock:
            runtime._client_venvs[(host.name, version)] = made
    return made
