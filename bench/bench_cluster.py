"""`make bench-cluster`: cluster up time (to ready) and down time, median of N runs.

A benchmark, not a test: it prints figures for BENCHMARKS.md. Target on 2 cores: up <= 20 s, down <= 3 s.
With `--runtime ssh` and no `--inventory`, the hosts are a fresh sshd test bed (tests/ssh/bed.py, on a
dockerd of the project's own): the first up uploads Kafka and the client venv, the later ones reuse them
(target for a cached up: <= 30 s).
"""

from __future__ import annotations

import contextlib
import os
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


def timed(*args: str) -> float:
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "harness", *args], cwd=REPO, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"faultline {' '.join(args)} failed: {proc.stderr.strip()[-500:]}")
    return time.monotonic() - started


def main() -> None:
    parser = ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--runtime", help="as `cluster up --runtime` (default: its default)")
    parser.add_argument("--inventory", help="ssh: your hosts (default: a fresh sshd test bed on this machine)")
    parser.add_argument("--known-hosts", help="ssh: as `cluster up --known-hosts`")
    args = parser.parse_args()
    runs = args.runs
    ups, downs = [], []
    with tempfile.TemporaryDirectory(prefix="faultline-bench-") as tmp, contextlib.ExitStack() as stack:
        hosts: list[str] = []
        if args.runtime == "ssh":
            inventory, known_hosts = args.inventory, args.known_hosts
            if inventory is None:
                inventory, known_hosts = stack.enter_context(ssh_testbed(Path(tmp)))
            hosts = ["--inventory", inventory] + (["--known-hosts", known_hosts] if known_hosts else [])
        for i in range(runs):
            runtime = ["--runtime", args.runtime] if args.runtime else []
            ups.append(timed("cluster", "up", *runtime, *hosts, "--run-dir", f"{tmp}/run{i}"))
            downs.append(timed("cluster", "down"))
            print(f"run {i + 1}: up {ups[-1]:.2f} s, down {downs[-1]:.2f} s", flush=True)
    print(f"runtime: {args.runtime or 'default'}  cores: {os.cpu_count()}  runs: {runs}")
    if args.runtime == "ssh":
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
    from tests.ssh.bed import build_base_image, sshd_testbed

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
