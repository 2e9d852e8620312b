"""The lake's ingest on synthetic run folders: counts equal verdicts, idempotent, incremental, tolerant."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from checkers.anomalies import ANOMALIES
from checkers.api import check
from checkers.synth import SynthSpec, generate, write_history
from checkers.synth_groups import V3, grouped
from checkers.verdict import exit_status, write_verdict
from spark_analysis import lake as lk
from spark_analysis import lake_tables as s
from spark_analysis.cli import main
from spark_analysis.ingest import ingest
from spark_analysis.synthetic import write_run
from testbed.runfolder import RunFolder

OPS = 20_000


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("results")
    for i in range(3):
        write_run(root, i, OPS)
    return root


def copy_results(results: Path, tmp_path: Path) -> Path:
    target = tmp_path / "results"
    shutil.copytree(results, target)
    return target


def lake_table(lake: Path, table: str) -> list[dict[str, object]]:
    return list(pq.read_table(lake / table).to_pylist())


def test_every_run_lands_with_its_verdicts_counts(results: Path, tmp_path: Path) -> None:
    lake, out = tmp_path / "lake", io.StringIO()
    result = ingest(results, lake, out)
    assert len(result.added) == 3 and result.skipped == [] and out.getvalue() == ""
    runs = {r["run_id"]: r for r in lake_table(lake, "runs")}
    assert len(runs) == 3
    for run_id, row in runs.items():
        verdict = json.loads(RunFolder(results / run_id).verdict.read_text())
        manifest = json.loads(RunFolder(results / run_id).manifest.read_text())
        assert {a: row[s.count_column(a)] for a in ANOMALIES} == verdict["counts"]
        assert row["valid"] == str(verdict["valid"]).lower() and row["outcome"] == manifest["outcome"]
        assert row["acks"] == manifest["settings"]["producers"][0]["settings"]["acks"]
        assert row["campaign_id"] == manifest["campaign_id"] and row["scenario"] == manifest["scenario"]
        assert row["kafka_version"] == manifest["versions"]["kafka"]
        # run.json's metadata mode; a run.json from before KRaft has none and ran ZooKeeper (2.7.2's default).
        assert row["metadata"] == manifest["settings"]["broker"].get("metadata", "zookeeper")
        client = manifest["versions"].get("client_under_test", manifest["versions"])
        assert (row["client_confluent_kafka_version"], row["client_librdkafka_version"]) == (
            client["confluent_kafka"], client["librdkafka"])
        instances = [r for r in lake_table(lake, "anomalies") if r["run_id"] == run_id]
        assert {a: sum(r["anomaly"] == a for r in instances) for a in ANOMALIES} == verdict["counts"]
        errors = {a: sum(r["anomaly"] == a and r["classified"] == "error" for r in instances) for a in ANOMALIES}
        assert {a: n for a, n in errors.items() if n} == verdict["errors"]
        shown = {(a, e["value"]) for a, ex in verdict["examples"].items() for e in ex if e.get("value")}
        assert shown <= {(r["anomaly"], r["value"]) for r in instances}
        assert all(r["time_ns"] is not None for r in instances), "every instance has a time"
        lost = [r for r in instances if r["anomaly"] == "lost"]
        assert all(r["offset"] is not None and r["partition"] is not None for r in lost)
        throughput = [r for r in lake_table(lake, "throughput") if r["run_id"] == run_id]
        assert sum(r["ok"] for r in throughput) == verdict["stats"]["ok"]
        assert sum(r["fail"] + r["info"] for r in throughput) == verdict["stats"]["fail"] + verdict["stats"]["info"]
    assert {r["metadata"] for r in runs.values()} == {"zookeeper", "kraft"}
    assert {r["client_confluent_kafka_version"] for r in runs.values()} == {"2.16.1", "2.10.1"}
    faults = lake_table(lake, "faults")
    assert len(faults) == 3 * 4 and {f["fault"] for f in faults} == {"isolate-az"}
    availability = lake_table(lake, "availability")
    assert len(availability) == 3 * 4 * 3 and all(r["longest_gap_s"] > 0 for r in availability)
    assert lake_table(lake, "leadership") and json.loads((lake / s.META_FILE).read_text())["schema_version"] == s.SCHEMA_VERSION == 7
    # Hive partitions by day alone (a folder each); scenario is a column of the files, day comes back as one.
    assert {p.name.split("=")[0] for p in (lake / "runs").iterdir()} == {"day"}
    assert {r["scenario"] for r in runs.values()} == {"synthetic-isolate", "synthetic-split"}


def test_a_second_ingest_adds_nothing_and_a_new_run_only_itself(results: Path, tmp_path: Path) -> None:
    root, lake = copy_results(results, tmp_path), tmp_path / "lake"
    ingest(root, lake, io.StringIO())
    before = {t: pq.read_table(lake / t).num_rows for t in s.TABLES}
    again = ingest(root, lake, io.StringIO())
    assert again.added == [] and again.already == 3
    assert {t: pq.read_table(lake / t).num_rows for t in s.TABLES} == before
    write_run(root, 3, OPS)
    third = ingest(root, lake, io.StringIO())
    assert len(third.added) == 1 and third.already == 3
    assert pq.read_table(lake / "runs").num_rows == 4


def test_broken_and_half_written_runs_are_one_line_each(results: Path, tmp_path: Path) -> None:
    root, lake, out = copy_results(results, tmp_path), tmp_path / "lake", io.StringIO()
    corrupt = root / "synthetic-isolate" / "20991231-000000"
    corrupt.mkdir(parents=True)
    (corrupt / "run.json").write_text('{"status": "finis')
    running = root / "synthetic-split" / "20991231-000000" / "acks1"
    shutil.copytree(root / next(iter(lk.run_folders(results, lake))).relative_to(results), running)
    manifest = json.loads((running / "run.json").read_text())
    (running / "run.json").write_text(json.dumps({**manifest, "status": "running"}))
    no_history = root / "synthetic-split" / "20991231-000001"
    shutil.copytree(running, no_history)
    (no_history / "run.json").write_text(json.dumps(manifest))
    shutil.rmtree(no_history / "history")
    result = ingest(root, lake, out)
    lines = out.getvalue().splitlines()
    assert len(result.added) == 3 and len(result.skipped) == 3 and len(lines) == 3
    assert any(str(corrupt) in line and "run.json unreadable" in line for line in lines)
    assert any(str(running) in line and "half-written" in line for line in lines)
    assert any(str(no_history) in line and "history unreadable" in line for line in lines)


def test_an_unfinished_ingest_is_undone_and_other_tables_are_left_alone(results: Path, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    ingest(results, lake, io.StringIO())
    campaigns = lake / "campaigns" / "part-0.parquet"
    campaigns.parent.mkdir()
    campaigns.write_bytes(b"not ours")
    orphan = lake / "faults" / "day=2026-01-01" / "part-20260101T000000-deadbeef-0.parquet"
    orphan.parent.mkdir(parents=True)
    shutil.copy(next((lake / "faults").rglob("part-*.parquet")), orphan)
    out = io.StringIO()
    assert ingest(results, lake, out).added == []
    assert not orphan.exists() and "removed" in out.getvalue() and campaigns.read_bytes() == b"not ours"


def test_the_command_line(results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ingest", str(results), "--lake", str(tmp_path / "lake")]) == 0
    assert "3 new run(s)" in capsys.readouterr().out
    assert main(["ingest", str(tmp_path / "nowhere"), "--lake", str(tmp_path / "lake")]) == 3
    assert "not a results folder" in capsys.readouterr().err
    assert main(["ingest"]) == 3
    (tmp_path / "lake" / s.META_FILE).write_text(json.dumps({"schema_version": 99}))
    assert main(["ingest", str(results), "--lake", str(tmp_path / "lake")]) == 3
    assert "schema_version 99" in capsys.readouterr().err


def fault_free_run(results: Path) -> Path:
    """A finished run with no fault and no anomaly: no nemesis rows, nothing planted, every write acknowledged."""
    run_dir = write_run(results, 0, 2_000)
    folder = RunFolder(run_dir)
    tables = generate(SynthSpec(operations=2_000, plant=dict.fromkeys(ANOMALIES, 0), fail_rate=0.0, info_rate=0.0))
    write_history({**tables, "nemesis": tables["nemesis"].slice(0, 0)}, folder.history_dir)
    verdict = check(folder.history_dir, engine="pandas")
    write_verdict(verdict, run_dir)
    manifest = json.loads(folder.manifest.read_text())
    folder.manifest.write_text(json.dumps({**manifest, "faults": [], "valid": verdict["valid"],
                                           "exit_status": exit_status(verdict)}))
    assert verdict["counts"] == dict.fromkeys(ANOMALIES, 0)
    return run_dir


def columns(schema: pa.Schema) -> dict[str, pa.DataType]:
    """A table's columns and types but the partition columns (hive folders: pyarrow reads them as dictionaries)."""
    return {f.name: f.type for f in schema if f.name not in s.PARTITION_COLUMNS}


NOTHING_HAPPENED = ("anomalies", "availability", "faults", "transactions", "commits")


def test_a_lake_of_runs_without_faults_holds_every_table_with_its_schema(tmp_path: Path) -> None:
    results, lake = tmp_path / "results", tmp_path / "lake"
    fault_free_run(results)
    result = ingest(results, lake, io.StringIO())
    assert len(result.added) == 1 and {t: result.rows[t] for t in NOTHING_HAPPENED} == dict.fromkeys(NOTHING_HAPPENED, 0)
    for name, schema in s.TABLES.items():
        read = pq.read_table(lake / name)
        assert columns(read.schema) == columns(schema) and set(s.PARTITION_COLUMNS) <= set(read.schema.names), name
        assert read.num_rows == (0 if name in NOTHING_HAPPENED else result.rows[name]) and (name == "runs") <= (
            read.num_rows == 1), name
    # A lake an older ingest left without those tables gets them from the next ingest, which adds no run.
    for name in NOTHING_HAPPENED:
        shutil.rmtree(lake / name)
    assert ingest(results, lake, io.StringIO()).added == []
    assert all(pq.read_table(lake / name).num_rows == 0 for name in NOTHING_HAPPENED)
    # A run with faults later: its rows sit beside the empty files, which no ingest removes.
    write_run(results, 1, OPS)
    out = io.StringIO()
    assert len(ingest(results, lake, out).added) == 1 and "removed" not in out.getvalue()
    assert pq.read_table(lake / "faults").num_rows == 4 and pq.read_table(lake / "runs").num_rows == 2
    assert len(list(lake.rglob(lk.EMPTY_PART))) == len(NOTHING_HAPPENED)


def grouped_run(results: Path) -> tuple[Path, dict[str, Any], pa.Table]:
    """A finished run whose group consumers commit (contract v3, checkers.synth_groups), with its verdict."""
    run_dir = write_run(results, 1, 4_000)
    folder = RunFolder(run_dir)
    tables = grouped(generate(SynthSpec(operations=4_000, seed=1)), seed=1)
    write_history(tables, folder.history_dir)
    verdict = check(folder.history_dir, engine="pandas")
    write_verdict(verdict, run_dir)
    return run_dir, verdict, tables["commits"]


def test_a_runs_group_commits_land_with_their_times_faults_and_stats(tmp_path: Path) -> None:
    results, lake = tmp_path / "results", tmp_path / "lake"
    run_dir, verdict, commits = grouped_run(results)
    result = ingest(results, lake, io.StringIO())
    assert len(result.added) == 1 and result.rows["commits"] == commits.num_rows > 0
    run = lake_table(lake, "runs")[0]
    assert (run["stat_commits"], run["stat_commits_ok"]) == (verdict["stats"]["commits"], verdict["stats"]["commits_ok"])
    assert run["stat_commits"] == sum(k != "final" for k in commits.column("kind").to_pylist())
    assert run["consumer_commit"] == "auto"  # run.json's consumer group's `commit`
    assert {a: run[s.count_column(a)] for a in V3} == {a: verdict["counts"][a] for a in V3}
    assert any(verdict["counts"][a] for a in V3), "the planted anomalies were found"
    rows = lake_table(lake, "commits")
    kept = [{k: r[k] for k in commits.column_names} for r in rows]
    assert kept == commits.to_pylist(), "the contract columns as they are, in the history's order"
    t0 = run["t0_ns"]
    faults = lake_table(lake, "faults")
    for r in rows:
        assert r["invoke_s"] == round((r["invoke_ns"] - t0) / 1e9, 3)
        during = [f for f in faults if f["start_ns"] <= (r["complete_ns"] or r["invoke_ns"])
                  and (f["stop_ns"] is None or f["stop_ns"] >= r["invoke_ns"])]
        assert (r["faults"] is None) == (not during)  # which faults: test_lake_commits


def test_an_ingest_of_no_runs_leaves_a_lake_of_no_tables(tmp_path: Path) -> None:
    (tmp_path / "results").mkdir()
    assert ingest(tmp_path / "results", tmp_path / "lake", io.StringIO()).added == []
    assert [p.name for p in (tmp_path / "lake").iterdir()] == [s.META_FILE]


@pytest.mark.spark
def test_spark_reads_every_table_of_a_lake_without_faults(tmp_path: Path) -> None:
    from pyspark.sql.pandas.types import from_arrow_schema

    from checkers.spark_session import spark_session
    from spark_analysis import queries as q

    results, lake = tmp_path / "results", tmp_path / "lake"
    fault_free_run(results)
    rows = ingest(results, lake, io.StringIO()).rows
    spark = spark_session()
    for name, schema in s.TABLES.items():
        frame = q.table(spark, lake, name)
        expected = from_arrow_schema(schema, prefer_timestamp_ntz=False)
        assert sorted(frame.schema.fields, key=lambda f: f.name) == sorted(expected.fields, key=lambda f: f.name), name
        assert frame.count() == rows[name], name


def transactional_lake(tmp_path: Path) -> tuple[Path, dict[str, Any], dict[str, pa.Table]]:
    """A lake of one synthetic transactional run: the lake, its verdict and its history's tables."""
    from checkers.synth_txn import transactional

    results, lake = tmp_path / "results", tmp_path / "lake"
    run_dir = write_run(results, 0, 2_000)
    folder = RunFolder(run_dir)
    tables = transactional(generate(SynthSpec(operations=2_000, seed=3)), seed=3)
    write_history(tables, folder.history_dir)
    verdict = check(folder.history_dir, engine="pandas")
    write_verdict(verdict, run_dir)
    assert len(ingest(results, lake, io.StringIO()).added) == 1
    return lake, verdict, tables


def test_a_transactional_run_lands_one_row_per_transaction(tmp_path: Path) -> None:
    lake, verdict, tables = transactional_lake(tmp_path)
    rows = lake_table(lake, "transactions")
    txns = tables["transactions"].to_pandas()
    assert len(rows) == verdict["stats"]["transactions"] == len(txns)
    assert {st: sum(r["status"] == st for r in rows) for st in ("ok", "fail", "info")} == {
        "ok": verdict["stats"]["committed"], "fail": verdict["stats"]["aborted"], "info": verdict["stats"]["unknown"]}
    assert sum(r["sends"] for r in rows) == tables["writes"].column("txn").drop_null().length()
    assert all(r["begin_s"] is not None and (r["complete_ns"] is None) == (r["duration_ms"] is None) for r in rows)
    assert any(r["faults"] for r in rows)  # the synthetic history's isolate-az windows


@pytest.mark.spark
def test_the_notebooks_transactions_query(tmp_path: Path) -> None:
    from checkers.spark_session import spark_session
    from spark_analysis import queries as q

    lake, verdict, _ = transactional_lake(tmp_path)
    spark = spark_session()
    summary = q.transactions_by_scenario(q.table(spark, lake, "transactions"), q.table(spark, lake, "runs"))
    assert len(summary) == 1
    row = summary.iloc[0]
    assert (row["runs"], row["transactions"]) == (1, verdict["stats"]["transactions"])
    assert (row["committed"], row["aborted"], row["unknown"]) == (
        verdict["stats"]["committed"], verdict["stats"]["aborted"], verdict["stats"]["unknown"])
    assert 0 < row["during_a_fault"] <= row["transactions"] and 0 < row["duration_ms_p50"] <= row["duration_ms_p99"]


def test_a_run_json_without_a_known_version_has_no_metadata() -> None:
    from spark_analysis.extract import metadata_of

    assert metadata_of({"broker": {"metadata": "kraft"}}, "3.9.1") == "kraft"
    assert metadata_of({"broker": {}}, "3.9.1") == "zookeeper" and metadata_of({}, "4.1.1") == "kraft"
    assert metadata_of({}, None) is None and metadata_of({}, "9.9.9") is None


@pytest.mark.spark
def test_the_notebooks_version_by_scenario_view(results: Path, tmp_path: Path) -> None:
    from checkers.spark_session import spark_session
    from spark_analysis import queries as q

    lake = tmp_path / "lake"
    ingest(results, lake, io.StringIO())
    runs = lake_table(lake, "runs")
    by_version = q.anomalies_by_version(q.table(spark_session(), lake, "runs"))
    assert set(by_version["version"]) == {"2.7.2 zookeeper", "3.9.1 kraft client 2.10.1", "4.1.1 kraft"}
    assert by_version["runs"].sum() == len(runs)
    for r in runs:
        version = {"2.7.2": "2.7.2 zookeeper", "3.9.1": "3.9.1 kraft client 2.10.1", "4.1.1": "4.1.1 kraft"}[
            r["kafka_version"]]
        cell = by_version[(by_version["scenario"] == r["scenario"]) & (by_version["version"] == version)]
        assert cell["lost"].sum() >= r["lost"] and cell["duplicate"].sum() >= r["duplicate"]
    assert by_version["lost"].sum() == sum(r["lost"] for r in runs)
    pivot = q.version_pivot(by_version, "lost")
    assert pivot.shape == (len(by_version[["scenario", "configuration"]].drop_duplicates()), 3)
    assert pivot.sum().sum() == sum(r["lost"] for r in runs)


@pytest.mark.spark
def test_the_notebooks_commit_modes_query(tmp_path: Path) -> None:
    from checkers.spark_session import spark_session
    from spark_analysis import queries as q

    results, lake = tmp_path / "results", tmp_path / "lake"
    _, verdict, commits = grouped_run(results)
    write_run(results, 0, 2_000)  # a run of the same campaign whose consumers never committed
    ingest(results, lake, io.StringIO())
    spark = spark_session()
    modes = q.commit_modes(q.table(spark, lake, "runs"), q.table(spark, lake, "commits"))
    grouped_row = modes[modes["scenario"] == "synthetic-split"].iloc[0]
    assert (grouped_row["consumer_commit"], grouped_row["runs"]) == ("auto", 1)
    assert {a: grouped_row[s.count_column(a)] for a in V3} == {a: verdict["counts"][a] for a in V3}
    assert {a: grouped_row[f"runs_with_{s.count_column(a)}"] for a in V3} == {
        a: int(verdict["counts"][a] > 0) for a in V3}
    statuses = [st for st, k in zip(commits.column("status").to_pylist(), commits.column("kind").to_pylist(),
                                    strict=True) if k != "final"]
    assert (grouped_row["commits"], grouped_row["acknowledged"]) == (len(statuses), statuses.count("ok"))
    assert (grouped_row["refused"], grouped_row["unknown"]) == (statuses.count("fail"), statuses.count("info"))
    other = modes[modes["scenario"] == "synthetic-isolate"].iloc[0]  # no commits table: zeros, not missing
    assert (other["runs"], other["commits"], other["refused"]) == (1, 0, 0)


def test_the_walk_takes_runs_the_lake_holds_on_their_name(tmp_path: Path) -> None:
    results = tmp_path / "results"
    for run in ("a/20260101-000000/acks1", "a/20260101-000000/acksall", "b/20260102-000000"):
        (results / run).mkdir(parents=True)
        (results / run / "run.json").write_text("{}")
    (results / "a/20260101-000000/acks1/history/inner").mkdir(parents=True)
    (results / "a/20260101-000000/acks1/history/inner/run.json").write_text("{}")  # inside a run: never a run
    everything = {p.relative_to(results).as_posix() for p in lk.run_folders(results, tmp_path / "lake")}
    assert everything == {"a/20260101-000000/acks1", "a/20260101-000000/acksall", "b/20260102-000000"}
    (results / "a/20260101-000000/acks1/run.json").unlink()  # a held run is not looked into again
    held = {"a/20260101-000000/acks1"}
    assert {p.relative_to(results).as_posix() for p in lk.run_folders(results, tmp_path / "lake", held)} == everything
