"""The scenario catalogue on the real cluster: the two stories CI runs every time.

The rest of the catalogue runs with `make test-scenarios`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import faultline

pytestmark = pytest.mark.cluster


def run_scenario(name: str, results: Path) -> tuple[str, Path]:
    proc = faultline("run", f"scenarios/{name}.yaml", "--results", str(results), timeout=1500)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    lines = [line for line in proc.stdout.splitlines() if line.startswith(("PASS", "FAIL"))]
    assert lines and all(line.startswith("PASS") for line in lines), proc.stdout
    return proc.stdout, (results / name / "latest").resolve()


def test_isolate_az_leader(tmp_path: Path) -> None:
    out, top = run_scenario("isolate-az-leader", tmp_path)
    acks1 = json.loads((top / "acks1" / "verdict.json").read_text())
    assert acks1["counts"]["lost"] > 0 and acks1["counts"]["divergence"] > 0
    isolation = pd.read_parquet(top / "acks1" / "history" / "nemesis.parquet")
    start, stop = isolation["time_ns"].min(), isolation["time_ns"].max()
    for anomaly in ("lost", "divergence"):
        examples = acks1["examples"][anomaly]
        assert examples, anomaly
        named = 0
        for example in examples:
            # The isolated broker-0 claimed leadership, and the write was sent during the isolation,
            # or in the instant before the cut (acknowledged by broker-0 alone, not yet replicated),
            # or in the instant after the heal (broker-0 acknowledges until the controller's
            # LeaderAndIsr reaches it). The examples spread over all the losses, edges included.
            assert 0 in example["leaders"], example
            when = example.get("invoke_ns") or example["evidence"][0]["time_ns"]
            assert start - 1_000_000_000 <= when <= stop + 5_000_000_000, example
            named += any(f["fault"] == "isolate-az" for f in example["faults"])
        assert named >= len(examples) * 0.8, (
            f"{anomaly}: only {named} of {len(examples)} examples name the isolation"
        )
    lost_from_az1 = [e for e in acks1["examples"]["lost"] if e["process"].startswith("producer-az1")]
    assert lost_from_az1, "the writes lost were those the isolated leader acknowledged to az1"
    for conf in ("acksall", "acksall-idempotent"):
        verdict = json.loads((top / conf / "verdict.json").read_text())
        assert verdict["counts"]["lost"] == 0 and verdict["counts"]["divergence"] == 0, conf
        assert verdict["stats"]["info"] > 0, "az1's acks=all writes should have timed out"
    junit = (top / "junit.xml").read_text()
    assert junit.count("<testcase") == 3


def test_unclean_election(tmp_path: Path) -> None:
    _, top = run_scenario("unclean-election", tmp_path)
    unclean = json.loads((top / "unclean" / "verdict.json").read_text())
    assert unclean["counts"]["lost"] > 0 and "lost" in unclean["errors"]
    clean = json.loads((top / "clean" / "verdict.json").read_text())
    assert clean["counts"]["lost"] == 0
    refused = json.loads((top / "unclean-min-insync-2" / "verdict.json").read_text())
    assert refused["counts"]["lost"] == 0 and refused["stats"]["fail"] > 0, (
        "NOT_ENOUGH_REPLICAS is a definite fail"
    )
