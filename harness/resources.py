"""The harness's own memory and the run's disk, sampled over a run: run.json's `resources` (docs/run-manifest.md).

A thread reads this process's resident set size every `poll_s` and, every
`interval_s`, records one sample: the seconds since the run started, the
phase, the largest RSS seen in the period (`peak_rss_bytes`) and the RSS now,
and the bytes of the run's journals, history tables and whole folder (the
nodes' data, logs and before-heal copies included). A run of hours then shows
whether the harness's own cost is flat in the hour count. Each sample is
handed to `on_sample` with the whole series (the manifest rewrites run.json,
so a harness killed mid-run leaves the series up to its last minute).
The series is bounded: past MAX_SAMPLES, every other sample of its older half is
dropped (the peaks kept: two neighbours merge into their larger).
Must never: fail or slow a run (a reading that fails is left out of the sample),
or read anything but /proc/self and the run folder.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from testbed.runfolder import RunFolder

log = logging.getLogger("faultline.resources")
INTERVAL_S = 60.0
POLL_S = 1.0
MAX_SAMPLES = 1500  # a day of minutes, then older samples pair up
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")


def rss_bytes() -> int | None:
    """This process's resident set size now (/proc/self/statm), None where there is no /proc."""
    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            return int(fh.read().split()[1]) * PAGE_BYTES
    except (OSError, ValueError, IndexError):
        return None


def tree_bytes(path: Path) -> int:
    """The bytes of every regular file under `path` (0 if it does not exist), not crossing into another filesystem:
    a node's data directory mounted on unsyncfs is read through its FUSE process, which a fault may have stopped or
    killed (a stat there could wait for it). Files that vanish while counted are skipped."""
    try:
        device = os.lstat(path).st_dev
    except OSError:
        return 0
    total = 0
    for root, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if _on(device, os.path.join(root, d))]
        for name in files:
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                total += st.st_size
    return total


def _on(device: int, path: str) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return st.st_dev == device and stat.S_ISDIR(st.st_mode)


def merge_pair(older: dict[str, Any], newer: dict[str, Any]) -> dict[str, Any]:
    """Two neighbouring samples as one: the newer's readings, the larger peak."""
    peaks: list[int] = [s["peak_rss_bytes"] for s in (older, newer) if s.get("peak_rss_bytes") is not None]
    return {**newer, "peak_rss_bytes": max(peaks) if peaks else None}


def bounded(samples: list[dict[str, Any]], limit: int = MAX_SAMPLES) -> list[dict[str, Any]]:
    """`samples` at most `limit` long: the older half's neighbours merged in pairs until it fits."""
    while len(samples) > limit:
        half = len(samples) // 2
        older = [merge_pair(*samples[i:i + 2]) if i + 1 < half else samples[i] for i in range(0, half, 2)]
        samples = older + samples[half:]
    return samples


class ResourceMonitor:
    """Samples the harness's memory and the run folder's bytes until `stop`; `phase()` names what the run does."""

    def __init__(self, folder: RunFolder, on_sample: Callable[[list[dict[str, Any]]], None],
                 phase: Callable[[], str] = lambda: "", interval_s: float = INTERVAL_S, poll_s: float = POLL_S,
                 rss: Callable[[], int | None] = rss_bytes, clock: Callable[[], float] = time.monotonic) -> None:
        self.folder = folder
        self.on_sample = on_sample
        self.phase = phase
        self.interval_s, self.poll_s = interval_s, poll_s
        self.rss, self.clock = rss, clock
        self.started = clock()
        self.samples: list[dict[str, Any]] = []
        self._peak: int | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._main, name="resources", daemon=True)

    def start(self) -> ResourceMonitor:
        self._thread.start()
        return self

    def stop(self) -> list[dict[str, Any]]:
        """End the sampling with one last sample (the judging's peak, at the end of a run); returns the series."""
        if self._stop.is_set():
            return self.samples
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10.0)
        self.poll()
        self.sample()
        return self.samples

    def poll(self) -> None:
        """One RSS reading into the period's peak."""
        now = self.rss()
        if now is not None:
            with self._lock:
                self._peak = now if self._peak is None else max(self._peak, now)

    def sample(self) -> dict[str, Any]:
        """The period's sample (the peak starts again), appended to the series and handed to `on_sample`."""
        with self._lock:
            peak, self._peak = self._peak, None
        row: dict[str, Any] = {
            "t_s": round(self.clock() - self.started, 1), "phase": self.phase(), "peak_rss_bytes": peak,
            "rss_bytes": self.rss(), "journal_bytes": tree_bytes(self.folder.journal_dir),
            "history_bytes": tree_bytes(self.folder.history_dir), "folder_bytes": tree_bytes(self.folder.root)}
        self.samples = bounded([*self.samples, row])
        try:
            self.on_sample(list(self.samples))
        except Exception as exc:  # noqa: BLE001 - a sample nobody could keep is a log line, never a failed run
            log.warning("could not record the resources sample: %s", exc)
        return row

    def _main(self) -> None:
        due = self.started + self.interval_s
        while not self._stop.wait(self.poll_s):
            self.poll()
            if self.clock() >= due:
                due += self.interval_s
                try:
                    self.sample()
                except OSError as exc:
                    log.warning("resources sample failed: %s", exc)
