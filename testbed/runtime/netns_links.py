"""Link shaping from this machine: egress bandwidth with HTB, delays with a process holding NFQUEUE queues.

Used by the netns runtime and by the docker runtime with a daemon on this
machine: each host is a network namespace here, entered with the argv prefix
the runtime gives (`ip netns exec NS`, `nsenter --net=/proc/PID/ns/net`).

Bandwidth: the host's `eth0` (inside its namespace) gets an HTB root qdisc
with one class per distinct rate and a u32 filter per destination address;
unmatched traffic (the control plane's, every other host's) goes straight
out, unshaped. Delay: one `testbed.runtime.delayq` process in the host's
namespace holds the queues its fault rules fill; it carries the run's prefix
(so teardown and `clean` find it) and reads its stdin, so it releases what it
holds and exits when the harness goes away. Everything is inside a run's
namespace. Must never: touch an interface or qdisc outside the run's
hosts, or leave a delay process of a healed host running.
"""

from __future__ import annotations

import contextlib
import select
import subprocess
import sys
import threading
from collections.abc import Callable

from testbed.addressing import Host
from testbed.errors import RuntimeFailure
from testbed.runtime.base import LinkShaping

DEVICE = "eth0"  # the host's one link (`NetnsRuntime.create`)
READY_S = 10.0  # a delay process binds its queues within this (a loaded machine starts Python slowly)
STOP_S = 5.0
FIRST_CLASS = 10


def htb_batch(rates: tuple[tuple[str, int], ...], device: str = DEVICE) -> str:
    """`tc -batch` lines giving `device` one HTB class per distinct rate, a filter per destination."""
    classes = {rate: FIRST_CLASS + i for i, rate in enumerate(sorted({r for _, r in rates}))}
    lines = [f"qdisc add dev {device} root handle 1: htb"]
    lines += [f"class add dev {device} parent 1: classid 1:{n} htb rate {rate}kbit ceil {rate}kbit"
              for rate, n in classes.items()]
    lines += [f"filter add dev {device} parent 1: protocol ip prio 1 u32 match ip dst {address}/32 "
              f"flowid 1:{classes[rate]}" for address, rate in rates]
    return "".join(line + "\n" for line in lines)


class DelayProcess:
    """One host's running `delayq`, holding the queues of one `LinkShaping.delays`."""

    def __init__(self, argv: list[str], env: dict[str, str], delays: tuple[tuple[int, float, float], ...]) -> None:
        self.delays = delays
        queues = [f"{n}:{delay:g}:{jitter:g}" for n, delay, jitter in delays]
        self.process = subprocess.Popen([*argv, sys.executable, "-m", "testbed.runtime.delayq", *queues],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        env=env, start_new_session=True)
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], READY_S)
        line = self.process.stdout.readline() if ready else b""
        if line.strip() != b"ready":
            self.stop()
            raise RuntimeFailure(f"the delay process did not bind its queues: {self.stderr() or 'no answer'}")

    def stderr(self) -> str:
        if self.process.poll() is None or self.process.stderr is None:
            return ""
        return self.process.stderr.read().decode(errors="replace").strip()[-300:]

    def end_input(self) -> None:
        """Ask it to release everything it holds and exit (end of stdin)."""
        with contextlib.suppress(OSError):
            if self.process.stdin is not None:
                self.process.stdin.close()

    def stop(self) -> None:
        """`end_input`, then wait for it to exit; kill it if it does not."""
        self.end_input()
        try:
            self.process.wait(timeout=STOP_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


class NetnsLinks:
    """Every host's shaping; `enter(host)` is the argv prefix that runs a command in the host's network namespace
    (RuntimeFailure if it cannot: a host that is gone)."""

    def __init__(self, enter: Callable[[Host], list[str]], env: dict[str, str]) -> None:
        self.enter = enter
        self.env = env
        self._rates: dict[str, tuple[tuple[str, int], ...]] = {}
        self._delays: dict[str, DelayProcess] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def shape(self, host: Host, shaping: LinkShaping) -> None:
        with self._lock(host.name):
            if self._rates.get(host.name, ()) != shaping.rates:
                self._set_rates(host, shaping.rates)
            running = self._delays.get(host.name)
            if (running.delays if running else ()) != shaping.delays:
                self._set_delays(host, shaping.delays)

    def clear(self, host: Host) -> None:
        with self._lock(host.name):
            with contextlib.suppress(RuntimeFailure):  # a host without power has no qdisc left to delete
                self._set_rates(host, (), check=False)
            self._set_delays(host, ())

    def close(self) -> None:
        """Stop every delay process (before the namespaces go)."""
        with self._guard:
            processes, self._delays = list(self._delays.values()), {}
        for process in processes:
            process.end_input()  # all at once: each takes a moment to release and exit
        for process in processes:
            process.stop()

    def _set_rates(self, host: Host, rates: tuple[tuple[str, int], ...], check: bool = True) -> None:
        self._rates.pop(host.name, None)
        enter = self.enter(host)
        _tc(enter, ["qdisc", "del", "dev", DEVICE, "root"], check=False)  # back to the default (noqueue)
        if rates:
            _tc(enter, ["-batch", "-"], input_text=htb_batch(rates), check=check)
            self._rates[host.name] = rates

    def _set_delays(self, host: Host, delays: tuple[tuple[int, float, float], ...]) -> None:
        running = self._delays.pop(host.name, None)
        if running is not None:
            running.stop()
        if delays:
            try:
                self._delays[host.name] = DelayProcess(self.enter(host), self.env, delays)
            except RuntimeFailure as exc:
                raise RuntimeFailure(f"delaying links of {host.name}: {exc}") from exc

    def _lock(self, key: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())


def _tc(enter: list[str], args: list[str], input_text: str | None = None, check: bool = True) -> None:
    proc = subprocess.run([*enter, "tc", *args], input=input_text, capture_output=True, text=True, timeout=30)
    if check and proc.returncode != 0:
        raise RuntimeFailure(f"tc {' '.join(args)}: {(proc.stderr or proc.stdout).strip()[-300:]}")
