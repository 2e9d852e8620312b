"""`make bench-cluster`: cluster up time (to ready) and down time, median of N runs.

Each run's line also gives the bring-up's steps as `cluster up` logged them (hosts, quorum, controller,
brokers, topic). `--controller N` steers the controller as most scenarios do (`cluster.controller`).

A benchmark, not a test: it prints figures for BENCHMARKS.md. Target on 2 cores: up <= 20 s, down <= 3 s.
With `--runtime ssh` and no `--inventory`, the hosts are a fresh sshd test bed (testbed/sshbed.py, on a
dockerd of the project's own): the first up uploads Kafka and the client venv, the later ones reuse them
(target for a cached up: <= 30 s).
"""

from __future__ import annotations

import contextlib
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from checkers.argparser import ArgumentParser

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from testbed.runtime.kinds import KIND_NAMES, kind  # noqa: E402


def timed(*args: str) -> tuple[float, str]:
    """Seconds `faultline ARGS` took, and the steps it logged ("" if none)."""
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "harness", *args], cwd=REPO, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"faultline {' '.join(args)} failed: {proc.stderr.strip()[-500:]}")
    steps = re.search(r"(?:ready|torn down) in [0-9.]+ s \(([^;)]*)", proc.stderr)
    return time.monotonic() - started, steps.group(1) if steps else ""


def main() -> None:
    parser = ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--runtime", choices=KIND_NAMES, help="as `cluster up --runtime` (default: its default)")
    parser.add_argument("--inventory", help="ssh: your hosts (default: a fresh sshd test bed on this machine)")
    parser.add_argument("--known-hosts", help="ssh: as `cluster up --known-hosts`")
    parser.add_argument("--controller", type=int, help="as `cluster up --controller` (default: any broker)")
    args = parser.parse_args()
    runs = args.runs
    remote = args.runtime is not None and kind(args.runtime).needs_inventory  # ssh: its hosts are an inventory's
    ups, downs = [], []
    with tempfile.TemporaryDirectory(prefix="faultline-bench-") as tmp, contextlib.ExitStack() as stack:
        hosts: list[str] = []
        if remote:
            inventory, known_hosts = args.inventory, args.known_hosts
            if inventory is None:
                inventory, known_hosts = stack.enter_context(ssh_testbed(Path(tmp)))
            hosts = ["--inventory", inventory] + (["--known-hosts", known_hosts] if known_hosts else [])
        for i in range(runs):
            runtime = ["--runtime", args.runtime] if args.runtime else []
            steer = ["--controller", str(args.controller)] if args.controller is not None else []
            up, up_steps = timed("cluster", "up", *runtime, *steer, *hosts, "--run-dir", f"{tmp}/run{i}")
            down, down_steps = timed("cluster", "down")
            ups.append(up)
            downs.append(down)
            print(f"run {i + 1}: up {up:.2f} s ({up_steps}), down {down:.2f} s ({down_steps})", flush=True)
    steered = f"controller {args.controller}" if args.controller is not None else "no controller steering"
    print(f"runtime: {args.runtime or 'default'}  cores: {os.cpu_count()}  runs: {runs}  {steered}")
    if remote:
        print(f"cluster up, first (uploads Kafka and the client venv): {ups[0]:.2f} s")
        ups = ups[1:] or ups
        print(f"cluster up, cached (later runs): median {statistics.median(ups):.2f} s  (target <= 30 s)")
    else:
        print(f"cluster up (to ready): median {statistics.median(ups):.2f} s  (target <= 20 s)")
    print(f"cluster down:          median {statistics.median(downs):.2f} s  (target <= 3 s)")


@contextlib.contextmanager
def ssh_testbed(folder: Path) -> Iterator[tuple[str, str]]:
    """A fresh sshd test bed on a dockerd of the project's own: (inventory, known_hosts)."""
    from testbed.runtime.base import new_prefix
    from testbed.runtime.dockerd import start_dockerd
    from testbed.sshbed import build_base_image, sshd_testbed

    daemon = start_dockerd(new_prefix())
    os.environ["DOCKER_HOST"] = daemon.host
    try:
        build_base_image()
        client = daemon.client()
        (folder / "testbed").mkdir()
        with sshd_testbed(client, folder / "testbed") as bed:
            yield str(bed.inventory), str(bed.known_hosts)
        client.close()
    finally:
        daemon.stop()


if __name__ == "__main__":
    main()
