"""A real JVM on a shifted clock (testbed.runtime.clocks): System.currentTimeMillis follows the offset file while it
runs, within the re-read interval, and System.nanoTime never moves. What every clock fault relies on."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

from testbed.runtime.clocks import CLOCK_REREAD_S, LIBFAKETIME, LocalClocks

# Prints, every 50 ms, its monotonic clock (System.nanoTime: CLOCK_MONOTONIC, as Python's time.monotonic) in ms and
# its wall clock minus its monotonic clock since it started, in ms: 0 on a true clock.
CLOCK_JAVA = """
public class Clock { public static void main(String[] a) throws Exception {
  long w0 = System.currentTimeMillis(), n0 = System.nanoTime();
  while (true) { Thread.sleep(50);
    long n = System.nanoTime();
    System.out.println(n / 1000000 + " " + (System.currentTimeMillis() - w0 - (n - n0) / 1000000)); } } }
"""


def _skews(out: Path) -> list[tuple[float, float]]:
    """(monotonic ms since the JVM started, wall minus monotonic ms) per line written so far."""
    rows = [line.split() for line in out.read_text().splitlines()]
    return [(float(m), float(s)) for m, s in (r for r in rows if len(r) == 2)]


def _wait_line(out: Path, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not _skews(out):
        assert time.monotonic() < deadline, f"the JVM printed nothing: {out.read_text()[-500:]}"
        time.sleep(0.05)


def test_a_running_jvms_wall_clock_follows_its_offset_file_and_its_monotonic_clock_does_not(tmp_path: Path) -> None:
    assert LIBFAKETIME.exists(), f"{LIBFAKETIME} missing: make setup installs Debian's libfaketime"
    (tmp_path / "Clock.java").write_text(CLOCK_JAVA)
    offsets, host = tmp_path / "clock" / "broker.offset", SimpleNamespace(name="az1-node")
    runtime = LocalClocks()
    env = runtime.clock_env(host, offsets)  # type: ignore[arg-type]
    assert offsets.read_text() == "+0.000\n"
    # Compiled first on a true clock: javac under libfaketime takes half a minute (it stats every file it reads).
    javac = Path(shutil.which("java") or "java").resolve().parent / "javac"  # Debian's openjdk-17-jdk-headless
    subprocess.run([str(javac), "-d", str(tmp_path), str(tmp_path / "Clock.java")], check=True, timeout=120)
    out = tmp_path / "out.txt"
    with open(out, "w") as sink:
        jvm = subprocess.Popen(["java", "-Xmx32m", "-cp", str(tmp_path), "Clock"], stdout=sink,
                               stderr=subprocess.STDOUT, env={**os.environ, **env})
    try:
        _wait_line(out)
        steps: list[tuple[float, float]] = []  # (offset, when set: seconds on this test's monotonic clock)
        for step_ms in (-30000.0, 60000.0, 0.0):
            runtime.set_clock_offset(host, offsets, step_ms)  # type: ignore[arg-type]
            steps.append((step_ms, time.monotonic()))
            time.sleep(CLOCK_REREAD_S + 0.8)
        assert jvm.poll() is None, out.read_text()[-2000:]
    finally:
        jvm.kill()
        jvm.wait()
    skews = _skews(out)
    assert all(abs(s) < 50 for _, s in skews[:3]), skews[:3]  # true time before the first step
    for step_ms, set_at in steps:  # each step seen within the re-read interval of its write, to the millisecond
        first = next((m for m, s in skews if m >= set_at * 1000 and abs(s - step_ms) < 50), None)
        assert first is not None, (step_ms, skews)
        assert first - set_at * 1000 <= CLOCK_REREAD_S * 1000 + 300, (step_ms, first - set_at * 1000)
    monos = [m for m, _ in skews]
    assert monos == sorted(monos)  # System.nanoTime never stepped back with the wall clock
