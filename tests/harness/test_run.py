"""Whole runs on the real cluster: spec in, verdict out; a killed harness recovered; broken specs refused."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
import yaml

from testbed.dist.kafka import DEFAULT_VERSION
from testbed.kafka.replicas import dump_replicas
from testbed.runfolder import RunFolder
from tests.conftest import REPO, faultline
from tests.harness.leftovers import remaining

pytestmark = pytest.mark.cluster


def only_run_dir(results: Path, name: str) -> Path:
    (run_dir,) = [p for p in (results / name).iterdir() if p.name != "latest"]
    return run_dir


def test_a_run_without_faults_is_valid_and_complete(tmp_path: Path) -> None:
    # Judged by Spark as asked (auto would pick pandas for a history this small): the one `harness run` of
    # `make test` that starts Spark, so its warm-up beside the story and its quiet console stay tested.
    proc = faultline("run", "scenarios/smoke.yaml", "--results", str(tmp_path), "--keep-data", "--engine", "spark",
                     timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    run_dir = only_run_dir(tmp_path, "smoke")
    assert list((run_dir / "nodes" / "az1-node" / "kafka-data").glob("faultline-0/*.index")), "--keep-data kept it"
    assert (tmp_path / "smoke" / "latest").resolve() == run_dir.resolve()
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["valid"] is True and verdict["errors"] == {}
    assert verdict["engine"] == "spark" and verdict["engine_reason"] == "asked for (--engine spark)"
    assert verdict["stats"]["ok"] >= 5000
    history = run_dir / "history"
    writes = pd.read_parquet(history / "writes.parquet")
    reads = pd.read_parquet(history / "reads.parquet")
    final = set(reads.loc[reads["phase"] == "final", "value"])
    acked = set(writes.loc[writes["status"] == "ok", "value"])
    assert acked <= final, f"{len(acked - final)} acknowledged values missing from the final log"
    live = reads[reads["phase"] == "live"]
    assert set(live["az"]) == {"az1", "az2", "az3"}, "consumers in every AZ saw records"
    assert set(writes["az"]) == {"az1", "az2", "az3"}
    obs = pd.read_parquet(history / "observations.parquet")
    assert set(obs["observer"]) == {"broker-0", "broker-1", "broker-2"}
    obs["bucket"] = obs["time_ns"] // 1_000_000_000
    answered = obs.dropna(subset=["leader"])
    leaders = answered.groupby(["bucket", "partition"])["leader"].nunique()
    assert (leaders == 1).all(), "observers disagreed on a leader in a run without faults"
    for name in ("spec.yaml", "report.html", "nodes/az1-node/logs/broker/server.log"):
        assert (run_dir / name).exists(), name
    prefix = json.loads((run_dir / "state.json").read_text())["prefix"]
    assert remaining(prefix) == []
    harness_log = (run_dir / "harness.log").read_text()
    for said in ("] provisioning", "ready in", "] running", "] draining", "] checking", "writes"):
        assert said in harness_log, f"harness.log lacks {said!r}"
    the_console_holds_only_faultlines_lines(proc.stdout + proc.stderr, harness_log)
    replicas_agree_with_each_other_and_the_final_log(run_dir, final_per_partition(reads))
    a_damaged_replica_is_found(run_dir, tmp_path / "damaged", final_per_partition(reads))


# What faultline itself prints: a progress line, one of its log records, a configuration's summary line.
OWN_LINE = re.compile(r"^(\[smoke\] |\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (INFO|WARNING|ERROR) |ERROR smoke |"
                      r"(PASS|FAIL)( \(expected[^)]*\))? · (VALID|INVALID|UNKNOWN)[^|]* \| smoke )")
NOISE = ("incubator modules", "Setting default log level", "FutureWarning", "Closing down clientserver", "|BGQUEUE|")


def the_console_holds_only_faultlines_lines(console: str, harness_log: str) -> None:
    foreign = [line for line in console.splitlines() if line.strip() and not OWN_LINE.match(line)]
    assert foreign == [], "lines on the console that are not faultline's:\n" + "\n".join(foreign[:20])
    assert not [n for n in NOISE if n in console], console[-3000:]
    # Spark's JVM still said what it says; its lines went to the run's file, not the terminal.
    assert " INFO spark.jvm " in harness_log


def final_per_partition(reads: pd.DataFrame) -> dict[int, dict[int, set[str]]]:
    final = reads[reads["phase"] == "final"]
    out: dict[int, dict[int, set[str]]] = {}
    for p, o, v in zip(final["partition"], final["offset"], final["value"], strict=True):
        out.setdefault(int(p), {}).setdefault(int(o), set()).add(v)
    return out


def replicas_agree_with_each_other_and_the_final_log(run_dir: Path, final: dict[int, dict[int, set[str]]]) -> None:
    report = json.loads((run_dir / "replicas.json").read_text())
    assert report["agree"] is True and report["final_matches"] is True, report
    assert [p["partition"] for p in report["partitions"]] == sorted(final)
    for part in report["partitions"]:
        assert sorted(part["replicas"]) == ["az1-node", "az2-node", "az3-node"]
        for rep in part["replicas"].values():
            assert rep["records"] == len(final[part["partition"]]) and rep["invalid_batches"] == 0
    for node in ("az1-node", "az2-node", "az3-node"):
        for partition in final:
            assert (run_dir / "nodes" / node / "replica-dump" / f"faultline-{partition}.txt.gz").stat().st_size > 0
    assert "Replicas on disk" in (run_dir / "report.html").read_text()


def a_damaged_replica_is_found(run_dir: Path, copy: Path, final: dict[int, dict[int, set[str]]]) -> None:
    """One byte of one value changed in az2's copy of partition 0: Kafka's own dump shows it, the compare flags it."""
    shutil.copytree(run_dir / "nodes", copy / "nodes", ignore=shutil.ignore_patterns("*index", "logs", "zookeeper-data"))
    segment = sorted((copy / "nodes" / "az2-node" / "kafka-data").glob("faultline-0/*.log"))[-1]
    data = bytearray(segment.read_bytes())
    at = data.rindex(b"producer-") + len(b"producer-")  # the last record's value: producer-azN-...
    data[at:at + 2] = b"XY"
    segment.write_bytes(bytes(data))
    report = dump_replicas(RunFolder(copy), "faultline", DEFAULT_VERSION, final)
    part0 = report["partitions"][0]
    assert report["agree"] is False and part0["differing_offsets"] == 1, part0
    (example,) = part0["examples"]
    assert example["values"]["az2-node"].startswith("producer-XY")
    assert example["values"]["az1-node"] == example["values"]["az3-node"] != example["values"]["az2-node"]
    assert part0["replicas"]["az2-node"]["invalid_batches"] == 1, "the changed byte breaks the batch's CRC"
    assert report["final_matches"] is True, "the drain read the value the other two replicas hold"


def test_a_killed_harness_is_recovered_with_nothing_acknowledged_lost(tmp_path: Path) -> None:
    spec = yaml.safe_load((REPO / "scenarios" / "smoke.yaml").read_text())
    spec.update(name="killed", duration_s=60)
    spec_path = tmp_path / "killed.yaml"
    spec_path.write_text(yaml.safe_dump(spec))
    harness = subprocess.Popen(
        [sys.executable, "-m", "harness", "run", str(spec_path), "--results", str(tmp_path)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    journal = None
    while time.monotonic() < deadline:
        found = list((tmp_path / "killed").glob("*/journal/producer-az1-0.jsonl"))
        if found and found[0].stat().st_size > 20_000:
            journal = found[0]
            break
        time.sleep(0.5)
    assert journal is not None, "the run never got its producers going"
    harness.send_signal(signal.SIGKILL)
    harness.wait(10)
    run_dir = journal.parent.parent
    prefix = json.loads((run_dir / "state.json").read_text())["prefix"]
    assert remaining(prefix), "the killed harness should have left its cluster running"
    relative = os.path.relpath(run_dir, REPO)  # as a user types it, from the repository's root
    assert not Path(relative).is_absolute()
    proc = faultline("recover", relative, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["valid"] is True and verdict["counts"]["lost"] == 0
    assert verdict["stats"]["ok"] > 1000 and verdict["stats"]["final_reads"] >= verdict["stats"]["ok"]
    assert remaining(prefix) == []
    node = run_dir / "nodes" / "az1-node"
    assert not (node / "kafka-data").exists() and list((node / "replica-dump").glob("*.txt.gz")), \
        "the data folders go once the replicas are dumped"


BROKEN = [
    ({"cluster": {"nodes": 2}}, "cluster.nodes: must be >= 3"),
    (
        {"workloads": {"producers": [{"settings": {"acks": 1, "enable.idempotence": True}}]}},
        "workloads.producers[0].settings: librdkafka refuses these together: `acks` must be set to `all`",
    ),
    ({"workloads": {"producers": [{"azs": ["az9"]}]}}, "workloads.producers[0].azs[0]: unknown AZ 'az9'"),
    ({"cluster": {"min_insync_replicas": 4}}, "cluster.min_insync_replicas: 4 is more than the replication factor 3"),
    ({"cluster": {"partitions": "lots"}}, "cluster.partitions: must be an integer in 1..64, got 'lots'"),
    ({"nemesis": [{"at": 5, "fault": "meteor-strike"}]}, "nemesis[0].fault"),
    ({"duration": 5}, "duration: unknown key"),
]


@pytest.mark.parametrize("change, says", BROKEN)
def test_broken_specs_are_refused_before_anything_starts(tmp_path: Path, change: dict, says: str) -> None:
    spec = yaml.safe_load((REPO / "scenarios" / "smoke.yaml").read_text())
    for key, value in change.items():
        spec[key] = {**spec[key], **value} if isinstance(value, dict) and key in spec else value
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump(spec))
    before = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    proc = faultline("run", str(path), "--results", str(tmp_path / "results"))
    assert proc.returncode == 3, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and "broken.yaml" in lines[0], proc.stderr
    assert not (tmp_path / "results").exists()
    assert subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout == before


# -- one cheap run of two configurations, shared by the tests of statuses, `latest` and results others can open --
INVOKER = 65533  # the uid and gid `sudo` would name: nobody's neighbour, so reading as nobody tests the modes
TWO = "two-configurations"


@pytest.fixture(scope="module")
def two_configurations() -> Iterator[tuple[Path, subprocess.CompletedProcess[str]]]:
    """`run` of a two-configuration spec as under `sudo`, into a folder anyone can reach, named relative to the
    repository's root; yields the results folder and the run's process."""
    results = Path(tempfile.mkdtemp(prefix="faultline-open-"))
    os.chmod(results, 0o755)  # pytest's own tmp folders are 0700: nobody could reach the run at all
    spec = yaml.safe_load((REPO / "scenarios" / "smoke.yaml").read_text())
    producers = spec["workloads"]["producers"]
    spec.update(name=TWO, duration_s=6, checker="pandas", expect={"valid": True}, configurations={
        "idempotent": {},
        "plain": {"overrides": {"workloads": {"producers": [
            {**producers[0], "settings": {"acks": "all", "enable.idempotence": False}}]}}}})
    spec["workloads"]["producers"] = [{**producers[0], "rate": 50}]
    (results / "two.yaml").write_text(yaml.safe_dump(spec))
    proc = faultline("run", os.path.relpath(results / "two.yaml", REPO), "--results", os.path.relpath(results, REPO),
                     env=as_sudo(), timeout=600)
    try:
        yield results, proc
    finally:
        shutil.rmtree(results)


def as_sudo() -> dict[str, str]:
    return {"SUDO_UID": str(INVOKER), "SUDO_GID": str(INVOKER)}


def test_every_configuration_matching_exits_0_with_one_junit_case_each(
        two_configurations: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    results, proc = two_configurations
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert [line.split(" | ")[:2] for line in proc.stdout.splitlines() if line.startswith(("PASS", "FAIL", "ERROR"))] == [
        ["PASS (expected) · VALID", f"{TWO} [idempotent]"], ["PASS (expected) · VALID", f"{TWO} [plain]"]]
    suite = ET.parse(results / TWO / "latest" / "junit.xml").getroot().find("testsuite")
    assert suite is not None and (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("2", "0", "0")


def test_show_and_report_work_on_latest_and_the_scenario_folder(
        two_configurations: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    results, _ = two_configurations
    latest = os.path.relpath(results / TWO / "latest", REPO)
    shown = faultline("show", latest, env=as_sudo())
    assert shown.returncode == 0, shown.stderr
    assert f"{TWO} [idempotent]" in shown.stdout and f"{TWO} [plain]" in shown.stdout, shown.stdout
    assert shown.stdout.count(": PASS (expected) · VALID") == 2, shown.stdout
    before = (results / TWO / "latest" / "junit.xml").read_text()
    reported = faultline("report", os.path.relpath(results / TWO, REPO), env=as_sudo(), timeout=300)
    assert reported.returncode == 0, reported.stderr
    for conf in ("idempotent", "plain"):
        assert f"/{conf}/report.html" in reported.stdout, reported.stdout
    assert (results / TWO / "latest" / "junit.xml").read_text().count("<testcase") == before.count("<testcase") == 2


def test_a_finished_run_folder_is_readable_by_anyone_and_owned_by_the_invoking_user(
        two_configurations: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    results, _ = two_configurations
    scenario = results / TWO
    paths = [scenario, *scenario.rglob("*")]
    assert len(paths) > 100
    for path in paths:
        st = path.lstat()
        assert (st.st_uid, st.st_gid) == (INVOKER, INVOKER), path
        if not path.is_symlink():
            assert stat.S_IMODE(st.st_mode) in ((0o755,) if path.is_dir() else (0o644, 0o755)), (path, oct(st.st_mode))
    # nobody (neither owner nor in the group) lists every folder and reads every byte of every file
    read = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--",
                           "sh", "-c", 'find "$1" -type f -exec cat {} + | wc -c', "read", str(scenario)],
                          capture_output=True, text=True, timeout=120)
    assert read.returncode == 0 and read.stderr == "", read.stderr[-2000:]
    assert int(read.stdout) == sum(p.lstat().st_size for p in paths if p.is_file() and not p.is_symlink())


def test_a_run_folders_apparent_size_is_its_real_size(
        two_configurations: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    results, _ = two_configurations
    run = (results / TWO / "latest").resolve()

    def du(*flags: str) -> int:
        return int(subprocess.run(["du", "-s", "-B1", *flags, str(run)], capture_output=True, text=True,
                                  check=True).stdout.split()[0])

    apparent, real = du("--apparent-size"), du()
    assert apparent <= real * 1.25, f"apparent {apparent} bytes, on disk {real}: a preallocated file is left"
    for conf in ("idempotent", "plain"):
        for node in ("az1-node", "az2-node", "az3-node"):
            folder = run / conf / "nodes" / node
            assert not (folder / "kafka-data").exists() and not (folder / "zookeeper-data").exists()
            assert list((folder / "replica-dump").glob("faultline-*.txt.gz")), "the replica dumps stay"
            assert (folder / "logs" / "broker" / "server.log").is_file() and (folder / "config").is_dir()
