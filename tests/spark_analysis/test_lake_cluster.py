"""The lake from real runs: a fault-free run and a trimmed isolate-az-leader acks=1, ingested, the notebook
executed on the lake, and the checker on a standalone Spark master against local[*]."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from checkers.anomalies import ANOMALIES
from spark_analysis import lake_tables as s
from spark_analysis.cli import verify_with_spark
from spark_analysis.ingest import ingest
from spark_analysis.notebook import run_notebook, summary_of
from spark_analysis.standalone import StandaloneCluster
from testbed.errors import HarnessError
from testbed.runfolder import RunFolder
from tests.conftest import REPO, faultline

pytestmark = [pytest.mark.cluster, pytest.mark.spark]


def trimmed_specs(folder: Path) -> dict[str, Path]:
    """smoke shortened to 10 s; isolate-az-leader's acks1 with a 12 s isolation (ZooKeeper's 6 s session
    expires inside it, so a second leader is elected while broker-0 still acknowledges az1's writes)."""
    smoke = yaml.safe_load((REPO / "scenarios" / "smoke.yaml").read_text())
    smoke.update(duration_s=10)
    isolate = yaml.safe_load((REPO / "scenarios" / "isolate-az-leader.yaml").read_text())
    isolate.update(duration_s=22)
    isolate["nemesis"] = [{"at": 5, "fault": "isolate-az", "target": "leader", "name": "isolate-leader"},
                          {"at": 17, "stop": "isolate-leader"}]
    isolate["configurations"] = {"acks1": isolate["configurations"]["acks1"]}
    paths = {}
    for name, spec in (("smoke", smoke), ("isolate-az-leader", isolate)):
        paths[name] = folder / f"{name}.yaml"
        paths[name].write_text(yaml.safe_dump(spec, sort_keys=False))
    return paths


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("lake-results")
    for name, spec in trimmed_specs(root).items():
        # The pandas engine: the lake does not care which engine judged, and a JVM per run costs ~20 s here.
        proc = faultline("run", str(spec), "--results", str(root / "results"), "--engine", "pandas", timeout=600)
        assert proc.returncode in (0, 1), f"{name}: exit {proc.returncode}: {proc.stderr[-3000:]}"
    corrupt = root / "results" / "smoke" / "19990101-000000"
    corrupt.mkdir(parents=True)
    (corrupt / "run.json").write_text('{"schema_version": 1, "status": "fini')
    return root / "results"


def run_dirs(results: Path) -> dict[str, Path]:
    return {p.parent.relative_to(results).as_posix(): p.parent for p in results.rglob("verdict.json")}


@pytest.fixture(scope="module")
def lake(results: Path) -> tuple[Path, str]:
    lake, out = results.parent / "lake", io.StringIO()
    ingest(results, lake, out)
    return lake, out.getvalue()


def test_the_lake_holds_both_runs_with_their_verdicts_counts(results: Path, lake: tuple[Path, str]) -> None:
    root, printed = lake
    runs = {r["run_id"]: r for r in pq.read_table(root / "runs").to_pylist()}
    dirs = run_dirs(results)
    assert set(runs) == set(dirs) and len(runs) == 2
    for run_id, row in runs.items():
        verdict = json.loads(RunFolder(dirs[run_id]).verdict.read_text())
        assert {a: row[s.count_column(a)] for a in ANOMALIES} == verdict["counts"], run_id
        assert row["valid"] == str(verdict["valid"]).lower() and row["kafka_version"] == "2.7.2"
        assert row["runtime"] == "netns" and row["commit"]
    (isolate_id,) = [r for r in runs if r.startswith("isolate-az-leader/")]
    assert runs[isolate_id]["acks"] == "1" and runs[isolate_id]["configuration"] == "acks1"
    assert runs[isolate_id]["faults"] == "isolate-az" and runs[isolate_id]["outcome"] in ("PASS", "FAIL")
    # The corrupt folder: one line, and the ingest went on.
    assert printed.count("\n") == 1 and "19990101-000000" in printed and "run.json unreadable" in printed


def test_availability_rows_of_the_isolation_match_the_verdict(results: Path, lake: tuple[Path, str]) -> None:
    root, _ = lake
    rows = [r for r in pq.read_table(root / "availability").to_pylist() if r["run_id"].startswith("isolate")]
    assert {r["az"] for r in rows} == {"az1", "az2", "az3"} and {r["fault"] for r in rows} == {"isolate-az"}
    (isolated,) = [r for r in rows if r["targeted"]]
    assert isolated["az"] == "az1" and isolated["longest_gap_s"] > 0
    (run_dir,) = [d for i, d in run_dirs(results).items() if i.startswith("isolate")]
    verdict_rows = json.loads(RunFolder(run_dir).verdict.read_text())["availability"]
    assert [(r["az"], r["longest_gap_s"], r["first_ack_after_heal_s"]) for r in verdict_rows] == \
        [(r["az"], r["longest_gap_s"], r["first_ack_after_heal_s"]) for r in sorted(rows, key=lambda r: r["az"])]
    # The others waited for broker-1 to take over: longer than az1, which its isolated leader kept answering.
    others = [r["longest_gap_s"] for r in rows if not r["targeted"]]
    assert min(others) > isolated["longest_gap_s"]
    report = RunFolder(run_dir).report.read_text()  # the same figures, as a table in the run's report
    assert 'id="availability"' in report and "<b>az1</b> (targeted)" in report
    smoke_rows = [r for r in pq.read_table(root / "faults").to_pylist() if r["run_id"].startswith("smoke")]
    assert smoke_rows == []


def test_ingesting_again_adds_nothing(results: Path, lake: tuple[Path, str]) -> None:
    root, _ = lake
    before = {t: pq.read_table(root / t).num_rows for t in s.TABLES}
    again = ingest(results, root, io.StringIO())
    assert again.added == [] and again.already == 2 and len(again.skipped) == 1
    assert {t: pq.read_table(root / t).num_rows for t in s.TABLES} == before


def test_the_notebook_runs_headless_and_its_numbers_are_the_verdicts(results: Path, lake: tuple[Path, str]) -> None:
    root, _ = lake
    executed, html = run_notebook(root)
    notebook = json.loads(executed.read_text())
    errors = [o for c in notebook["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert errors == []
    images = sum("image/png" in o.get("data", {}) for c in notebook["cells"] for o in c.get("outputs", []))
    assert images >= 5, "a plot per section"
    assert html.stat().st_size > 10_000 and "<html" in html.read_text()[:2000].lower()
    summary = summary_of(executed)
    dirs = run_dirs(results)
    assert summary["runs"] == 2
    for run_id, counts in summary["counts"].items():
        verdict = json.loads(RunFolder(dirs[run_id]).verdict.read_text())
        assert counts == {k: verdict["counts"][k] for k in ("lost", "duplicate", "divergence")}, run_id
    (isolate_id,) = [r for r in dirs if r.startswith("isolate")]
    verdict = json.loads(RunFolder(dirs[isolate_id]).verdict.read_text())
    assert summary["loss_by_acks"]["1"] == verdict["counts"]["lost"]
    if verdict["counts"]["lost"] > 0:  # the drill-down picks the run that lost most
        assert summary["drill_run"] == isolate_id
        shown = {a["az"]: a["longest_gap_s"] for a in summary["drill_availability"]}
        assert shown == {r["az"]: r["longest_gap_s"] for r in verdict["availability"]}


def test_the_checker_on_a_standalone_master_gives_the_local_verdict(
        results: Path, lake: tuple[Path, str], spark_cluster: StandaloneCluster, tmp_path: Path) -> None:
    import checkers
    from checkers.spark_session import stop_session
    from checkers.verdict import dumps

    (run_dir,) = [d for i, d in run_dirs(results).items() if i.startswith("isolate")]
    history = tmp_path / "history"
    shutil.copytree(RunFolder(run_dir).history_dir, history)
    local = checkers.check(history, engine="spark", spark_master="local[*]")
    stop_session()
    remote = checkers.check(history, engine="spark", spark_master=spark_cluster.url)
    assert spark_cluster.alive_workers() == 1
    assert "reason" not in remote, remote.get("reason")
    assert dumps(remote) == dumps(local)
    # The ingest's --spark-master: the cluster's executors read the lake back.
    assert "reads the 2 runs" in verify_with_spark(lake[0], spark_cluster.url, 2)
    with pytest.raises(HarnessError, match="sees 2 runs, the lake holds 3"):
        verify_with_spark(lake[0], spark_cluster.url, 3)
