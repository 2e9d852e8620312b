"""Link shaping on an ssh host: `tc` HTB and the delay process run on the host itself, as the netns runtime's do.

Bandwidth: each egress device the host reaches a throttled destination
through (`ip -o route get ADDR`) gets an HTB root qdisc with the handle
`fa17:` (one class per distinct rate, a u32 filter per destination /32);
unmatched traffic, the control plane's included, goes straight out. Before a
device is touched, `<run root>/tc/<device>` is written: the run's record of
what it changed, which teardown and `clean --inventory` read to remove the
qdisc (only one that is still an HTB `fa17:`). A device whose root qdisc is
not the kernel's default (handle `0:`) nor this run's is refused, never
replaced. Delay: one `testbed.runtime.delayq` per host, started detached like
any process of the run (FAULTLINE_RUN=<prefix>, so teardown, a power-off and
`clean --inventory` kill it), holding the NFQUEUE queues the host's fault
rules fill; those rules sit behind the run chain's first rule, which accepts
the control address, so the harness's own packets are never queued.
Must never: replace a root qdisc that is neither the default nor this run's,
or delete one that is not an HTB `fa17:` recorded by a project run.
"""

from __future__ import annotations

import re
import shlex
import threading
import time
from typing import TYPE_CHECKING

from testbed.addressing import Host
from testbed.errors import RuntimeFailure
from testbed.runtime.base import RUN_ENV, LinkShaping
from testbed.runtime.netns_links import htb_batch
from testbed.runtime.ssh_conn import SshConnection
from testbed.runtime.ssh_procs import SIGNAL, SshProcess, spawn_command

if TYPE_CHECKING:
    from testbed.runtime.ssh import SshRuntime

HANDLE = "fa17"  # the root qdisc handle of a project run's HTB on an ssh host
READY_S = 15.0
STOP_S = 5.0
# $1 record dir, then devices; the tc batch on stdin. Refuses a device whose root qdisc is someone else's.
SHAPE = r'''
dir=$1; shift
for dev in "$@"; do
  root=$(tc qdisc show dev "$dev" root 2>&1 | head -n 1) || { echo "dev $dev: $root" >&2; exit 4; }
  case $root in
    "qdisc "*" 0: "*|"qdisc "*" 0:") ;;
    "qdisc htb HANDLE: "*) [ -e "$dir/$dev" ] || { echo "dev $dev has another run's HTB: $root" >&2; exit 5; } ;;
    *) echo "dev $dev has a root qdisc of its own, not replaced: $root" >&2; exit 5 ;;
  esac
done
mkdir -p "$dir" || exit 1
for dev in "$@"; do : > "$dir/$dev" || exit 1; tc qdisc del dev "$dev" root 2>/dev/null; done
tc -batch -
'''.replace("HANDLE", HANDLE)
# $1 a glob of record dirs (`<root>/runs/<prefix>/tc`): remove each recorded device's HTB if it is still ours,
# then the record; prints the devices whose qdisc went.
UNSHAPE = r'''
for f in $1/*; do
  [ -f "$f" ] || continue
  dev=${f##*/}
  case $(tc qdisc show dev "$dev" root 2>/dev/null | head -n 1) in
    "qdisc htb HANDLE: "*) tc qdisc del dev "$dev" root && echo "$dev" ;;
  esac
  rm -f "$f"
done; exit 0
'''.replace("HANDLE", HANDLE)
# $1 log, $2 status file: wait until the delay process says `ready` (exit 0) or ends (its log's tail, exit 1).
READY = r'''
i=0; while [ $i -lt {ticks} ]; do
  grep -qx ready "$1" 2>/dev/null && exit 0
  [ -s "$2" ] && break
  sleep 0.1; i=$((i+1))
done
tail -c 300 "$1" 2>/dev/null; exit 1
'''.replace("{ticks}", str(int(READY_S * 10)))
# delayq with a stdin that never ends (a pipe whose writing end it holds): it stops on SIGTERM, not on EOF.
DELAYQ = ("import os, runpy, sys; r, w = os.pipe(); os.dup2(r, 0); sys.argv[0] = 'delayq'; "
          "runpy.run_module('testbed.runtime.delayq', run_name='__main__', alter_sys=True)")
_DEV = re.compile(r"\bdev (\S+)")


def owned_batch(rates: tuple[tuple[str, int], ...], device: str) -> str:
    """`htb_batch`'s lines for `device` with the project's handle instead of `1:`."""
    return re.sub(r"(?<= )1:", f"{HANDLE}:", htb_batch(rates, device))


def unshape_command(records: str) -> str:
    """Remove the HTBs recorded under `records` (a record dir, or a glob of them, expanded on the host);
    prints the devices cleared."""
    return f"sh -c {shlex.quote(UNSHAPE)} unshape {shlex.quote(records)}"


class SshLinks:
    """Every host's shaping of one ssh run."""

    def __init__(self, runtime: SshRuntime) -> None:
        self.runtime = runtime
        self._rates: dict[str, tuple[tuple[str, int], ...]] = {}
        self._delays: dict[str, tuple[tuple[int, float, float], ...]] = {}
        self._process: dict[str, SshProcess] = {}
        self._devices: dict[tuple[str, str], str] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    @property
    def records(self) -> str:
        return f"{self.runtime.run_root}/tc"

    def shape(self, host: Host, shaping: LinkShaping) -> None:
        with self._lock(host.name):
            if self._rates.get(host.name, ()) != shaping.rates:
                self._set_rates(host, shaping.rates)
            if self._delays.get(host.name, ()) != shaping.delays:
                self._set_delays(host, shaping.delays)

    def clear(self, host: Host) -> None:
        with self._lock(host.name):
            self._set_rates(host, ())
            self._set_delays(host, ())

    # -- bandwidth ---------------------------------------------------------
    def devices(self, host: Host, addresses: list[str]) -> dict[str, str]:
        """The device the host sends to each address through."""
        missing = [a for a in addresses if (host.name, a) not in self._devices]
        if missing:
            conn = self.runtime.conn(host)
            out = conn.check("for a in " + " ".join(shlex.quote(a) for a in missing)
                             + '; do echo "$a $(ip -o route get "$a" 2>&1 | head -n 1)"; done')
            for line in out.splitlines():
                address, _, route = line.partition(" ")
                found = _DEV.search(route)
                if not found or found.group(1) == "lo":
                    raise RuntimeFailure(f"{host.name}: no route to {address} through a device ({route.strip()})")
                self._devices[(host.name, address)] = found.group(1)
        return {a: self._devices[(host.name, a)] for a in addresses}

    def _set_rates(self, host: Host, rates: tuple[tuple[str, int], ...]) -> None:
        conn = self.runtime.conn(host)
        self._rates.pop(host.name, None)
        conn.check(unshape_command(self.records), sudo=True)
        if not rates:
            return
        by_device: dict[str, list[tuple[str, int]]] = {}
        for address, device in self.devices(host, [a for a, _ in rates]).items():
            by_device.setdefault(device, []).extend(r for r in rates if r[0] == address)
        batch = "".join(owned_batch(tuple(r), d) for d, r in sorted(by_device.items()))
        status, out, err = conn.run(f"sh -c {shlex.quote(SHAPE)} shape {shlex.quote(self.records)} "
                                    + " ".join(shlex.quote(d) for d in sorted(by_device)),
                                    stdin=batch.encode(), sudo=True)
        if status != 0:
            raise RuntimeFailure(f"{host.name}: throttling links with tc: "
                                 f"{(err or out).decode(errors='replace').strip()[-300:]}")
        self._rates[host.name] = rates

    # -- delay -------------------------------------------------------------
    def delay_argv(self, host: Host, queues: list[str]) -> list[str]:
        """The delay process's argv on the host (through `sudo -n` where the inventory says so)."""
        conn = self.runtime.conn(host)
        python = ["env", f"{RUN_ENV}={self.runtime.prefix}", f"PYTHONPATH={self.runtime.run_root}/src", "python3"]
        return [*(["sudo", "-n"] if conn.host.sudo else []), *python, "-c", DELAYQ, *queues]

    def _set_delays(self, host: Host, delays: tuple[tuple[int, float, float], ...]) -> None:
        self._delays.pop(host.name, None)
        running = self._process.pop(host.name, None)
        if running is not None:
            stop_delay(self.runtime.conn(host), running)
        if not delays:
            return
        queues = [f"{n}:{delay:g}:{jitter:g}" for n, delay, jitter in delays]
        stamp = time.time_ns()
        pidfile = f"{self.runtime.run_root}/pids/delayq.{stamp}.pid"
        log = f"{self.runtime.run_root}/delayq/{host.name}.{stamp}.log"
        conn = self.runtime.conn(host)
        out = conn.check(spawn_command(self.runtime.prefix, pidfile, log, self.delay_argv(host, queues), None),
                         retry=False).split()
        if len(out) != 2 or not out[0].isdigit():
            raise RuntimeFailure(f"{host.name}: the delay process did not start (spawn said {' '.join(out)!r})")
        process = SshProcess(self.runtime, f"delayq/{host.name}", host, int(out[0]), out[1], pidfile)
        status, said, _ = conn.run(f"sh -c {shlex.quote(READY)} ready {shlex.quote(log)} "
                                   f"{shlex.quote(process.status_file)}", timeout=READY_S + 10)
        if status != 0:
            stop_delay(conn, process)
            raise RuntimeFailure(f"delaying links of {host.name}: the delay process did not bind its queues: "
                                 f"{said.decode(errors='replace').strip()[-300:] or 'no answer'}")
        self._process[host.name] = process
        self._delays[host.name] = delays

    def _lock(self, key: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())


def stop_delay(conn: SshConnection, process: SshProcess) -> None:
    """SIGTERM (it releases what it holds and exits), then SIGKILL if it is still there after STOP_S."""
    for signal_name, wait in (("TERM", STOP_S), ("KILL", STOP_S)):
        args = " ".join(shlex.quote(a) for a in (str(process.pid), process.started, process.runtime.prefix,
                                                 signal_name))
        conn.check(f"sh -c {shlex.quote(SIGNAL)} signal {args}", sudo=True)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not process.alive():
                return
            time.sleep(0.05)
    raise RuntimeFailure(f"{process.host.name}: the delay process {process.pid} survived SIGKILL")
