"""report.html of the hand-built run: what it shows, that it is whole, that it never changes."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from html import unescape
from pathlib import Path
from typing import Any

import pytest

from report import ReportError, render_report, summary
from tests.report.runfolder import AZS, verdict_of

MAX_PAGE_BYTES = 1_500_000


def plot_json(html: str, div_id: str) -> dict[str, Any]:
    match = re.search(
        rf'<script type="application/json" data-plot="{div_id}"[^>]*>(.*?)</script>', html, re.S
    )
    assert match, f"no data for {div_id}"
    loaded: dict[str, Any] = json.loads(match.group(1))
    return loaded


def row_html(html: str, anchor: str) -> str:
    start = html.index(f'<tr id="{anchor}"')
    return unescape(html[start : html.index("</tr>", start)])


def section_html(html: str, section: str) -> str:
    start = html.index(f'<section id="{section}"')
    return unescape(html[start : html.index("</section>", start)])


def test_verdict_and_configuration_come_first(report_html: str) -> None:
    assert 'id="verdict-badge">INVALID<' in report_html
    verdict = section_html(report_html, "verdict")
    assert "INVALID" in verdict
    assert re.search(r"<b>3</b> lost", verdict) and re.search(r"<b>3</b> divergence", verdict)
    assert "2 recovered" in verdict and "1,200" in verdict
    assert (
        report_html.index('id="verdict"')
        < report_html.index('id="configuration"')
        < report_html.index('id="timeline"')
    )
    config = section_html(report_html, "configuration").replace("<wbr>", "")
    # Spec keys break only after a dot, never mid-word.
    assert "<code>cluster.<wbr>zookeeper_session_timeout_ms</code>" in report_html
    for text in (
        "isolate-az-leader",
        "cluster.zookeeper_session_timeout_ms",
        "nemesis[2]",
        "at: 14 · fault: kill · name: kill-controller",
        "broker-0 loses ZooKeeper",
        "producer-az1-0",
        "consumer-az3-0",
        "drain-az2",
        "2147483647",
        "read_uncommitted",
    ):
        assert text in config, text
    header = report_html[report_html.index("<header") : report_html.index("</header>")]
    assert "acks1" in header and "Isolate az1 while broker-0 leads" in header
    assert 'id="expectation-badge">PASS (expected)<' in header
    # the expectation and the history's safety apart, in one line: a loss the scenario expected still reads INVALID
    assert ('id="verdict-line">PASS (expected) · INVALID: lost 3 acknowledged writes, 3 offsets holding two values<'
            in header)
    assert "<title>PASS (expected) · INVALID: lost 3 acknowledged writes" in report_html
    assert "lost &gt; 0, divergence &gt; 0, two-leaders" in report_html
    assert "max.<wbr>in.<wbr>flight" in report_html


def test_page_is_self_contained(report_html: str) -> None:
    library = re.search(r"<script>\s*/\*\*\s*\* plotly\.js \(basic - minified\) v[0-9.]+.*?</script>", report_html, re.S)
    assert library, "plotly.js is not inline"
    page = report_html[: library.start()] + report_html[library.end() :]
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", page)
    assert not re.search(r'(href|src)="(https?:)?//', page)
    assert "@import" not in page and "url(" not in page


def test_page_is_small_and_its_plotly_matches_the_python_package(report_html: str) -> None:
    from plotly.offline import get_plotlyjs_version

    from report.html import plotly_js

    assert len(report_html.encode()) <= MAX_PAGE_BYTES
    # The figures are made by the plotly package and drawn by the vendored bundle: the same plotly.js version.
    assert f"plotly.js (basic - minified) v{get_plotlyjs_version()}" in plotly_js()[:200]


def test_timeline_counts_writes_and_errors_per_az(report_html: str) -> None:
    fig = plot_json(report_html, "plot-timeline")
    lines = {
        (t["name"], t.get("yaxis", "y")): t
        for t in fig["data"]
        if t["type"] == "scatter" and t["mode"] == "lines"
    }
    assert {name for name, _ in lines} == set(AZS)
    acked_az2, acked_az1 = lines[("az2", "y")]["y"], lines[("az1", "y")]["y"]
    assert acked_az2[0] == 20 and acked_az2[7] == 20  # az2 is never cut off for long
    assert acked_az1[8] == 0  # az1 isolated from +5 s to +12 s
    errors_az1 = lines[("az1", "y2")]["y"]
    assert errors_az1[0] == 0 and errors_az1[8] == 20
    assert sum(lines[("az3", "y2")]["y"]) > 0  # timeouts before the election, failures during the kill


def test_timeline_shades_and_labels_every_fault(report_html: str) -> None:
    fig = plot_json(report_html, "plot-timeline")
    bands = [s for s in fig["layout"]["shapes"] if s["type"] == "rect"]
    assert sorted((b["x0"], b["x1"]) for b in bands) == [(5.0, 12.0), (14.0, 16.0)]
    labels = [a["text"] for a in fig["layout"]["annotations"]]
    assert any(label.startswith("isolate-az") for label in labels)
    assert "kill broker-2" in labels and "note: leader-of t/1" in labels


def test_timeline_marks_every_example_where_it_happened(report_html: str, built_run: Path) -> None:
    fig = plot_json(report_html, "plot-timeline")
    marks = {t["name"]: t for t in fig["data"] if t["mode"] == "markers"}
    examples = verdict_of(built_run)["examples"]
    assert set(marks) == set(examples)
    for name, rows in examples.items():
        assert len(marks[name]["x"]) == len(rows)
    assert all(5.0 <= x <= 5.3 for x in marks["lost"]["x"])  # acknowledged by the isolated leader
    assert all(6.0 <= x <= 6.2 for x in marks["divergence"]["x"])  # when the new leader reused the offsets


def test_leadership_shows_two_leaders_at_once(report_html: str) -> None:
    fig = plot_json(report_html, "plot-leadership")
    bars = [t for t in fig["data"] if t["type"] == "bar"]
    assert {t["name"] for t in bars} >= {"broker 0", "broker 1", "broker 2"}
    assert {"t/0<br>leader", "t/1<br>leader", "controller"} <= {
        fig["layout"][k]["title"]["text"] for k in fig["layout"] if k.startswith("yaxis")
    }
    splits = [s for s in fig["layout"]["shapes"] if s.get("yref", "").endswith("domain")]
    assert len(splits) == 1 and splits[0]["x0"] == pytest.approx(6.0, abs=0.01) and splits[0]["x1"] == 12.0
    leadership = section_html(report_html, "leadership")
    assert (
        "t/0 leader" in leadership
        and "broker 0: broker-0" in leadership
        and "broker 1: broker-1" in leadership
    )


def test_every_anomaly_example_has_a_row(report_html: str, built_run: Path) -> None:
    examples = verdict_of(built_run)["examples"]
    for name, rows in examples.items():
        assert f'id="anomaly-{name}"' in report_html
        for number, example in enumerate(rows, 1):
            row = row_html(report_html, f"{name}-{number}")
            assert example["value"] in row
            if "offset" in example:
                assert f"t/{example['partition']} @ {example['offset']}" in row
            for other in example.get("values", []):
                assert other in row
            assert "az1 cut off from every other AZ" in row, f"{name} #{number} happened during the isolation"


def test_examples_with_faults_and_leaders_from_the_checker(report_html: str) -> None:
    row = row_html(report_html, "lost-1")
    assert "+5.000 s → +5.004 s" in row
    assert "(+5.000 s → +12.000 s; during)" in row
    assert re.search(r'class="split">0, 1<', row)


def test_examples_without_times_are_placed_from_the_history(report_html: str) -> None:
    row = row_html(report_html, "recovered-1")
    assert "+5.050 s" in row  # the write's invoke time: it never completed
    assert "az1 cut off" in row and "during" in row and "from the nemesis table, within 5.0 s of it" in row


def test_regenerating_gives_the_same_bytes(built_run: Path, report_html: str, run_copy: Path) -> None:
    first = (built_run / "report.html").read_bytes()
    assert render_report(built_run).read_bytes() == first
    assert render_report(run_copy).read_bytes() == first  # the same run copied elsewhere
    (run_copy / "report.html").unlink()
    # Another process with another hash seed: no set or dict order may leak into the page.
    subprocess.run(
        [sys.executable, "-c", f"from report import render_report; render_report({str(run_copy)!r})"],
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "4242"},
        timeout=120,
    )
    assert (run_copy / "report.html").read_bytes() == first
    assert not re.search(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", report_html)


def test_run_without_history_reports_the_verdict(tmp_path: Path) -> None:
    run = tmp_path / "s" / "r1"
    run.mkdir(parents=True)
    (run / "verdict.json").write_text(
        json.dumps(
            {
                "valid": "unknown",
                "reason": "no final reads: the drain never completed",
                "counts": {},
                "errors": {},
                "examples": {},
            }
        )
    )
    html = render_report(run).read_text(encoding="utf-8")
    assert 'id="verdict-badge">UNKNOWN<' in html and "the drain never completed" in html
    assert 'class="plot"' not in html and "The history holds no timed events" in html


def test_run_without_verdict_and_with_a_torn_line(run_copy: Path) -> None:
    (run_copy / "verdict.json").unlink()
    with (run_copy / "history" / "observations.jsonl").open("a") as handle:
        handle.write('{"time_ns": 17800000')
    html = render_report(run_copy).read_text(encoding="utf-8")
    assert 'id="verdict-badge">UNKNOWN<' in html and "no verdict.json" in html
    assert "torn last line left out" in html
    assert 'id="plot-timeline"' in html and 'id="plot-leadership"' in html


def test_parquet_dataset_directories_and_parquet_over_jsonl(run_copy: Path) -> None:
    history = run_copy / "history"
    (history / "writes.parquet").rename(history / "part-0.parquet")
    (history / "writes.parquet").mkdir()
    (history / "part-0.parquet").rename(history / "writes.parquet" / "part-0.parquet")
    (history / "nemesis.jsonl").write_text("not json at all\nnor this\n")  # Parquet wins: never read
    html = render_report(run_copy).read_text(encoding="utf-8")
    assert "unreadable" not in html
    assert 'id="lost-3"' in html and "kill broker-2" in html


def test_a_missing_run_folder_is_a_report_error(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="not a run folder"):
        render_report(tmp_path / "nowhere")


def test_report_of_a_valid_run(run_copy: Path) -> None:
    verdict = verdict_of(run_copy)
    verdict.update(valid=True, errors={}, examples={})
    verdict["counts"] = dict.fromkeys(verdict["counts"], 0)
    (run_copy / "verdict.json").write_text(json.dumps(verdict))
    shutil.rmtree(run_copy / "nodes")
    html = render_report(run_copy).read_text(encoding="utf-8")
    assert 'id="verdict-badge">VALID<' in html and "No anomalies were found" in html
    assert 'href="nodes"' not in html


def test_observers_named_by_broker_id_in_parquet(run_copy: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    history = run_copy / "history"
    rows = [json.loads(line) for line in (history / "observations.jsonl").read_text().splitlines()]
    for row in rows:
        row["observer"] = int(row["observer"].removeprefix("broker-"))
        row["isr"] = json.loads(row["isr"])  # a list column, not JSON text
    pq.write_table(pa.Table.from_pylist(rows), history / "observations.parquet")
    html = render_report(run_copy).read_text(encoding="utf-8")
    fig = plot_json(html, "plot-leadership")
    assert {y for t in fig["data"] for y in t["y"]} == {"0", "1", "2"}
    assert "ISR [1, 2]" in json.dumps(fig["data"])
    assert "broker 0: 0" in section_html(html, "leadership")


def replicas_file(agree: bool) -> dict[str, Any]:
    nodes = {f"az{i}-node": {"records": 3, "first_offset": 0, "last_offset": 2, "leader_epochs": [0, 1],
                             "invalid_batches": 0, "control_records": 0} for i in (1, 2, 3)}
    part = {"topic": "t", "partition": 0, "replicas": nodes, "agree": agree, "same_end": True,
            "differing_offsets": 0 if agree else 1, "not_in_final": 0, "not_in_final_examples": [],
            "final_not_on_disk": 0, "final_not_on_disk_examples": [],
            "examples": [] if agree else [{"offset": 1, "values": {"az1-node": "v-1", "az2-node": "v-9",
                                                                   "az3-node": "v-1"}}]}
    return {"topic": "t", "agree": agree, "final_matches": True, "partitions": [part]}


def test_replicas_that_agree_are_said_to(run_copy: Path) -> None:
    (run_copy / "replicas.json").write_text(json.dumps(replicas_file(True)))
    section = section_html(render_report(run_copy).read_text(encoding="utf-8"), "replicas")
    assert "Every replica holds the same value at every offset, and the final log read exactly what they hold" in section
    assert section.count("<tr class=") == 3 and "0–2" in section and "0, 1" in section


def test_replicas_that_differ_name_the_offset_and_each_value(run_copy: Path) -> None:
    (run_copy / "replicas.json").write_text(json.dumps(replicas_file(False)))
    html = render_report(run_copy).read_text(encoding="utf-8")
    section = section_html(html, "replicas")
    assert "The replicas or the final log differ" in section
    assert "t-0 offset 1: az1-node: v-1, az2-node: v-9, az3-node: v-1" in section
    assert 'href="replicas.json"' in html
    shown = summary(run_copy)
    assert "replicas:   the replicas on disk or the final log differ:" in shown
    assert "t-0 offset 1: az1-node: v-1, az2-node: v-9, az3-node: v-1" in shown


def test_a_failed_dump_is_shown_and_no_file_means_no_section(run_copy: Path) -> None:
    assert 'id="replicas"' not in render_report(run_copy).read_text(encoding="utf-8")
    (run_copy / "replicas.json").write_text(json.dumps({"topic": "t", "error": "DumpLogSegments exited 1"}))
    section = section_html(render_report(run_copy).read_text(encoding="utf-8"), "replicas")
    assert "could not be dumped: DumpLogSegments exited 1" in section


def test_a_replicas_file_that_is_not_an_object_is_a_problem_not_a_crash(run_copy: Path) -> None:
    (run_copy / "replicas.json").write_text("[1, 2]")
    html = render_report(run_copy).read_text(encoding="utf-8")
    assert 'id="replicas"' not in html and "replicas.json: not a JSON object" in html


def test_what_a_broker_held_before_a_heal_and_lost_by_the_end_is_shown(run_copy: Path) -> None:
    data = replicas_file(True)
    held = {"records": 9, "first_offset": 0, "last_offset": 8, "leader_epochs": [0], "invalid_batches": 0,
            "control_records": 0}
    data["snapshots"] = [{"label": "01-isolate-leader", "partitions": [{"partition": 0, "nodes": {
        "az1-node": {**held, "gone": 4, "gone_examples": [{"offset": 5, "value": "p-az1-0-7"},
                                                          {"offset": 6, "value": "p-az1-0-8"}]},
        "az2-node": {**held, "records": 5, "last_offset": 4, "gone": 0, "gone_examples": []}}}]},
        {"label": "02-kill", "error": "DumpLogSegments exited 1: truncated", "partitions": []}]
    (run_copy / "replicas.json").write_text(json.dumps(data))
    section = section_html(render_report(run_copy).read_text(encoding="utf-8"), "replicas")
    assert "Before each heal" in section and "01-isolate-leader" in section
    assert "p-az1-0-7@5, p-az1-0-8@6" in section and section.count('<tr class="split">') == 1
    assert "02-kill" in section and "not dumped: DumpLogSegments exited 1: truncated" in section
    assert ("truncated:  az1-node held 4 records of partition 0 before undoing 01-isolate-leader that no "
            "replica holds at the end (e.g. p-az1-0-7@5, p-az1-0-8@6)") in summary(run_copy)
