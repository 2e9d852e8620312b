"""Processes on an ssh host: started detached with a pid file, watched and signalled by pid, start time and prefix.

A process is started by a small `sh` that `setsid`s a keeper: the keeper
starts the command in the background, writes its pid to a pid file, waits for
it and writes its exit status beside it. Both carry FAULTLINE_RUN=<prefix> in
their environment, so the run's processes are found again by scanning
/proc/*/environ even when the state file is lost. A process's identity is its
pid and its start time (/proc/PID/stat field 22): a pid that another process
reuses is not it. Only POSIX sh, kill and /proc are needed on the host.
Must never: signal a pid whose start time differs from the one recorded, or
that does not carry the run's prefix.
"""

from __future__ import annotations

import contextlib
import shlex
import signal
from typing import TYPE_CHECKING

from testbed.addressing import Host
from testbed.errors import RuntimeFailure
from testbed.runtime.base import RUN_ENV

if TYPE_CHECKING:
    from testbed.runtime.ssh import SshRuntime

# $1 pid file, $2 status file, $3 log; then the command. Prints "PID STARTTIME" once the command runs.
SPAWN = r'''
pidfile=$1; status=$2; log=$3; shift 3
mkdir -p "$(dirname "$pidfile")" "$(dirname "$log")" || exit 1
setsid sh -c '
  pidfile=$1; status=$2; log=$3; shift 3
  "$@" >> "$log" 2>&1 < /dev/null &
  echo $! > "$pidfile.tmp" && mv "$pidfile.tmp" "$pidfile"
  wait $!; echo $? > "$status.tmp" && mv "$status.tmp" "$status"
' keeper "$pidfile" "$status" "$log" "$@" > /dev/null 2>&1 < /dev/null &
i=0
while [ ! -s "$pidfile" ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done
[ -s "$pidfile" ] || { echo "no pid file after 5 s" >&2; exit 1; }
pid=$(cat "$pidfile")
stat=$(cat /proc/$pid/stat 2>/dev/null) || { echo "$pid 0"; exit 0; }
set -- ${stat##*) }
echo "$pid ${20}"
'''

# $1 pid, $2 start time, $3 prefix: exit 0 when that process runs as this run's; prints its state letter.
SAME = r'''
ours() {
  stat=$(cat /proc/$1/stat 2>/dev/null) || return 1
  set -- "$1" "$2" "$3" ${stat##*) }
  case $4 in Z|X) return 1;; esac
  [ "${23}" = "$2" ] || return 1
  env=$(tr '\0' '\n' 2>/dev/null < /proc/$1/environ)
  [ -z "$env" ] || printf '%s\n' "$env" | grep -qx "FAULTLINE_RUN=$3" || return 1
  state=$4
}
'''
# $1 pid, $2 start time, $3 prefix, $4 status file: "run STATE" or "end CODE" ("end -": no status written).
QUERY = SAME + r'''
if ours "$1" "$2" "$3"; then echo "run $state"; exit 0; fi
# Gone: its keeper writes the status once it has reaped it; give it a moment (a killed keeper never will).
i=0; while [ ! -s "$4" ] && [ $i -lt 100 ]; do sleep 0.01; i=$((i+1)); done
echo "end $(cat "$4" 2>/dev/null || echo -)"
'''
# $1 pid, $2 start time, $3 prefix, $4 signal name
SIGNAL = SAME + r'''
if ours "$1" "$2" "$3"; then kill -"$4" "$1" 2>/dev/null; fi; exit 0
'''
# $1: a grep pattern of run prefixes. Prints the pids whose environment carries one of them (not this shell's).
FIND = r'''
for d in /proc/[0-9]*; do
  p=${d#/proc/}
  [ "$p" = "$$" ] && continue
  tr '\0' '\n' 2>/dev/null < $d/environ | grep -qx "FAULTLINE_RUN=$1" && echo "$p"
done; exit 0
'''


def find_script(pattern: str) -> str:
    return f"sh -c {shlex.quote(FIND)} find {shlex.quote(pattern)}"


def kill_all_script(pattern: str) -> str:
    """SIGKILL every process of the runs matching `pattern` in one `kill`, then wait (up to 10 s) until they are gone."""
    body = (f"pids=$(sh -c {shlex.quote(FIND)} find {shlex.quote(pattern)}); "
            '[ -z "$pids" ] || kill -KILL $pids 2>/dev/null; i=0; '
            'while [ -n "$pids" ] && [ $i -lt 1000 ]; do left=""; '
            'for p in $pids; do [ -d /proc/$p ] && ! grep -q "^[^)]*) [ZX]" /proc/$p/stat 2>/dev/null '
            '&& left="$left $p"; done; pids=$left; [ -z "$pids" ] || sleep 0.01; i=$((i+1)); done; '
            'echo $pids')
    return body


class SshProcess:
    """One process of the run on an ssh host: `Process` and `Pausable`."""

    def __init__(self, runtime: SshRuntime, name: str, host: Host, pid: int, started: str, pidfile: str) -> None:
        self.runtime = runtime
        self.name = name
        self.host = host
        self.pid = pid
        self.started = started  # its start time in clock ticks since the host booted: with the pid, its identity
        self.pidfile = pidfile
        self._status: int | None = None

    def __repr__(self) -> str:
        return f"<process {self.name} pid {self.pid} on {self.host.name}>"

    @property
    def status_file(self) -> str:
        return self.pidfile.removesuffix(".pid") + ".status"

    def _query(self) -> tuple[str, str]:
        args = " ".join(shlex.quote(a) for a in (str(self.pid), self.started, self.runtime.prefix, self.status_file))
        out = self.runtime.conn(self.host).check(f"sh -c {shlex.quote(QUERY)} query {args}").split()
        if len(out) != 2 or out[0] not in ("run", "end"):
            raise RuntimeFailure(f"{self.host.name}: cannot tell whether {self.name} runs ({' '.join(out)!r})")
        return out[0], out[1]

    def alive(self) -> bool:
        if self._status is not None:
            return False
        if self.runtime.down(self.host):  # its machine lost power, and it with it
            self._status = -signal.SIGKILL
            return False
        what, detail = self._query()
        if what == "end":
            # No status written: the keeper died with it, which only a SIGKILL of the whole run does.
            code = int(detail) if detail.lstrip("-").isdigit() else 128 + signal.SIGKILL
            self._status = -(code - 128) if code > 128 else code
        return what == "run"

    def exit_status(self) -> int | None:
        return None if self.alive() else self._status

    def signal(self, signum: int) -> None:
        if self._status is not None or self.runtime.down(self.host):
            return
        name = signal.Signals(signum).name.removeprefix("SIG")
        args = " ".join(shlex.quote(a) for a in (str(self.pid), self.started, self.runtime.prefix, name))
        with contextlib.suppress(RuntimeFailure):
            self.runtime.conn(self.host).check(f"sh -c {shlex.quote(SIGNAL)} signal {args}")

    def pause(self) -> None:
        self.signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.signal(signal.SIGCONT)

    def paused(self) -> bool:
        if self._status is not None or self.runtime.down(self.host):
            return False
        what, detail = self._query()
        return what == "run" and detail in ("T", "t")


def spawn_command(prefix: str, pidfile: str, log: str, argv: list[str], env: dict[str, str] | None) -> str:
    """The command line that starts `argv` detached, as this run's, and prints its pid and start time."""
    assignments = [f"{RUN_ENV}={prefix}", *(f"{k}={v}" for k, v in (env or {}).items())]
    words = ["env", *assignments, "sh", "-c", SPAWN, "spawn", pidfile, pidfile.removesuffix(".pid") + ".status",
             log, *argv]
    return " ".join(shlex.quote(w) for w in words)
