"""run.json's `resources`: the harness's peak RSS per period and the run folder's bytes, sampled over a run."""

from __future__ import annotations

import threading
from pathlib import Path

from harness.resources import ResourceMonitor, bounded, rss_bytes, tree_bytes
from testbed.runfolder import RunFolder


class Readings:
    """A fake RSS (what the next readings return) and a fake monotonic clock."""

    def __init__(self) -> None:
        self.now = 0.0
        self.rss = [100]

    def clock(self) -> float:
        return self.now

    def read(self) -> int | None:
        return self.rss.pop(0) if len(self.rss) > 1 else self.rss[0]


def test_each_sample_holds_the_periods_peak_and_the_folders_bytes(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path / "run").make()
    (folder.journal_dir / "producer-az1-0.jsonl").write_bytes(b"x" * 300)
    kept: list[list[dict]] = []
    fake = Readings()
    monitor = ResourceMonitor(folder, kept.append, phase=lambda: "running", rss=fake.read, clock=fake.clock)
    fake.rss = [100, 900, 200, 150]
    for _ in range(3):
        monitor.poll()
    fake.now = 60.0
    first = monitor.sample()
    assert (first["t_s"], first["phase"], first["peak_rss_bytes"], first["rss_bytes"]) == (60.0, "running", 900, 150)
    assert (first["journal_bytes"], first["history_bytes"]) == (300, 0)
    folder.history_dir.mkdir()
    (folder.history_dir / "writes.parquet").write_bytes(b"y" * 40)
    fake.rss = [120]
    monitor.poll()
    fake.now = 120.0
    second = monitor.sample()
    assert second["peak_rss_bytes"] == 120, "the peak starts again each period: a spike is counted once"
    assert second["history_bytes"] == 40 and second["folder_bytes"] >= 340
    assert kept[-1] == [first, second] == monitor.samples, "every sample hands over the whole series"


def test_the_thread_samples_every_interval_and_stop_takes_a_last_one(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path / "run").make()
    two = threading.Event()

    def keep(samples: list[dict]) -> None:
        if len(samples) >= 2:
            two.set()

    monitor = ResourceMonitor(folder, keep, interval_s=0.05, poll_s=0.01).start()
    assert two.wait(5.0)
    samples = monitor.stop()
    assert len(samples) >= 3 and samples[-1]["t_s"] >= samples[-2]["t_s"]
    assert all(s["peak_rss_bytes"] and s["peak_rss_bytes"] > 1 << 20 for s in samples[:-1]), "this process's own RSS"
    assert monitor.stop() is samples, "a second stop samples nothing more"


def test_a_sample_nobody_can_keep_does_not_fail_the_run(tmp_path: Path) -> None:
    def refuse(samples: list[dict]) -> None:
        raise OSError("disk full")

    monitor = ResourceMonitor(RunFolder(tmp_path / "run").make(), refuse)
    assert monitor.sample()["journal_bytes"] == 0 and len(monitor.samples) == 1


def test_a_long_series_is_bounded_by_merging_its_older_half_peaks_kept() -> None:
    samples = [{"t_s": float(i), "peak_rss_bytes": 7 if i == 3 else 1} for i in range(12)]
    out = bounded(samples, limit=8)
    assert len(out) <= 8 and out[-5:] == samples[-5:], "the newest samples stay as they were"
    times = [s["t_s"] for s in out]
    assert times == sorted(times) and times[-1] == 11.0
    assert max(s["peak_rss_bytes"] for s in out) == 7, "a merged pair keeps its larger peak"
    assert bounded(samples, limit=20) == samples


def test_readings_of_this_process_and_of_a_tree(tmp_path: Path) -> None:
    rss = rss_bytes()
    assert rss is not None and rss > 1 << 20
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f").write_bytes(b"z" * 10)
    (tmp_path / "g").write_bytes(b"z" * 5)
    (tmp_path / "link").symlink_to(tmp_path / "g")
    assert tree_bytes(tmp_path) == 15 and tree_bytes(tmp_path / "none") == 0
