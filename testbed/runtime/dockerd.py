"""A Docker daemon the project owns: started, found again and stopped by its prefix.

The `docker` runtime and `make docker-images` need a daemon. When the user has
one (DOCKER_HOST, or the default socket answers) they use it through
`docker_client`; otherwise `start_dockerd(prefix)` starts Debian's dockerd
(package docker.io, 20.10) with everything it owns under paths named by the
prefix, and a network that can reach nothing but itself:

    /run/faultline/dockerd-<prefix>/     one directory per daemon, removed by stop()
        docker.sock                      --host=unix://...  (OwnDockerd.host, for DOCKER_HOST)
        dockerd.pid                      --pidfile
        exec/                            --exec-root (its containerd's state and socket, netns files)
        daemon.json                      --config-file: an empty one, so /etc/docker/daemon.json is never read
        data-root                        which data root it uses (for a clean after a crash)
        dockerd.log                      the daemon's output
    /var/lib/faultline/docker/           --data-root, shared and kept (FAULTLINE_DOCKER_DATA_ROOT)
    cgroup /faultline-<prefix>           --cgroup-parent: every container process of this daemon

Flags that keep the machine's network as it was: --bridge=none (no docker0,
containers get no network unless put on one), --iptables=false,
--ip6tables=false, --ip-forward=false, --ip-masq=false, --userland-proxy=false.
Networks are made with `create_internal_network`: `--internal`, inside
198.19.0.0/24, named (and their host bridge named) with a prefix. The daemon's
containerd namespace is `faultline`, so a system containerd it may share never
mixes its containers with a system Docker's.

Why the data root is shared: it holds the images (the base rootfs alone takes one
to three minutes of mmdebstrap; all three images ~720 MB), so a daemon started for a test or a run
finds what `make docker-images` built. The price is one own daemon at a time
per data root: a second start on the same data root is refused, naming the
running one. `start_dockerd(prefix, data_root=...)` gives a daemon a private
data root instead (`stop(remove_data_root=True)` deletes it).

Must never: touch the machine's iptables or sysctls, create a network that is
not internal or outside 198.19.0.0/24, or stop, unmount or remove anything that
is not named with a project prefix (fl + 6 hex digits; daemons found by pidfile and by
/proc/PID/cmdline naming our socket, never by process name).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import docker
import docker.errors
import requests

from testbed.errors import RuntimeFailure
from testbed.localprocs import all_pids, cmdline, is_alive, start_time
from testbed.runtime.base import PREFIX_RE
from testbed.runtime.docker_api import (  # noqa: F401  (re-exported: the daemon's API helpers)
    DEFAULT_HOST,
    NETWORK_RANGE,
    create_internal_network,
    daemon_answers,
    docker_client,
    one_line,
    one_line_text,
    remove_prefixed_resources,
)
from testbed.runtime.dockerd_host import (
    kill_cgroup,
    last_error,
    mounts_under,
    read_pid,
    remove_cgroup,
    unmount_under,
    wait_gone,
)
from testbed.runtime.dockerd_paths import DATA_ROOT, RUN_ROOT, DockerdPaths, dockerd_binary, dockerd_flags

DAEMON_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"  # containerd, runc, docker-init from Debian only
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 30.0  # dockerd gives running containers 15 s (--shutdown-timeout) before it kills them
KILL_TIMEOUT_S = 10.0
HOST_ARG_RE = re.compile(rf"^--host=unix://{re.escape(str(RUN_ROOT))}/dockerd-(fl[0-9a-f]{{6}})/docker\.sock$")
log = logging.getLogger("faultline.runtime")


@dataclass
class OwnDockerd:
    """A dockerd this project started (now, or by an earlier process: see `find_leftover_dockerds`)."""

    prefix: str
    pid: int
    data_root: Path
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    started_s: float = 0.0  # how long it took to answer, when we started it
    cleaned: list[str] = field(default_factory=list)  # leftovers of earlier daemons removed at start

    @property
    def paths(self) -> DockerdPaths:
        return DockerdPaths(self.prefix)

    @property
    def host(self) -> str:
        """The daemon's address, as DOCKER_HOST wants it."""
        return f"unix://{self.paths.socket}"

    def client(self, timeout: float = 120.0) -> docker.DockerClient:
        return docker_client(self.host, timeout=timeout)

    def alive(self) -> bool:
        return _is_our_dockerd(self.pid, self.prefix)

    def stop(self, timeout: float = STOP_TIMEOUT_S, remove_prefixed: bool = True,
             remove_data_root: bool = False) -> None:
        """Stop the daemon and remove its run directory; idempotent.

        First (if it answers) its containers and networks named with its
        prefix are removed. Then SIGTERM by pid (dockerd stops its other
        containers itself), SIGKILL after `timeout`; then whatever a killed
        daemon leaves is cleared: container processes in its cgroup, its
        containerd shims, mounts under its directories. The data root is kept
        unless `remove_data_root` (meant for a private one).
        """
        if remove_prefixed and self.alive():
            try:
                with contextlib.closing(docker_client(self.host, timeout=30.0)) as client:
                    remove_prefixed_resources(client, self.prefix)
            except (RuntimeFailure, docker.errors.DockerException, requests.RequestException) as exc:
                log.warning("dockerd %s: could not remove its containers first: %s", self.prefix, exc)
        _terminate(self.pid, self.prefix, self.process, timeout)
        _clear_after(self.prefix, self.data_root)
        if remove_data_root:
            _remove_data_root(self.data_root)


def start_dockerd(prefix: str, data_root: Path | None = None,
                  timeout: float = START_TIMEOUT_S) -> OwnDockerd:
    """Start Debian's dockerd for `prefix` (flags and layout: the module docstring) and wait until it answers.

    No other own daemon can be using the data root (that is refused), so any
    container or network in it named with a project prefix is a leftover of an
    earlier daemon (one killed, or a run that crashed): they are removed once
    the daemon answers, and listed in `.cleaned`.
    """
    if not PREFIX_RE.match(prefix):
        raise RuntimeFailure(f"bad dockerd prefix {prefix!r}: expected 'fl' and 6 hex digits")
    if os.geteuid() != 0:
        raise RuntimeFailure("starting a dockerd needs root: run as root, or set DOCKER_HOST to a running daemon")
    binary = dockerd_binary()
    data_root = Path(data_root or DATA_ROOT)
    for other in find_leftover_dockerds():
        if other.prefix == prefix:
            raise RuntimeFailure(f"a faultline dockerd for {prefix} already runs (pid {other.pid}, "
                                 f"DOCKER_HOST={other.host}); stop it first (make docker-clean)")
        if other.data_root.resolve() == data_root.resolve():
            raise RuntimeFailure(f"data root {data_root} is in use by faultline dockerd {other.prefix} "
                                 f"(pid {other.pid}): use DOCKER_HOST={other.host}, or stop it (make docker-clean)")
    paths = DockerdPaths(prefix)
    if paths.run_dir.exists():  # a stale directory of a dead daemon with this prefix
        _clear_after(prefix, data_root)
    paths.run_dir.mkdir(parents=True, mode=0o700)
    paths.config.write_text("{}\n")
    paths.data_root_note.write_text(f"{data_root}\n")  # so a clean after a crash knows which mounts were its
    paths.owner.write_text(f"{os.getpid()} {start_time(os.getpid())}\n")
    data_root.mkdir(parents=True, exist_ok=True)
    argv = [str(binary), *dockerd_flags(paths, data_root)]
    began = time.monotonic()
    with open(paths.log, "ab") as out:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True, close_fds=True,
                                   env={"PATH": DAEMON_PATH, "LANG": "C.UTF-8"})
    own = OwnDockerd(prefix, process.pid, data_root, process)
    try:
        _wait_answering(own, timeout)
        with contextlib.closing(docker_client(own.host, timeout=60.0)) as client:
            own.cleaned = remove_prefixed_resources(client, None)
    except BaseException:
        own.stop(timeout=5.0, remove_prefixed=False)
        raise
    for item in own.cleaned:
        log.info("dockerd %s: removed leftover %s", prefix, item)
    own.started_s = time.monotonic() - began
    log.info("dockerd %s: pid %d answers at %s after %.1f s", prefix, own.pid, own.host, own.started_s)
    return own


def find_leftover_dockerds(prefix: str | None = None) -> list[OwnDockerd]:
    """Every live dockerd this project started (or the one of `prefix`), and nothing else.

    Found by the pidfile under /run/faultline/dockerd-<prefix>/ and by any
    process whose command line is a dockerd listening on such a socket; a pid
    counts only if /proc/PID/cmdline is a dockerd with exactly our --host.
    """
    found: dict[int, OwnDockerd] = {}
    if RUN_ROOT.is_dir():
        for run_dir in sorted(RUN_ROOT.glob("dockerd-fl*")):
            candidate = run_dir.name.removeprefix("dockerd-")
            if not PREFIX_RE.match(candidate) or (prefix and candidate != prefix):
                continue
            pid = read_pid(DockerdPaths(candidate).pidfile)
            if pid is not None and _is_our_dockerd(pid, candidate):
                found[pid] = OwnDockerd(candidate, pid, _data_root_of(pid))
    for pid in all_pids():
        if pid in found:
            continue
        argv = cmdline(pid)
        if not argv or Path(argv[0]).name != "dockerd":
            continue
        for arg in argv[1:]:
            matched = HOST_ARG_RE.match(arg)
            if matched and (prefix is None or matched.group(1) == prefix) and is_alive(pid):
                found[pid] = OwnDockerd(matched.group(1), pid, _data_root_of(pid))
    return sorted(found.values(), key=lambda d: d.prefix)


def stop_leftover_dockerds(prefix: str | None = None) -> list[str]:
    """Stop every dockerd this project started (or `prefix`'s) and remove stale run directories; what went."""
    removed: list[str] = []
    for own in find_leftover_dockerds(prefix):
        own.stop()
        removed.append(f"dockerd {own.prefix} (pid {own.pid})")
    if RUN_ROOT.is_dir():
        for run_dir in sorted(RUN_ROOT.glob("dockerd-fl*")):
            stale = run_dir.name.removeprefix("dockerd-")
            if PREFIX_RE.match(stale) and (prefix is None or stale == prefix) and run_dir.exists():
                _clear_after(stale, None)
                removed.append(f"dockerd directory {run_dir}")
    return removed


# --- the parts of start and stop -------------------------------------------------------------------------


def _wait_answering(own: OwnDockerd, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    last = "no answer"
    while time.monotonic() < deadline:
        if own.process is not None and own.process.poll() is not None:
            raise RuntimeFailure(f"dockerd {own.prefix} exited with status {own.process.returncode} before "
                                 f"answering: {last_error(own.paths.log)}")
        if own.paths.socket.exists():
            try:
                with contextlib.closing(docker.DockerClient(base_url=own.host, timeout=5)) as client:
                    client.ping()
                    return
            except (docker.errors.DockerException, requests.RequestException, OSError) as exc:
                last = one_line(exc)
        time.sleep(0.1)
    raise RuntimeFailure(f"dockerd {own.prefix} did not answer within {timeout:.0f} s ({last}): "
                         f"{last_error(own.paths.log)}")


def _terminate(pid: int, prefix: str, process: subprocess.Popen[bytes] | None, timeout: float) -> None:
    """SIGTERM, wait, SIGKILL: only while `pid` is still our dockerd of `prefix`."""
    for signum, wait_s in ((signal.SIGTERM, timeout), (signal.SIGKILL, KILL_TIMEOUT_S)):
        if not _is_our_dockerd(pid, prefix):
            break
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)
        if signum == signal.SIGKILL:
            log.warning("dockerd %s (pid %d) ignored SIGTERM for %.0f s; killed", prefix, pid, timeout)
        wait_gone(pid, process, wait_s)
    if process is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=1.0)
    if _is_our_dockerd(pid, prefix):
        raise RuntimeFailure(f"dockerd {prefix} (pid {pid}) survived SIGKILL")


def _clear_after(prefix: str, data_root: Path | None) -> None:
    """After the daemon of `prefix` is gone: its container processes, shims, mounts and run directory."""
    paths = DockerdPaths(prefix)
    if data_root is None and paths.data_root_note.is_file():
        data_root = Path(paths.data_root_note.read_text().strip())
    kill_cgroup(paths.cgroup_parent)
    helpers = [pid for pid in all_pids() if _is_helper_of(pid, paths)]
    for pid in helpers:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + KILL_TIMEOUT_S
    while any(is_alive(pid) for pid in helpers) and time.monotonic() < deadline:
        time.sleep(0.05)
    unmount_under(paths.run_dir)
    if data_root is not None and not any(o.data_root.resolve() == data_root.resolve()
                                         for o in find_leftover_dockerds()):
        unmount_under(data_root)  # only a killed daemon leaves these (container rootfs, shm, the overlay2 home)
    if mounts_under(paths.run_dir):
        raise RuntimeFailure(f"dockerd {prefix}: {paths.run_dir} still has mounts; unmount them and run make docker-clean")
    shutil.rmtree(paths.run_dir, ignore_errors=True)
    remove_cgroup(paths.cgroup_parent)


def _remove_data_root(data_root: Path) -> None:
    if any(o.data_root.resolve() == data_root.resolve() for o in find_leftover_dockerds()):
        raise RuntimeFailure(f"data root {data_root} is in use by a running faultline dockerd")
    unmount_under(data_root)
    if mounts_under(data_root):
        raise RuntimeFailure(f"data root {data_root} still has mounts; not removed")
    shutil.rmtree(data_root, ignore_errors=True)


def _is_helper_of(pid: int, paths: DockerdPaths) -> bool:
    """A containerd, shim or docker-proxy working for the daemon of `paths` (its command line names our run dir)."""
    argv = cmdline(pid)
    return (bool(argv) and Path(argv[0]).name.startswith(("containerd", "docker-proxy"))
            and any(str(paths.run_dir) + "/" in arg for arg in argv))


def _is_our_dockerd(pid: int, prefix: str) -> bool:
    argv = cmdline(pid)
    return (bool(argv) and Path(argv[0]).name == "dockerd" and DockerdPaths(prefix).host_arg in argv
            and is_alive(pid))


def _data_root_of(pid: int) -> Path:
    for arg in cmdline(pid):
        if arg.startswith("--data-root="):
            return Path(arg.split("=", 1)[1])
    return Path("/var/lib/docker")


def orphaned(own: OwnDockerd) -> bool:
    """Whether the process that started `own` has exited (it would have stopped the daemon: it was killed)."""
    try:
        pid, started = DockerdPaths(own.prefix).owner.read_text().split()
    except (OSError, ValueError):
        return True
    return not is_alive(int(pid)) or str(start_time(int(pid))) != started
