"""An ssh host's clock against the harness's (testbed.runtime.ssh_clock): measured offsets read back as clocks that
move a host's stamps onto the harness's time, followed between the start's and the end's measurement."""

from __future__ import annotations

import json
from pathlib import Path

from testbed.runtime.ssh_clock import SAME_CLOCK, host_clocks

S = 1_000_000_000
T0 = 1_800_000_000 * S


def write(path: Path, start: dict[str, float], end: dict[str, float]) -> Path:
    path.write_text(json.dumps({"start": {"az1-node": start}, "end": {"az1-node": end}, "large_s": 0.01}))
    return path


def test_a_drifting_clock_is_interpolated_between_the_two_measurements(tmp_path: Path) -> None:
    # az1-node's clock is on time at the start and 4 s ahead 40 s later: it gains 0.1 s a second.
    clock = host_clocks(write(tmp_path / "clocks.json", {"offset_s": 0.0, "bound_s": 0.001, "at_s": T0 / S},
                              {"offset_s": 4.0, "bound_s": 0.001, "at_s": T0 / S + 40}))["az1-node"]
    assert clock.harness_ns(T0 + 22 * S) == T0 + 20 * S  # written at 20 s, when the host was 2 s ahead (the mean: 22)
    assert clock.harness_ns(T0 - 5 * S) == T0 - 5 * S  # before the first measurement: the start's offset held
    assert clock.harness_ns(T0 + 60 * S) == T0 + 56 * S  # after the last: the end's


def test_a_clocks_file_without_the_moments_times_gives_the_mean_offset(tmp_path: Path) -> None:
    clock = host_clocks(write(tmp_path / "clocks.json", {"offset_s": 2.9, "bound_s": 0.001},
                              {"offset_s": 3.1, "bound_s": 0.001}))["az1-node"]
    assert clock.harness_ns(T0) == clock.harness_ns(T0 + 100 * S) - 100 * S == T0 - 3 * S


def test_no_file_or_an_unreadable_one_gives_no_clocks(tmp_path: Path) -> None:
    assert host_clocks(tmp_path / "clocks.json") == {}
    (tmp_path / "clocks.json").write_text("{not json")
    assert host_clocks(tmp_path / "clocks.json") == {}
    assert SAME_CLOCK.harness_ns(T0) == T0
