"""A real standalone Spark cluster (one master, one worker) from the installed pyspark, on loopback.

For `make spark-cluster`, `python -m spark_analysis spark-cluster` and the tests: the
master and worker are the JVMs of `spark-class org.apache.spark.deploy.master.Master` /
`...worker.Worker` shipped inside the pyspark package, bound to 127.0.0.1 on free ports,
each started in a session of its own and carrying the run prefix in its name
(`-Dfaultline.name=<prefix>-spark-master`, visible in `ps`). `stop` ends exactly those
two process groups (SIGTERM, then SIGKILL) and waits for them. Each daemon also carries
its starter's pid and start time (STARTER_ENV), so `python -m harness clean` can find the
daemons of a starter that was killed (`orphaned_daemons`) and leave a live one's alone.
Must never: bind anything but loopback, or signal a process it did not start (or one whose
starter is still alive, from `clean`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from testbed.errors import HarnessError
from testbed.localprocs import all_pids, cmdline_bytes, env_of, is_alive, start_time, wait_dead
from testbed.runtime.base import new_prefix

HOST = "127.0.0.1"
START_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 15.0
STARTER_ENV = "FAULTLINE_SPARK_STARTER"  # "<pid>:<start time>" of the process that started the daemon
DAEMON_NAME = re.compile(rb"-Dfaultline\.name=(fl[0-9a-f]{6})-spark-(master|worker)(?:\x00|$)")


def spark_home() -> Path:
    import pyspark  # only here: `clean` finds orphaned daemons without pyspark installed

    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


class StandaloneCluster:
    """One master and one worker; `url` is the master URL to give `--spark-master`."""

    def __init__(self, work_dir: Path, prefix: str | None = None, cores: int = 2, memory: str = "2g") -> None:
        self.work_dir = work_dir
        self.prefix = prefix or new_prefix()
        self.cores, self.memory = cores, memory
        self.port, self.ui_port = free_port(), free_port()
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    @property
    def url(self) -> str:
        return f"spark://{HOST}:{self.port}"

    def _env(self, role: str) -> dict[str, str]:
        env = dict(os.environ)
        env.update({
            "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": HOST, "SPARK_LOCAL_HOSTNAME": HOST,
            "SPARK_DAEMON_MEMORY": "256m", "SPARK_LOG_DIR": str(self.work_dir / "logs"),
            "SPARK_DAEMON_JAVA_OPTS": f"-Dfaultline.name={self.prefix}-spark-{role}",
            "SPARK_NO_DAEMONIZE": "1", STARTER_ENV: f"{os.getpid()}:{start_time(os.getpid())}",
        })
        return env

    def _spawn(self, role: str, cls: str, args: list[str]) -> None:
        log = (self.work_dir / f"{self.prefix}-spark-{role}.log").open("wb")
        with log:
            self.procs[role] = subprocess.Popen(
                [str(spark_home() / "bin" / "spark-class"), cls, *args], env=self._env(role),
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def start(self) -> StandaloneCluster:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        try:
            self._spawn("master", "org.apache.spark.deploy.master.Master",
                        ["--host", HOST, "--port", str(self.port), "--webui-port", str(self.ui_port)])
            self._spawn("worker", "org.apache.spark.deploy.worker.Worker",
                        [self.url, "--host", HOST, "--cores", str(self.cores), "--memory", self.memory,
                         "--webui-port", str(free_port()), "--work-dir", str(self.work_dir / "work")])
            self._wait_for_worker()
        except BaseException:
            self.stop()
            raise
        return self

    def alive_workers(self) -> int:
        try:
            with urllib.request.urlopen(f"http://{HOST}:{self.ui_port}/json/", timeout=2) as answer:
                return int(json.loads(answer.read()).get("aliveworkers", 0))
        except (OSError, ValueError):
            return 0

    def _wait_for_worker(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            for role, proc in self.procs.items():
                if proc.poll() is not None:
                    raise HarnessError(f"spark {role} exited with {proc.returncode}: see "
                                       f"{self.work_dir / f'{self.prefix}-spark-{role}.log'}")
            if self.alive_workers() >= 1:
                return
            time.sleep(0.5)
        raise HarnessError(f"no Spark worker registered with {self.url} within {START_TIMEOUT_S:.0f} s")

    def pids(self) -> list[int]:
        return [p.pid for p in self.procs.values() if p.poll() is None]

    def stop(self) -> None:
        """End the worker, then the master (their whole process groups), and wait for them."""
        for role in ("worker", "master"):
            proc = self.procs.get(role)
            if proc is None or proc.poll() is not None:
                continue
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(STOP_TIMEOUT_S)


@contextlib.contextmanager
def standalone_cluster(work_dir: Path, prefix: str | None = None) -> Iterator[StandaloneCluster]:
    """A started cluster for the block; stopped on every exit path."""
    cluster = StandaloneCluster(work_dir, prefix)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


def _starter_alive(pid: int) -> bool:
    """Whether the process that started daemon `pid` still runs (no starter recorded: treated as alive)."""
    recorded = env_of(pid, STARTER_ENV)
    if recorded is None:
        return True
    starter, _, started = recorded.partition(":")
    return starter.isdigit() and is_alive(int(starter)) and str(start_time(int(starter))) == started


def orphaned_daemons() -> list[tuple[int, str]]:
    """(pid, `<prefix>-spark-<role>`) of every standalone master or worker whose starter is gone (it was killed)."""
    found = []
    for pid in all_pids():
        raw = cmdline_bytes(pid)
        match = None if raw is None else DAEMON_NAME.search(raw)
        if match is not None and not _starter_alive(pid):
            found.append((pid, f"{match[1].decode()}-spark-{match[2].decode()}"))
    return sorted(found)


def clean_orphaned_daemons() -> list[str]:
    """Stop what `orphaned_daemons` finds (SIGTERM, then SIGKILL by pid and start time); return what went."""
    orphans = orphaned_daemons()
    pids = [pid for pid, _ in orphans]
    for signum, wait_s in ((signal.SIGTERM, STOP_TIMEOUT_S), (signal.SIGKILL, STOP_TIMEOUT_S)):
        for pid in pids:  # found a moment ago by their names: still them (wait_dead drops a reused pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)
        pids = wait_dead(pids, wait_s)
    if pids:
        raise HarnessError(f"Spark daemons {pids} survived SIGKILL")
    return [f"{name} (pid {pid}), its starter gone" for pid, name in orphans]
