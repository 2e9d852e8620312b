"""The report's notes on where the hosts were: nothing for local runtimes; host keys, power-off and clocks for ssh."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from report.hosts import host_notes
from testbed.runtime.kinds import kind

POWER_OFF_NOTE = kind("ssh").power_off_note


def test_local_runtimes_get_no_notes(tmp_path: Path) -> None:
    for name in ("netns", "docker"):  # both drop unsynced writes at a power-off: nothing to weigh
        (tmp_path / "state.json").write_text(json.dumps({"runtime": name}))
        assert host_notes(tmp_path, pd.DataFrame({"fault": ["power-off"]})) == []
        assert host_notes(tmp_path, pd.DataFrame({"fault": ["isolate-az"]})) == []


def test_ssh_notes_say_host_keys_power_off_and_large_clock_offsets(tmp_path: Path) -> None:
    (tmp_path / "state.json").write_text(json.dumps({"runtime": "ssh", "ssh": {
        "inventory": "/x/hosts.yaml", "host_keys": "checked against /x/known_hosts (--known-hosts)"}}))
    offsets = {"az1-node": {"offset_s": 0.004, "bound_s": 0.001}, "az2-node": {"offset_s": -0.25, "bound_s": 0.002}}
    (tmp_path / "clocks.json").write_text(json.dumps({"start": offsets, "end": offsets, "large_s": 0.01}))
    notes = host_notes(tmp_path, pd.DataFrame({"fault": ["isolate-az", "power-off"]}))
    assert notes[0] == "hosts: ssh, from the inventory /x/hosts.yaml; host keys checked against /x/known_hosts " \
                       "(--known-hosts)"
    assert notes[1] == POWER_OFF_NOTE and "page cache survives" in notes[1]
    assert "az2-node -0.250 s (±0.002) at the start" in notes[2] and "az1-node" not in notes[2]


def test_ssh_notes_say_each_node_hosts_kind_of_power_off(tmp_path: Path) -> None:
    power = {"az1-node": "unsyncfs", "az2-node": "command", "az3-node": "unsyncfs"}
    (tmp_path / "state.json").write_text(json.dumps({"runtime": "ssh", "ssh": {"inventory": "/i.yaml",
                                                                               "host_keys": "tofu", "power": power}}))
    notes = host_notes(tmp_path, pd.DataFrame({"fault": ["power-off"]}))
    assert "power-off per node host: az1-node unsyncfs, az2-node command, az3-node unsyncfs" in notes[0]
    assert not any("page cache survives" in n for n in notes)  # every host dropped its unsynced writes
    (tmp_path / "state.json").write_text(json.dumps({"runtime": "ssh", "ssh": {"power": {**power,
                                                                                         "az2-node": "processes"}}}))
    notes = host_notes(tmp_path, pd.DataFrame({"fault": ["power-off"]}))
    assert any(n.startswith("az2-node: ") and "page cache survives" in n for n in notes)


def test_small_offsets_are_said_as_a_bound(tmp_path: Path) -> None:
    (tmp_path / "state.json").write_text(json.dumps({"runtime": "ssh"}))
    (tmp_path / "clocks.json").write_text(json.dumps({"start": {"az1-node": {"offset_s": -0.0021, "bound_s": 0.001}}}))
    assert host_notes(tmp_path, pd.DataFrame())[-1] == "host clocks within 2.1 ms of the harness's at the start and " \
                                                       "the end (clocks.json)"
