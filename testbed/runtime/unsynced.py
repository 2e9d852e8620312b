"""The lose-unsynced-writes filesystem on this machine: mount it over a data directory, cut its power, unmount it.

`unsyncfs` (Go, testbed/unsyncfs/, built by `make setup` into build/bin/unsyncfs)
mounts over a directory and keeps every write in memory until its file is fsynced,
and every create, rename and unlink until an fsync commits it; the directory
underneath holds exactly what is durable. A power cut is its process dying
(SIGKILL): whatever was not synced is gone, and mounting again shows what survived.
A clean unmount (SIGTERM) syncs everything first. Disk faults (EIO, ENOSPC, slow
fsync) on a path prefix of a mount are rules in its control file, read at SIGHUP;
its status file says which generation it applied and counts every call a rule
failed or delayed (`set_faults`, `read_status`). Each mount's source name carries
the run's prefix (`<prefix>-<host>-<dir>`), and its process RUN_ENV, so `clean`
finds both by prefix.
Must never: signal a process it did not start or unmount a mount whose source does
not carry a run prefix of this project.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testbed.addressing import Host
from testbed.errors import RuntimeFailure
from testbed.localprocs import is_alive, start_time, wait_dead
from testbed.paths import REPO_ROOT
from testbed.runtime.base import owned_names
from testbed.state import RunState

BINARY = REPO_ROOT / "build" / "bin" / "unsyncfs"
FSTYPE = "fuse.unsyncfs"
MOUNT_WAIT_S = 10.0
UNMOUNT_WAIT_S = 30.0  # a clean unmount writes every unsynced byte to the disk first
FAULTS_WAIT_S = 5.0  # a control file is applied within milliseconds of its SIGHUP
# The calls a disk fault's rule counts in its status (faults.go: `r.count`): failed with EIO per op, refused with
# ENOSPC, delayed per op (each delayed call also adds its wait to `delay-ms`).
DISK_COUNTS = ("eio-write", "eio-fsync", "eio-read", "enospc-write", "delayed-fsync", "delayed-write")


def binary() -> Path:
    if not BINARY.exists():
        raise RuntimeFailure(f"{BINARY} is missing: run 'make setup' (it builds the unsyncfs filesystem with Go)")
    return BINARY


def available() -> bool:
    """Whether this machine can mount it: /dev/fuse, root and the binary."""
    return Path("/dev/fuse").exists() and os.geteuid() == 0 and BINARY.exists()


def mounted() -> dict[str, str]:
    """Every unsyncfs mount of this machine's mount namespace: target -> source."""
    found = {}
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            sep = fields.index("-")
            if fields[sep + 1] == FSTYPE:
                found[fields[4].replace("\\040", " ")] = fields[sep + 2]
    return found


@dataclass
class UnsyncedMount:
    """One mount over `target` and the process serving it."""

    source: str
    target: Path
    pid: int
    started: int | None
    child: subprocess.Popen[bytes] | None = None
    host: str = ""
    log: Path = Path("/dev/null")
    rules: list[dict[str, Any]] = field(default_factory=list)  # its active disk faults

    def alive(self) -> bool:
        if not self.pid:
            return False
        if self.child is not None:
            return self.child.poll() is None
        return is_alive(self.pid) and start_time(self.pid) == self.started

    def to_json(self) -> dict[str, object]:
        return {"source": self.source, "target": str(self.target), "pid": self.pid, "started": self.started}

    @property
    def control(self) -> Path:
        """Its disk faults' control file (rules, read at SIGHUP), beside its log."""
        return control_paths(self.log)[0]

    @property
    def status(self) -> Path:
        """Its disk faults' status (the generation applied, every rule's counts), beside its log."""
        return control_paths(self.log)[1]


def control_paths(log: Path) -> tuple[Path, Path]:
    """A mount's control and status files, named after its log (`unsyncfs-kafka-data.faults.json`)."""
    return log.with_name(log.stem + ".faults.json"), log.with_name(log.stem + ".status.json")


def set_faults(m: UnsyncedMount, rules: list[dict[str, Any]]) -> dict[str, Any]:
    """Make `rules` the mount's active disk faults (faults.go's rule fields; a rule keeps its counts while its `id`
    stays) and wait until it applied them: its status then. RuntimeFailure if it refused them or did not answer."""
    if not m.alive():
        raise RuntimeFailure(f"unsyncfs over {m.target} is not running")
    generation = time.time_ns()
    tmp = m.control.with_suffix(".tmp")
    tmp.write_text(json.dumps({"generation": generation, "rules": rules}))
    tmp.replace(m.control)
    os.kill(m.pid, signal.SIGHUP)
    deadline = time.monotonic() + FAULTS_WAIT_S
    while time.monotonic() < deadline:
        status = read_status(m)
        if status.get("generation") == generation:
            if status.get("error"):
                raise RuntimeFailure(f"unsyncfs over {m.target} refused its disk faults: {status['error']}")
            return status
        time.sleep(0.01)
    raise RuntimeFailure(f"unsyncfs over {m.target} did not apply its disk faults within {FAULTS_WAIT_S:.0f} s")


def fault_counts(status: dict[str, Any], rule_id: str) -> dict[str, Any]:
    """One rule's counts in a status: its totals and its files' (`counts`, `files`), empty if it has none."""
    for rule in status.get("rules") or []:
        if rule.get("id") == rule_id:
            return {"counts": rule.get("counts") or {}, "files": rule.get("files") or {}}
    return {}


def read_status(m: UnsyncedMount) -> dict[str, Any]:
    """The mount's disk faults' status as last written (empty before its first)."""
    try:
        status: dict[str, Any] = json.loads(m.status.read_text())
    except (OSError, ValueError):
        return {}
    return status


def mount(target: Path, source: str, env: dict[str, str], log: Path, mode: str = "journal") -> UnsyncedMount:
    """Mount unsyncfs over the directory `target` (its contents are the durable state) and wait until it serves."""
    target.mkdir(parents=True, exist_ok=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        control, status = control_paths(log)
        child = subprocess.Popen([str(binary()), "-backing", str(target), "-name", source, "-mode", mode,
                                  "-faults", str(control), "-status", str(status)],
                                 stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
                                 start_new_session=True)
    m = UnsyncedMount(source, target, child.pid, start_time(child.pid), child, log=log)
    deadline = time.monotonic() + MOUNT_WAIT_S
    while mounted().get(str(target)) != source:
        if child.poll() is not None or time.monotonic() > deadline:
            cut([m])
            tail = log.read_text(errors="replace").strip().splitlines()[-2:]
            raise RuntimeFailure(f"unsyncfs did not mount over {target}: {' | '.join(tail) or 'no output'}")
        time.sleep(0.01)
    return m


def signal_cut(mounts: list[UnsyncedMount]) -> None:
    """The instant of a power cut: SIGKILL every serving process, without waiting."""
    for m in mounts:
        if m.alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(m.pid, signal.SIGKILL)


def cut(mounts: list[UnsyncedMount]) -> None:
    """A power cut: every unsynced write of these mounts is dropped; the directories show the durable state."""
    signal_cut(mounts)
    finish_cut(mounts)


def finish_cut(mounts: list[UnsyncedMount]) -> None:
    """After `signal_cut`: wait for the processes to go and detach their dead mounts."""
    stuck = wait_dead([m.pid for m in mounts if m.alive()], timeout=10.0)
    for m in mounts:
        if m.child is not None:
            m.child.poll()
    if stuck:
        raise RuntimeFailure(f"unsyncfs processes {stuck} survived SIGKILL")
    detach([m.target for m in mounts])


def detach(targets: list[Path]) -> None:
    """Lazily unmount whatever unsyncfs mount is still on these targets (a dead process leaves it)."""
    present = mounted()
    for target in targets:
        while str(target) in present:
            subprocess.run(["umount", "-l", str(target)], capture_output=True)
            present = mounted()


def unmount(mounts: list[UnsyncedMount]) -> list[str]:
    """A clean shutdown: each process syncs everything, unmounts and exits; a process that does not within
    UNMOUNT_WAIT_S is cut instead. Returns the targets that had to be cut."""
    live = [m for m in mounts if m.alive()]
    for m in live:
        with contextlib.suppress(ProcessLookupError):
            os.kill(m.pid, signal.SIGTERM)
    deadline = time.monotonic() + UNMOUNT_WAIT_S
    while any(m.alive() for m in live) and time.monotonic() < deadline:
        time.sleep(0.02)
    stuck = [m for m in live if m.alive()]
    cut(stuck)
    detach([m.target for m in mounts])
    return [str(m.target) for m in stuck]


def clean_mounts(prefix: str | None = None) -> list[str]:
    """Detach every unsyncfs mount whose source carries the project's prefix (or one run's); their processes
    are found and killed with the run's other processes (RUN_ENV)."""
    pattern = owned_names(prefix)
    targets = [Path(t) for t, source in mounted().items() if pattern.match(source)]
    detach(targets)
    return [f"mount {t}" for t in targets]


class UnsyncedDisks:
    """The unsyncfs mounts of one run's hosts on this machine's disk: which directories each host keeps on
    the filesystem, and the process serving each; every mount is recorded in the run's state file
    (`mounts`) the moment it exists, so a later harness finds it."""

    def __init__(self, prefix: str, state: RunState, env: dict[str, str]) -> None:
        self.prefix = prefix
        self.state = state
        self.env = env
        self._mounts: dict[str, UnsyncedMount] = {}
        for target, info in state.data.get("mounts", {}).items():  # a dead harness's
            self._mounts[target] = UnsyncedMount(info["source"], Path(target), int(info["pid"]), info["started"],
                                                 host=info["host"], log=Path(info["log"]))

    def keep(self, host: str, dirs: list[Path], log_dir: Path) -> None:
        for d in dirs:
            if str(d) not in self._mounts:
                m = UnsyncedMount(f"{self.prefix}-{host}-{d.name}", d, 0, None, host=host,
                                  log=log_dir / f"unsyncfs-{d.name}.log")
                self._mounts[str(d)] = m
        self.mount_host(host)

    def of(self, host: str) -> list[UnsyncedMount]:
        return [m for m in self._mounts.values() if m.host == host]

    def mount_host(self, host: str) -> None:
        """Mount every directory of `host` whose filesystem is not serving (after a power cut: what survived)."""
        down = [m for m in self.of(host) if not m.alive()]
        finish_cut(down)
        for m in down:
            fresh = mount(m.target, m.source, self.env, m.log)
            m.pid, m.started, m.child = fresh.pid, fresh.started, fresh.child
            self._record()
            if m.rules:  # a faulty disk stays faulty across a power cycle (its counts start again)
                set_faults(m, m.rules)

    def cut_host(self, host: str) -> None:
        """The instant `host` loses power: every unsynced write of its directories is dropped."""
        cut(self.of(host))

    def mount_of(self, host: str, target: Path) -> UnsyncedMount:
        m = self._mounts.get(str(target))
        if m is None or m.host != host:
            raise RuntimeFailure(f"{host}: {target} is not on unsyncfs")
        return m

    def start_fault(self, host: str, target: Path, rule: dict[str, Any]) -> dict[str, Any]:
        """Add the disk fault `rule` (its `id` new) to the mount over `target`: its status once applied."""
        m = self.mount_of(host, target)
        m.rules = [*(r for r in m.rules if r["id"] != rule["id"]), rule]
        try:
            return set_faults(m, m.rules)
        except RuntimeFailure:
            m.rules = [r for r in m.rules if r["id"] != rule["id"]]
            raise

    def stop_fault(self, host: str, target: Path, rule_id: str) -> dict[str, Any]:
        """Take the rule `rule_id` off the mount over `target`: what it counted (empty if the mount restarted
        since, which took every rule with it)."""
        m = self.mount_of(host, target)
        m.rules = [r for r in m.rules if r["id"] != rule_id]
        status = set_faults(m, m.rules) if m.alive() else read_status(m)
        return fault_counts(status, rule_id)

    def fault_counts(self, host: str, target: Path, rule_id: str) -> dict[str, Any]:
        return fault_counts(read_status(self.mount_of(host, target)), rule_id)

    def pids(self) -> set[int]:
        return {m.pid for m in self._mounts.values() if m.alive()}

    def unmount_all(self) -> list[str]:
        """Everything synced and unmounted (the directories then hold what the hosts last wrote)."""
        cut_ones = unmount(list(self._mounts.values()))
        self._mounts.clear()
        self._record()
        return cut_ones

    def _record(self) -> None:
        self.state.update(mounts={t: {**m.to_json(), "host": m.host, "log": str(m.log)}
                                  for t, m in self._mounts.items() if m.pid})


class LocalDiskFaults:
    """`DiskFaults` (testbed.runtime.base) for a runtime whose hosts' unsyncfs mounts run on this machine
    (`self.disks`: netns, docker)."""

    disks: UnsyncedDisks

    def start_disk_fault(self, host: Host, data_dir: Path, rule: dict[str, Any]) -> dict[str, Any]:
        return self.disks.start_fault(host.name, data_dir, rule)

    def stop_disk_fault(self, host: Host, data_dir: Path, rule_id: str) -> dict[str, Any]:
        return self.disks.stop_fault(host.name, data_dir, rule_id)
