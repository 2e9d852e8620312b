"""Shifted wall clocks for processes on this machine: libfaketime preloaded into a process, its offset in a file.

A process started with `clock_env` has libfaketime (Debian's `libfaketime`, which
`make setup` installs) preloaded: every clock_gettime(CLOCK_REALTIME), gettimeofday
and time it makes returns true time plus the offset its offset file holds (seconds,
"+1.5", "-30"), and it reads that file again at most once a second
(FAKETIME_CACHE_DURATION=1), so `set_clock_offset` moves the clock of a running
process within `CLOCK_REREAD_S`. A JVM's System.currentTimeMillis and Instant.now
go through clock_gettime(CLOCK_REALTIME) in libc, so they follow (checked with a
running JVM in tests/testbed/test_clocks.py).

Monotonic clocks stay true (FAKETIME_DONT_FAKE_MONOTONIC=1), for two reasons: a
host whose clock an operator or NTP steps keeps its CLOCK_MONOTONIC running on, so
a step that moved it would be a different fault; and HotSpot times its waits and
System.nanoTime on CLOCK_MONOTONIC, which libfaketime's README says makes a JVM hang
when faked. Kafka's timers that use nanoTime (request timeouts, the purgatory's
timing wheel) therefore see no step; what it decides by the time of day (the
transaction coordinator's txnStartTimestamp and its expiry, producer-id expiry,
retention, segment rolling) does.

libfaketime's monotonic fix (its own handling of timed waits on a monotonic
condition variable, on by default in Debian's build) is turned off
(FAKETIME_FORCE_MONOTONIC_FIX=0): with monotonic clocks true it has nothing to fix,
and it made a JVM take about a second more to start (0.2 s -> 1.2 s here).

The offset file is read without the cache only in so far as libfaketime re-reads
it; FAKETIME_NO_CACHE would read it on every clock call (a JVM makes hundreds of
thousands a second). No shared memory is made: only the `faketime` command
creates /dev/shm/faketime_*, never the library alone.
Must never: change this machine's clock, or shift a process it was not asked to.
"""

from __future__ import annotations

import os
from pathlib import Path

from testbed.addressing import Host
from testbed.errors import RuntimeFailure

LIBFAKETIME = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")  # Debian's libfaketime (multi-arch path)
CACHE_DURATION_S = 1  # libfaketime's FAKETIME_CACHE_DURATION: how long it keeps the offset it read
# How late a running process may see a new offset: libfaketime tests its cache's age in whole seconds, so up to
# about twice its cache duration (a JVM saw a step 1.43 s after the write in the CI-like run of 2026-11-28).
CLOCK_REREAD_S = 2.0 * CACHE_DURATION_S


def offset_text(offset_ms: float) -> str:
    """libfaketime's relative offset, in seconds: "+1.500", "-30.000"."""
    return f"{offset_ms / 1000:+.3f}"


def write_offset(offset_file: Path, offset_ms: float) -> None:
    """Replace the file's offset in one rename, so a process never reads half of it."""
    offset_file.parent.mkdir(parents=True, exist_ok=True)
    tmp = offset_file.with_name(offset_file.name + ".tmp")
    tmp.write_text(offset_text(offset_ms) + "\n")
    os.replace(tmp, offset_file)


def read_offset_ms(offset_file: Path) -> float:
    """The offset the file holds now (0 when there is none)."""
    try:
        return float(offset_file.read_text().strip() or 0) * 1000
    except FileNotFoundError:
        return 0.0


def faketime_env(offset_file: Path, library: Path = LIBFAKETIME) -> dict[str, str]:
    """The variables that make a process's wall clock follow `offset_file`."""
    return {"LD_PRELOAD": str(library), "FAKETIME_TIMESTAMP_FILE": str(offset_file),
            "FAKETIME_CACHE_DURATION": str(CACHE_DURATION_S), "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            "FAKETIME_FORCE_MONOTONIC_FIX": "0"}


class LocalClocks:
    """`ShiftsClocks` (testbed.runtime.base) for a runtime whose processes run on this machine and share its
    disk (netns): the offset file is the run folder's own."""

    def clock_env(self, host: Host, offset_file: Path) -> dict[str, str]:
        if not LIBFAKETIME.exists():
            raise RuntimeFailure(f"{host.name}: cannot shift a process's clock: {LIBFAKETIME} is missing (install "
                                 f"Debian's libfaketime: make setup does)")
        if not offset_file.exists():
            write_offset(offset_file, 0)
        return faketime_env(offset_file)

    def set_clock_offset(self, host: Host, offset_file: Path, offset_ms: float) -> None:
        try:
            write_offset(offset_file, offset_ms)
        except OSError as exc:
            raise RuntimeFailure(f"{host.name}: cannot write the clock offset {offset_file}: {exc}") from exc
